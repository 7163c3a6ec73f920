import fc, { type Arbitrary } from 'fast-check';

/**
 * Hostile values and raw bodies: what a partner's buggy or malicious client sends beyond
 * the contract. Everything here is generated from a seed, so a failure replays.
 */

/** Strings that break naive code: lone surrogates, bidi overrides, NUL, combining storms. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  'x\ud83dy',
  '\u202eevil\u202c',
  '\u200b\u200c\u200d\ufeff',
  '\ufffe\uffff',
  '👩‍👩‍👧‍👦'.repeat(50),
  `e${'\u0301'.repeat(2_000)}`,
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '../../../../etc/passwd',
  '${jndi:ldap://127.0.0.1/a}',
  '{{7*7}}',
  '%00%ff%',
  '\\u0000',
  'null',
  'NaN',
  '-0',
  '9007199254740993',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  '\r\n\t\v\f',
  'ＡＢＣ１２３',
  'İıſK',
];

/** JSON number literals at the edges, written raw (JSON.stringify cannot write -0 or 1e400). */
export const EDGE_NUMBER_LITERALS: readonly string[] = [
  '-0',
  '0.0',
  '1e308',
  '1e309',
  '-1e309',
  '5e-324',
  '1e-400',
  '9007199254740993',
  '-9007199254740993',
  '2147483648',
  '-2147483649',
  '0.1',
  '1E2',
  '123456789012345678901234567890',
  '1'.repeat(500),
  `0.${'0'.repeat(400)}1`,
];

/** Not JSON at all where a value belongs. */
export const NOT_JSON_LITERALS: readonly string[] = [
  'NaN',
  'Infinity',
  '-Infinity',
  'undefined',
  '0x1F',
  '+1',
  '.5',
  '01',
  "'single'",
  '"unterminated',
  '[1,]',
  '{"a":1,}',
  '// comment',
];

/** A JSON value of any kind, from the ordinary to the hostile. */
export const hostileJsonValue: Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<unknown>(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, [], {}, [[]]) },
  {
    weight: 2,
    arbitrary: fc.double().map((value) => (Number.isFinite(value) ? value : String(value))),
  },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1_000, max: 300_000 }).map((length) => 'x'.repeat(length)),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 50, max: 2_000 })
      .map((depth) => Array.from({ length: depth }).reduce<unknown>((inner) => [inner], 1)),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 500, max: 5_000 }), fc.constantFrom<unknown>({}, 'x', null, -1))
      .map(([length, element]) => Array.from({ length }, () => element)),
  },
);

type JsonPath = readonly (string | number)[];

/** Paths of the nodes below the root of `value` (a bounded number of them). */
export function nodePaths(value: unknown, limit = 500): JsonPath[] {
  const paths: JsonPath[] = [];
  const visit = (node: unknown, path: JsonPath) => {
    if (paths.length >= limit) return;
    if (path.length > 0) paths.push(path);
    if (Array.isArray(node)) node.forEach((child, index) => visit(child, [...path, index]));
    else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) visit(child, [...path, key]);
    }
  };
  visit(value, []);
  return paths;
}

/** `value` with the node at `path` replaced (or removed, for `REMOVE`); a copy. */
export const REMOVE = Symbol('remove');
export function replaceAt(value: unknown, path: JsonPath, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    const next = replaceAt(copy[head as number], rest, replacement);
    if (next === REMOVE) copy.splice(head as number, 1);
    else copy[head as number] = next;
    return copy;
  }
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    const next = replaceAt(copy[head as string], rest, replacement);
    if (next === REMOVE) delete copy[head as string];
    else copy[head as string] = next;
    return copy;
  }
  return value;
}

const SENTINEL = '\u0001fuzz-raw-literal\u0001';

/** The JSON text of `value` with the node at `path` written as the raw `literal`. */
function withRawLiteral(value: unknown, path: JsonPath, literal: string): string {
  return JSON.stringify(replaceAt(value, path, SENTINEL)).replace(
    JSON.stringify(SENTINEL),
    literal,
  );
}

/** A property key that has to be written raw: JSON.parse keeps it as an own property. */
const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', '', '\u0000', 'a'.repeat(10_000)];

