import type { MethodResponse } from 'openapi-fetch';
import { randomUUID } from 'node:crypto';
import type { PlatformClient } from './client.js';
import type { paths } from './generated/openapi.js';
import { PlatformProblem } from './problem.js';
import { delay, retryAfterMs } from './waiting.js';

const PLACE = '/v1/marketfront/orders/place';

/** The body of place: the order request (cart, fulfillment, client, payment, tip, amounts). */
export type PlaceOrderRequest =
  paths[typeof PLACE]['post']['requestBody']['content']['application/json'];

/** The order as place answers it (and `GET /v1/marketfront/orders/{orderId}`). */
export type Order = MethodResponse<PlatformClient, 'post', typeof PLACE>;

/** What placeOrder sends, and how hard it tries. */
export interface PlaceOrderInput {
  body: PlaceOrderRequest;
  /** The partner's id of the end user placing the order (`X-End-User-Id`). */
  endUserId: string;
  /**
   * One order attempt's key, sent on every try. Default: a new UUID per call. Pass your own
   * to retry a retryable failure (e.g. PAYMENT_FAILED) later with the same key.
   */
  idempotencyKey?: string;
  /** Tries in all, the first included. Default 5. */
  maxAttempts?: number;
  /** The longest single wait between tries, whatever Retry-After asks. Default 30 s. */
  maxDelayMs?: number;
  signal?: AbortSignal;
}

/** A placed order, and how it came. */
export interface PlacedOrder {
  order: Order;
  /** The answer was a replay of the key's recorded outcome (`Idempotent-Replayed`). */
  replayed: boolean;
  /** Tries it took, the first included. */
  attempts: number;
  idempotencyKey: string;
}

const BACKOFF_BASE_MS = 250;

/** Exponential backoff with jitter: half of 250 ms · 2^(n−1), plus up to as much again. */
function backoffMs(retry: number): number {
  const ceiling = BACKOFF_BASE_MS * 2 ** (retry - 1);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/**
 * Whether an answer leaves the key's outcome open, so the same key may be sent again: the
 * spec's "no response" cases (5xx), a request still running under the key (409
 * IDEMPOTENCY_KEY_IN_PROGRESS) and a rate limit (429: the platform records neither).
 */
function isRetryable(problem: PlatformProblem): boolean {
  return (
    problem.status >= 500 ||
    problem.status === 429 ||
    (problem.status === 409 && problem.errorCode === 'IDEMPOTENCY_KEY_IN_PROGRESS')
  );
}

/**
 * Place an order the way the spec asks a partner to: network errors, 5xx, 429 and 409
 * IDEMPOTENCY_KEY_IN_PROGRESS are retried with the SAME Idempotency-Key (so the order is
 * placed and charged at most once), after the answer's Retry-After (capped at maxDelayMs)
 * or an exponential backoff with jitter. A final failure throws: a PlatformProblem for an
 * answer (a 4xx at once), the network error when the last try got no answer.
 */
export async function placeOrder(
  client: PlatformClient,
  input: PlaceOrderInput,
): Promise<PlacedOrder> {
  const idempotencyKey = input.idempotencyKey ?? randomUUID();
  const maxAttempts = input.maxAttempts ?? 5;
  const maxDelayMs = input.maxDelayMs ?? 30_000;
  const { signal } = input;
  // HTTP header names are case-insensitive: these are the document's header parameters
  // whatever spelling it declares them with.
  const header = {
    'idempotency-key': idempotencyKey,
    'x-end-user-id': input.endUserId,
  } as unknown as NonNullable<paths[typeof PLACE]['post']['parameters']['header']>;

  for (let attempt = 1; ; attempt++) {
    let answer;
    try {
      answer = await client.POST(PLACE, { params: { header }, body: input.body, signal });
    } catch (error) {
      if (signal?.aborted || attempt >= maxAttempts) throw error;
      // No answer (connection refused or reset, a timeout): the order may or may not exist;
      // the same key finds out.
      await delay(Math.min(backoffMs(attempt), maxDelayMs), signal);
      continue;
    }
    const { data, error, response } = answer;
    if (data !== undefined) {
      // The platform never sends the header with a false value: its presence is the answer.
      const replayed = response.headers.has('idempotent-replayed');
      return { order: data, replayed, attempts: attempt, idempotencyKey };
    }
    const problem = PlatformProblem.fromResponse(response, error);
    if (!isRetryable(problem) || attempt >= maxAttempts) throw problem;
    const waitMs = retryAfterMs(response.headers) ?? backoffMs(attempt);
    await delay(Math.min(waitMs, maxDelayMs), signal);
  }
}
