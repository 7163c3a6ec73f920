import { parseContract, placeOrderRequest, subjects } from '@pcp/contracts';
import {
  AppError,
  handleBytes,
  requestInvalid,
  requireEndUser,
  requirePartner,
  requestMode,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { answerOf, fingerprintOf, idempotencyMetric } from './idempotency.js';
import { claimAttempt, findRecordedAttempt } from './place-attempt.repository.js';
import type { PlaceSaga } from './place-saga.js';

export interface PlaceHandlerDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly saga: PlaceSaga;
  readonly registry: Registry;
  /** Names this replica in the leases its runs hold. */
  readonly holder: string;
  readonly leaseMs: number;
  readonly retentionMs: number;
}

/** Place one order: the HTTP body as it arrived, answered as the place subject replies. */
export type PlaceOrder = (body: unknown, ctx: RequestContext) => Promise<Uint8Array>;

/** The place subject, answered by `place`. */
export function placeHandler(place: PlaceOrder): HandlerBinding {
  return handleBytes(subjects.ordering.place, place);
}

/**
 * Place (docs/guide/orders.md#idempotency): the Idempotency-Key decides first (a recorded
 * answer is replayed byte for byte; another body, partner or end user is a conflict; a live run
 * makes it busy), then the saga runs the attempt from its last recovery point, or settles it
 * once it is past its deadline. The answer is `encodePlaceReply`'s bytes.
 */
export function createPlaceOrder(deps: PlaceHandlerDeps): PlaceOrder {
  const { db } = deps;
  const count = idempotencyMetric(deps.registry);

  return async (body, ctx) => {
    const partnerId = requirePartner(ctx, 'distribution');
    const endUserId = requireEndUser(ctx);
    const key = ctx.idempotencyKey;
    if (!key) {
      throw new AppError(
        'MISSING_IDEMPOTENCY_KEY',
        'Send an Idempotency-Key header: a fresh UUID for each order attempt',
      );
    }
    const fingerprint = fingerprintOf(body);
    // The common retry first: a final answer for this very request, replayed as it is (its
    // body was valid when it was recorded, and the fingerprint says this one is the same).
    const recorded = await findRecordedAttempt(db, key);
    if (
      recorded?.partner_id === partnerId &&
      recorded.end_user_id === endUserId &&
      recorded.fingerprint === fingerprint
    ) {
      count('replayed');
      return answerOf(recorded, true);
    }
    const parsed = parseContract(placeOrderRequest, body);
    if (!parsed.success) throw requestInvalid(parsed.error.issues, parsed);

    const claim = await claimAttempt(db, {
      key,
      partnerId,
      endUserId,
      mode: requestMode(ctx),
      fingerprint,
      // A new life of the key is a new order, and so a new charge (never an earlier one's).
      orderId: randomUUID(),
      // Each run holds the key as itself: two runs of one replica never pass for each other.
      holder: `${deps.holder}:${randomUUID()}`,
      leaseMs: deps.leaseMs,
      retentionMs: deps.retentionMs,
    });
    count(claim);
    switch (claim.kind) {
      case 'conflict':
        throw new AppError(
          'IDEMPOTENCY_KEY_CONFLICT',
          'This Idempotency-Key was used with another body, partner or end user; use a new key',
        );
      case 'busy':
        throw new AppError(
          'IDEMPOTENCY_KEY_IN_PROGRESS',
          'An earlier request with this Idempotency-Key is still running; retry it unchanged',
          { retryAfterSeconds: claim.retryAfterSeconds },
        );
      case 'replay':
        return answerOf(claim.attempt, true);
      case 'claimed':
        return claim.expired
          ? deps.saga.settleExpired(claim.attempt, ctx)
          : deps.saga.run(claim.attempt, parsed.data, ctx);
    }
  };
}