/** What a body is on the wire. */
export type RawBody = string | Uint8Array;

/**
 * Bodies built from one valid-shaped value: mutated at a node (wrong type, removed, a raw
 * number at the edge, not JSON), with duplicate or poisonous keys, truncated, padded to
 * the body limit, or with bytes that are not UTF-8.
 */
export function mutatedBody(valid: Arbitrary<unknown>, bodyLimit: number): Arbitrary<RawBody> {
  const atNode = fc.tuple(valid, fc.nat()).map(([value, index]) => {
    const paths = nodePaths(value);
    return { value, path: paths.length > 0 ? paths[index % paths.length]! : [] };
  });
  return fc.oneof(
    // A node of the wrong type or size.
    atNode.chain(({ value, path }) =>
      hostileJsonValue.map((hostile) => JSON.stringify(replaceAt(value, path, hostile))),
    ),
    // A field missing.
    atNode.map(({ value, path }) => JSON.stringify(replaceAt(value, path, REMOVE) ?? null)),
    // An extra field, an unknown one or a poisonous one (raw, so it stays a key).
    fc
      .tuple(valid, fc.constantFrom(...HOSTILE_KEYS, 'extra'), hostileJsonValue)
      .map(([value, key, extra]) =>
        insertRawKey(JSON.stringify(value), key, JSON.stringify(extra)),
      ),
    // A key twice: the first valid, the second hostile, or the other way round.
    fc.tuple(valid, hostileJsonValue, fc.boolean()).map(([value, hostile, hostileFirst]) => {
      const text = JSON.stringify(value);
      const key = value && typeof value === 'object' ? Object.keys(value)[0] : undefined;
      if (key === undefined) return text;
      const original = JSON.stringify((value as Record<string, unknown>)[key]);
      const [first, second] = hostileFirst
        ? [JSON.stringify(hostile), original]
        : [original, JSON.stringify(hostile)];
      return insertRawKey(insertRawKey(text, key, second ?? 'null'), key, first ?? 'null');
    }),
    // A number at the edges, or something that is not JSON, where a value belongs.
    atNode.chain(({ value, path }) =>
      fc
        .constantFrom(...EDGE_NUMBER_LITERALS, ...NOT_JSON_LITERALS)
        .map((literal) => (path.length > 0 ? withRawLiteral(value, path, literal) : literal)),
    ),
    // Cut anywhere.
    fc.tuple(valid, fc.nat()).map(([value, at]) => {
      const text = JSON.stringify(value);
      return text.slice(0, at % (text.length + 1));
    }),
    // Bytes that are not UTF-8 (a lone 0xFF, an overlong NUL, an encoded surrogate).
    fc
      .tuple(valid, fc.nat(), fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8]))
      .map(([value, at, bytes]) => {
        const text = Buffer.from(JSON.stringify(value));
        const cut = at % (text.length + 1);
        return Buffer.concat([text.subarray(0, cut), Buffer.from(bytes), text.subarray(cut)]);
      }),
    // A byte-order mark first.
    valid.map((value) => `\ufeff${JSON.stringify(value)}`),
    // Just under and just over the body limit (the padding is whitespace, so it stays JSON).
    fc.tuple(valid, fc.integer({ min: -64, max: 64 })).map(([value, delta]) => {
      const text = JSON.stringify(value);
      return text + ' '.repeat(Math.max(0, bodyLimit - Buffer.byteLength(text) + delta));
    }),
  );
}

/** `text` (a JSON object) with `"key": valueText` first; other JSON stays as it is. */
function insertRawKey(text: string, key: string, valueText: string): string {
  if (!text.startsWith('{')) return text;
  const rest = text.slice(1);
  return `{${JSON.stringify(key)}:${valueText}${rest === '}' ? '' : ','}${rest}`;
}

