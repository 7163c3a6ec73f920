import { encodePlaceReply } from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import type { Claim, RecordedAttempt } from './place-attempt.repository.js';

/** SHA-256 of the RFC 8785 canonical JSON of the body. */
export function fingerprintOf(body: unknown): string {
  let canonical: string | undefined;
  try {
    canonical = canonicalize(body);
  } catch (error) {
    throw notCanonicalizable(error);
  }
  return createHash('sha256')
    .update(canonical ?? '')
    .digest('hex');
}

/**
 * Why a parsed JSON body has no RFC 8785 form, as the partner's invalid request: each was
 * found by the fuzzer as a 500. A parsed body has no cycles or toJSON, so what remains is
 * what the partner sent.
 */
function notCanonicalizable(error: unknown): AppError {
  // canonicalize recurses: a body nested ~2,000 levels deep overflows the stack.
  if (error instanceof RangeError) {
    return new AppError('REQUEST_INVALID', 'The body is nested deeper than any order can be');
  }
  const message = error instanceof Error ? error.message : '';
  // JSON.parse reads 1e309 as Infinity, which I-JSON (RFC 7493) and RFC 8785 refuse.
  if (/Infinity|NaN/.test(message)) {
    return new AppError(
      'REQUEST_INVALID',
      'A number in the body is beyond the range of a double (such as 1e309)',
    );
  }
  if (/surrogate/i.test(message)) {
    return new AppError(
      'REQUEST_INVALID',
      'A string in the body holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)',
    );
  }
  return new AppError('REQUEST_INVALID', 'The body is not I-JSON (RFC 7493)');
}

/**
 * A failure that is the key's final answer: a 4xx the same request would get
 * again. Retryable ones (PAYMENT_FAILED, processor or store unavailable, timeouts, 5xx) and
 * 409, 422 and 429 leave the key to resume.
 */
export function isFinal(error: AppError): boolean {
  const { status, retryable } = error.info;
  return status >= 400 && status < 500 && !retryable && ![409, 422, 429].includes(status);
}

/**
 * A recorded answer as it is given, first and on every replay: the same status and the
 * recorded text's bytes, never parsed.
 */
export function answerOf(
  attempt: Pick<RecordedAttempt, 'order_id' | 'response_status' | 'response_body'>,
  replayed: boolean,
): Uint8Array {
  const status = attempt.response_status ?? 500;
  return encodePlaceReply(
    status < 300 ? { replayed, status, orderId: attempt.order_id } : { replayed, status },
    attempt.response_body ?? '',
  );
}

/** Counts what each request's Idempotency-Key decided. */
export function idempotencyMetric(registry: Registry): (claim: Claim | 'replayed') => void {
  const counter = new Counter({
    name: 'pcp_place_idempotency_total',
    help: 'Place requests by what their Idempotency-Key decided: new, resumed (an unfinished earlier run taken up: a retry after a retryable failure, or a holder that died), expired (an unfinished key past its deadline, settled), replayed, conflict, in_progress',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  return (claim) => counter.inc({ outcome: outcomeOf(claim) });
}

function outcomeOf(claim: Claim | 'replayed'): string {
  if (claim === 'replayed') return 'replayed';
  switch (claim.kind) {
    case 'claimed':
      return claim.expired ? 'expired' : claim.resumed ? 'resumed' : 'new';
    case 'replay':
      return 'replayed';
    case 'conflict':
      return 'conflict';
    case 'busy':
      return 'in_progress';
  }
}
