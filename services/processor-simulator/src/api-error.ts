/** The `error.type` values a Stripe-like processor answers with. */
export type ErrorType =
  | 'authentication_error'
  | 'invalid_request_error'
  | 'card_error'
  | 'idempotency_error'
  | 'api_error';

/** A failure answered as `{ error: { type, code, message }, ...extra }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    message: string,
    readonly extra: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }

  /** The wire body; `error` first so replays and fresh answers read alike. */
  body(): Record<string, unknown> {
    return { error: { type: this.type, code: this.code, message: this.message }, ...this.extra };
  }
}

/** The common case: an `invalid_request_error`. */
export const invalidRequest = (status: number, code: string, message: string): ApiError =>
  new ApiError(status, 'invalid_request_error', code, message);
