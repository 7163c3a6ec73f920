import { AppError } from '@pcp/service-kit';
import { expect } from 'vitest';

/** Await a bus call that must fail with `code`; returns the error for further checks. */
export async function expectAppError(promise: Promise<unknown>, code: string): Promise<AppError> {
  const error = await promise.then(
    () => {
      throw new Error(`expected ${code}, got a reply`);
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
  return error as AppError;
}
