import { errorCodes } from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError, issuesToErrors, requestInvalid } from '../src/app-error.js';

function issuesOf(schema: z.ZodType, input: unknown) {
  const result = schema.safeParse(input);
  if (result.success) throw new Error('expected the input to be invalid');
  return result.error.issues;
}

describe('issuesToErrors', () => {
  const schema = z.object({
    name: z.string(),
    count: z.number(),
    kind: z.enum(['commerce', 'distribution']),
  });

  it('maps a missing field to REQUIRED', () => {
    const errors = issuesToErrors(issuesOf(schema, { count: 1, kind: 'commerce' }));
    expect(errors).toEqual([{ code: 'REQUIRED', message: 'Required', pointer: '/name' }]);
  });

  it('maps a wrong type to INVALID_TYPE', () => {
    const errors = issuesToErrors(issuesOf(schema, { name: 'a', count: '1', kind: 'commerce' }));
    expect(errors).toEqual([expect.objectContaining({ code: 'INVALID_TYPE', pointer: '/count' })]);
    expect(errors[0]?.message).not.toBe('Required');
  });

  it('maps an unknown enum value to INVALID_VALUE', () => {
    const errors = issuesToErrors(issuesOf(schema, { name: 'a', count: 1, kind: 'retail' }));
    expect(errors).toEqual([expect.objectContaining({ code: 'INVALID_VALUE', pointer: '/kind' })]);
  });

  it('maps range, format and unknown-key issues', () => {
    const strict = z.strictObject({ n: z.number().max(3), id: z.guid() });
    const errors = issuesToErrors(issuesOf(strict, { n: 4, id: 'nope', extra: true }));
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'OUT_OF_RANGE', pointer: '/n' }),
        expect.objectContaining({ code: 'INVALID_FORMAT', pointer: '/id' }),
        expect.objectContaining({ code: 'UNKNOWN_FIELD', pointer: '' }),
      ]),
    );
  });

  it('passes a refinement’s own params.code through', () => {
    const refined = z.object({ amount: z.number() }).superRefine((value, ctx) => {
      if (value.amount > 1) {
        ctx.addIssue({
          code: 'custom',
          message: 'Too precise',
          path: ['amount'],
          params: { code: 'PRECISION_EXCEEDED' },
        });
      }
    });
    expect(issuesToErrors(issuesOf(refined, { amount: 2 }))).toEqual([
      { code: 'PRECISION_EXCEEDED', message: 'Too precise', pointer: '/amount' },
    ]);
    // A custom issue without a code falls back to INVALID_VALUE.
    const plain = z.string().refine(() => false, 'nope');
    expect(issuesToErrors(issuesOf(plain, 'x'))).toEqual([
      { code: 'INVALID_VALUE', message: 'nope', pointer: '' },
    ]);
  });

  it('escapes pointer tokens and nests them under the root', () => {
    const record = z.object({ 'a/b': z.object({ 'c~d': z.number() }), list: z.array(z.string()) });
    const errors = issuesToErrors(
      issuesOf(record, { 'a/b': { 'c~d': 'x' }, list: ['ok', 5] }),
      '/body',
    );
    expect(errors.map((error) => error.pointer).sort()).toEqual([
      '/body/a~1b/c~0d',
      '/body/list/1',
    ]);
  });
});

describe('requestInvalid', () => {
  it('names the single invalid field in the detail', () => {
    const error = requestInvalid(issuesOf(z.object({ n: z.number() }), {}));
    expect(error.code).toBe('REQUEST_INVALID');
    expect(error.message).toBe('/n: Required');
    expect(error.errors).toHaveLength(1);
  });

  it('counts several invalid fields', () => {
    const error = requestInvalid(issuesOf(z.object({ a: z.number(), b: z.number() }), {}));
    expect(error.message).toBe('The request has 2 invalid fields');
    expect(error.errors?.map((e) => e.pointer)).toEqual(['/a', '/b']);
  });
});

describe('AppError', () => {
  it('takes status, category and retryable from the error table', () => {
    const notFound = new AppError('STORE_NOT_FOUND', 'No store');
    expect(notFound).toBeInstanceOf(Error);
    expect(notFound.name).toBe('AppError');
    expect(notFound.message).toBe('No store');
    expect(notFound.info).toBe(errorCodes.STORE_NOT_FOUND);
    expect(notFound.info).toMatchObject({ status: 404, category: 'not_found', retryable: false });

    expect(new AppError('RATE_LIMITED', 'slow down').info).toMatchObject({
      status: 429,
      category: 'rate_limit',
      retryable: true,
    });
    expect(new AppError('UPSTREAM_TIMEOUT', 'late').info).toMatchObject({
      status: 504,
      category: 'dependency',
    });
  });

  it('serializes to a ServiceError with only the fields it has', () => {
    expect(new AppError('FORBIDDEN', 'no').toServiceError()).toEqual({
      errorCode: 'FORBIDDEN',
      detail: 'no',
    });
    const errors = [{ code: 'REQUIRED', message: 'Required', pointer: '/n' }];
    const cause = new Error('root');
    const full = new AppError('RATE_LIMITED', 'wait', { errors, retryAfterSeconds: 7, cause });
    expect(full.cause).toBe(cause);
    expect(full.toServiceError()).toEqual({
      errorCode: 'RATE_LIMITED',
      detail: 'wait',
      errors,
      retryAfterSeconds: 7,
    });
  });
});
