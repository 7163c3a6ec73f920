import type { components } from './generated/openapi.js';

/** An RFC 9457 ProblemDetail as the platform sends it (the document's `ProblemDetail`). */
export type ProblemDetail = components['schemas']['ProblemDetail'];

/**
 * One element-level error: `Order.errors[]` and `ProblemDetail.errors[]` (spec: OrderError).
 * Its `code` is an open enum: route it through `orderErrorCode`, which maps unknown codes to
 * `OTHER`.
 */
export type OrderError = NonNullable<ProblemDetail['errors']>[number];

function isProblemDetail(body: unknown): body is ProblemDetail {
  if (typeof body !== 'object' || body === null) return false;
  const candidate = body as Partial<ProblemDetail>;
  return typeof candidate.errorCode === 'string' && typeof candidate.status === 'number';
}

/** A ProblemDetail answer turned into an error by the helpers of this package. */
export class PlatformProblem extends Error {
  override readonly name = 'PlatformProblem';

  constructor(
    /** The HTTP status of the answer. */
    readonly status: number,
    readonly problem: ProblemDetail,
  ) {
    super(`${status} ${problem.errorCode}: ${problem.detail}`);
  }

  /**
   * The answer of `response` (its parsed body `body`) as an error. An answer without a
   * ProblemDetail (a proxy's error page, an empty 404) gets one saying so, with
   * errorCode `UNEXPECTED_RESPONSE`, retryable when its status is.
   */
  static fromResponse(response: Response, body: unknown): PlatformProblem {
    if (isProblemDetail(body)) return new PlatformProblem(response.status, body);
    const { status } = response;
    return new PlatformProblem(status, {
      type: 'about:blank',
      title: response.statusText || `HTTP ${status}`,
      status,
      detail: `The platform answered ${status} without a ProblemDetail.`,
      instance: new URL(response.url || 'http://unknown/').pathname,
      requestId: response.headers.get('x-request-id') ?? '',
      timestamp: new Date().toISOString(),
      errorCode: 'UNEXPECTED_RESPONSE',
      errorCategory: 'unknown',
      retryable: status === 429 || status >= 500,
    });
  }

  /** The overall failure, e.g. `IDEMPOTENCY_KEY_IN_PROGRESS`. */
  get errorCode(): string {
    return this.problem.errorCode;
  }

  /** Whether the same request may succeed later (the platform's own judgement). */
  get retryable(): boolean {
    return this.problem.retryable;
  }
}
