import {
  errorCodes,
  maxProblemErrors,
  toJsonPointer,
  type ErrorCode,
  type ErrorCodeInfo,
  type OrderError,
  type ServiceError,
} from '@pcp/contracts';
import type { z } from 'zod';

/**
 * The one error type of the platform: a top-level code from the contracts' table, a
 * partner-safe detail and optional element errors. Anything else becomes INTERNAL.
 * Element errors are capped at 100 here, so no handler can build a reply of unbounded
 * size; `errorsOmitted` counts the rest.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly info: ErrorCodeInfo;
  readonly errors: OrderError[] | undefined;
  readonly errorsOmitted: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    detail: string,
    options: {
      errors?: readonly OrderError[];
      /** Element errors the caller already left out of `errors`. */
      errorsOmitted?: number;
      retryAfterSeconds?: number;
      cause?: unknown;
    } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.info = errorCodes[code];
    this.errors = options.errors?.slice(0, maxProblemErrors);
    this.errorsOmitted =
      (options.errorsOmitted ?? 0) + (options.errors?.length ?? 0) - (this.errors?.length ?? 0);
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  toServiceError(): ServiceError {
    return {
      errorCode: this.code,
      detail: this.message,
      ...(this.errors ? { errors: this.errors } : {}),
      ...(this.errorsOmitted > 0 ? { errorsOmitted: this.errorsOmitted } : {}),
      ...(this.retryAfterSeconds ? { retryAfterSeconds: this.retryAfterSeconds } : {}),
    };
  }
}

const issueCodes: Record<string, string> = {
  invalid_type: 'INVALID_TYPE',
  invalid_format: 'INVALID_FORMAT',
  invalid_value: 'INVALID_VALUE',
  invalid_union: 'INVALID_VALUE',
  too_big: 'OUT_OF_RANGE',
  too_small: 'OUT_OF_RANGE',
  unrecognized_keys: 'UNKNOWN_FIELD',
  not_multiple_of: 'INVALID_VALUE',
};

/**
 * Longest message kept per error: zod quotes the partner's input in some (every unknown key
 * of an object, however long), so a message is cut rather than echo a body back.
 */
const MAX_ERROR_MESSAGE_CHARS = 500;

const bounded = (message: string) =>
  message.length > MAX_ERROR_MESSAGE_CHARS
    ? `${message.slice(0, MAX_ERROR_MESSAGE_CHARS - 1)}…`
    : message;

/**
 * zod issues → element errors with RFC 6901 pointers under `root` (e.g. `''` for a body).
 * A missing required field reads as REQUIRED; a refinement may name its own code.
 */
export function issuesToErrors(issues: readonly z.core.$ZodIssue[], root = ''): OrderError[] {
  return issues.map((issue) => {
    const missing = issue.code === 'invalid_type' && /received undefined/.test(issue.message);
    const custom =
      issue.code === 'custom' && typeof issue.params?.code === 'string'
        ? issue.params.code
        : undefined;
    return {
      code: missing ? 'REQUIRED' : (custom ?? issueCodes[issue.code] ?? 'INVALID_VALUE'),
      message: missing ? 'Required' : bounded(issue.message),
      pointer: root + toJsonPointer(issue.path),
    };
  });
}

/**
 * A REQUEST_INVALID error carrying one element error per zod issue (the first 100; only
 * those kept are converted). `firstOnly`: validation stopped at the first problem.
 */
export function requestInvalid(
  issues: readonly z.core.$ZodIssue[],
  options: { firstOnly?: boolean } = {},
): AppError {
  const errors = issuesToErrors(issues.slice(0, maxProblemErrors));
  const first = errors[0];
  const detail = options.firstOnly
    ? 'The request is invalid; the first problem found is listed'
    : issues.length === 1 && first
      ? `${first.pointer || 'The request'}: ${first.message}`
      : `The request has ${issues.length} invalid fields`;
  return new AppError('REQUEST_INVALID', detail, {
    errors,
    errorsOmitted: issues.length - errors.length,
  });
}
