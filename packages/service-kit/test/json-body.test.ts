import { describe, expect, it } from 'vitest';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { jsonBodyProblems, parseJsonBytes } from '../src/json-body.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('parseJsonBytes', () => {
  it('parses UTF-8 JSON, with or without a byte-order mark', () => {
    expect(parseJsonBytes(bytes('{"name":"Café ☕","n":[1,2]}'))).toEqual({
      name: 'Café ☕',
      n: [1, 2],
    });
    expect(parseJsonBytes(bytes('\uFEFF{"a":1}'))).toEqual({ a: 1 });
    expect(parseJsonBytes(bytes('null'))).toBeNull();
  });

  it.each([
    ['empty', '', jsonBodyProblems.empty],
    ['truncated', '{"a":', jsonBodyProblems.invalid],
    ['trailing text', '{"a":1} x', jsonBodyProblems.invalid],
    ['single quotes', "{'a':1}", jsonBodyProblems.invalid],
    ['only whitespace', '   ', jsonBodyProblems.invalid],
    ['a __proto__ key', '{"a":{"__proto__":{"admin":true}}}', jsonBodyProblems.forbiddenKey],
    ['an escaped __proto__ key', '{"\\u005f_proto__":{}}', jsonBodyProblems.forbiddenKey],
    [
      'constructor.prototype',
      '{"constructor":{"prototype":{"admin":true}}}',
      jsonBodyProblems.forbiddenKey,
    ],
  ])('refuses %s with REQUEST_INVALID', async (_case, text, detail) => {
    const error = await expectAppError(
      (async () => parseJsonBytes(bytes(text)))(),
      'REQUEST_INVALID',
    );
    expect(error.message).toBe(detail);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('parses nesting far deeper than any contract without exhausting the stack', () => {
    const depth = 500_000;
    const parsed = parseJsonBytes(bytes('['.repeat(depth) + ']'.repeat(depth)));
    expect(Array.isArray(parsed)).toBe(true);
  });

  it('reads invalid UTF-8 as replacement characters, not as an error', () => {
    const text = parseJsonBytes(new Uint8Array([0x22, 0xff, 0xfe, 0x22]));
    expect(text).toBe('\uFFFD\uFFFD');
  });
});