/** Bodies that have nothing to do with the contract. */
export function rawHostileBody(bodyLimit: number): Arbitrary<RawBody> {
  return fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      'null',
      'true',
      '0',
      '"a string"',
      '[]',
      '{}',
      '{"__proto__":{"isAdmin":true}}',
      '{"constructor":{"prototype":{"isAdmin":true}}}',
      '{"a":1,"a":2,"a":{"b":3}}',
      ...NOT_JSON_LITERALS,
    ),
    // Deep nesting, up to 100,000 levels (200 KB).
    fc
      .tuple(fc.integer({ min: 1_000, max: 100_000 }), fc.boolean())
      .map(([depth, objects]) =>
        objects
          ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
          : `${'['.repeat(depth)}${']'.repeat(depth)}`,
      ),
    // An unclosed deep nesting.
    fc.integer({ min: 1_000, max: 50_000 }).map((depth) => '['.repeat(depth)),
    // A string just under or over the body limit.
    fc
      .integer({ min: -64, max: 64 })
      .map((delta) => `{"x":"${'a'.repeat(Math.max(0, bodyLimit - 8 + delta))}"}`),
    // Thousands of elements, each one a validation error.
    fc
      .tuple(fc.integer({ min: 1_000, max: 20_000 }), fc.constantFrom<unknown>({}, null, 'x', []))
      .map(([length, element]) => JSON.stringify(Array.from({ length }, () => element))),
    fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.uint8Array({ maxLength: 512 }),
  );
}

/**
 * Every array in `value` replaced by `length` copies of a wrong element, and every scalar
 * by the wrong type: one body making thousands of validation errors.
 */
export function errorStorm(valid: Arbitrary<unknown>): Arbitrary<string> {
  return fc
    .tuple(valid, fc.integer({ min: 1_000, max: 10_000 }), fc.constantFrom<unknown>({}, 'x', -1))
    .map(([value, length, element]) => {
      const storm = (node: unknown): unknown => {
        if (Array.isArray(node)) return Array.from({ length }, () => element);
        if (node !== null && typeof node === 'object') {
          const entries = Object.entries(node).map(([key, child]) => [key, storm(child)]);
          // Thousands of unknown keys as well.
          for (let index = 0; index < 200; index++) entries.push([`unknown${index}`, element]);
          return Object.fromEntries(entries);
        }
        return typeof node === 'string' ? [node] : 'not the right type';
      };
      return JSON.stringify(storm(value));
    });
}

/** Header values: printable Latin-1 only (fetch refuses anything else on the client side). */
export const hostileHeaderValue: Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    '-',
    '*',
    'W/"x"',
    '"unterminated',
    `"${'a'.repeat(4_000)}"`,
    ', , ,',
    `${'"a",'.repeat(500)}"b"`,
    '\u00ff\u00fe',
    'null',
    '00000000-0000-0000-0000-000000000000',
    'a'.repeat(4_000),
    'Bearer',
    'x'.repeat(256),
    'x'.repeat(129),
  ),
  fc
    .string({
      unit: fc.oneof(
        fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
        fc.integer({ min: 0xa0, max: 0xff }).map((code) => String.fromCharCode(code)),
      ),
      maxLength: 300,
    })
    .map((value) => value.trim()),
);

/** Path segments: anything a client could put there, percent-encoded or raw. */
export const hostilePathSegment: Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '%',
    '%zz',
    '%00',
    '%ED%A0%80',
    '%C0%80',
    '%FF',
    '..',
    '%2e%2e',
    '%2F',
    '.',
    'a'.repeat(5_000),
    encodeURIComponent('\u202e'),
    '%252F',
    'null',
    '-1',
    '00000000-0000-0000-0000-00000000000g',
    '{storeId}',
    ';a=b',
  ),
  fc.string({ unit: 'grapheme', maxLength: 100 }).map((value) => encodeURIComponent(value)),
  fc.uuid().map((id) => id.toUpperCase()),
  fc.uuid().map((id) => `${id}x`),
);

/** Query values, encoded for the URL. */
export const hostileQueryValue: Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    ...EDGE_NUMBER_LITERALS,
    ...NOT_JSON_LITERALS,
    '',
    '%',
    '%zz',
    '%00',
    'a'.repeat(5_000),
  ),
  fc
    .constantFrom(...HOSTILE_STRINGS)
    .map((value) => encodeURIComponent(value.replace(/[\ud800-\udfff]/g, ''))),
  fc.integer().map(String),
  fc.string({ unit: 'grapheme', maxLength: 50 }).map((value) => encodeURIComponent(value)),
);
