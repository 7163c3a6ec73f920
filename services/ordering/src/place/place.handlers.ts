import { parseContract, placeOrderRequest, subjects } from '@pcp/contracts';
import {
  AppError,
  handleBytes,
  parseRequestBytes,
  requestInvalid,
  requireEndUser,
  requirePartner,
  requestMode,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { createHash, randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { answerOf, fingerprintOf, idempotencyMetric } from './idempotency.js';
import { createAnswerCache } from './answer-cache.js';
import {
  claimAttempt,
  findRecordedAttempt,
  type RecordedAttempt,
} from './place-attempt.repository.js';
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

/** Place one order from a body built in-process (the sandbox's place), answered as the subject replies. */
export type PlaceOrder = (body: unknown, ctx: RequestContext) => Promise<Uint8Array>;

/** Place one order from the place subject's request bytes, as they came. */
export type PlaceOrderBytes = (request: Uint8Array, ctx: RequestContext) => Promise<Uint8Array>;

/** The place subject, answered by `place` from the request's bytes. */
export function placeHandler(place: PlaceOrderBytes): HandlerBinding {
  return handleBytes(subjects.ordering.place, place, { rawRequest: true });
}

/** In-process answers of live tenants' replays; a sandbox reset may delete a test tenant's. */
const ANSWER_CACHE_BYTES = 16 * 1024 * 1024;

/**
 * An answer is kept in-process until this long before the database may delete it (its
 * retention as the database counted it when read, less the time the read took to arrive).
 */
const ANSWER_CACHE_MARGIN_MS = 5_000;

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/**
 * Place (docs/guide/orders.md#idempotency): the Idempotency-Key decides first (a recorded
 * answer is replayed byte for byte; another body, partner or end user is a conflict; a live run
 * makes it busy), then the saga runs the attempt from its last recovery point, or settles it
 * once it is past its deadline. The answer is `encodePlaceReply`'s bytes.
 */
export function createPlaceOrder(deps: PlaceHandlerDeps): {
  fromBytes: PlaceOrderBytes;
  fromBody: PlaceOrder;
} {
  const { db } = deps;
  const count = idempotencyMetric(deps.registry);
  const answers = createAnswerCache(ANSWER_CACHE_BYTES);

  /** A recorded answer replayed; a live tenant's kept for the next retry of these bytes. */
  const replay = (
    recorded: RecordedAttempt & { retained_ms: number },
    ctx: RequestContext,
    rawHash: string | undefined,
  ): Uint8Array => {
    count('replayed');
    const reply = answerOf(recorded, true);
    // A test tenant's answers are not kept: a sandbox reset deletes them, in any replica.
    if (rawHash !== undefined && requestMode(ctx) === 'live') {
      answers.set(
        recorded.partner_id,
        ctx.idempotencyKey!,
        { endUserId: recorded.end_user_id, rawHash, reply },
        recorded.retained_ms - ANSWER_CACHE_MARGIN_MS,
      );
    }
    return reply;
  };

  /**
   * The request once its body is parsed: `seen` is the key's recorded answer if it was
   * already looked up (and the bytes' hash, when the request came as bytes).
   */
  const decide = async (
    body: unknown,
    ctx: RequestContext,
    seen?: { rawHash: string; recorded: (RecordedAttempt & { retained_ms: number }) | undefined },
  ): Promise<Uint8Array> => {
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
    const recorded = seen ? seen.recorded : await findRecordedAttempt(db, key);
    if (
      recorded?.partner_id === partnerId &&
      recorded.end_user_id === endUserId &&
      recorded.fingerprint === fingerprint
    ) {
      return replay(recorded, ctx, seen?.rawHash);
    }
    const parsed = parseContract(placeOrderRequest, body);
    if (!parsed.success) throw requestInvalid(parsed.error.issues, parsed);

    const claim = await claimAttempt(db, {
      key,
      partnerId,
      endUserId,
      mode: requestMode(ctx),
      fingerprint,
      ...(seen ? { rawHash: seen.rawHash } : {}),
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

  return {
    fromBody: (body, ctx) => decide(body, ctx),
    async fromBytes(request, ctx) {
      const key = ctx.idempotencyKey;
      const tenantId = ctx.partnerId;
      if (key === undefined || tenantId === undefined) {
        return decide(parseRequestBytes(subjects.ordering.place, request), ctx);
      }
      // A retry of the very bytes that were recorded is a replay with no parse: they parsed,
      // and so would again, and every check after the parse is made here as well.
      const rawHash = sha256(request);
      const sameRequest = (answer: { endUserId: string; rawHash: string | null }) =>
        answer.rawHash === rawHash && answer.endUserId === ctx.endUserId;
      const cached = answers.get(tenantId, key);
      if (cached && sameRequest(cached)) {
        requirePartner(ctx, 'distribution');
        requireEndUser(ctx);
        count('replayed');
        return cached.reply;
      }
      const recorded = await findRecordedAttempt(db, key);
      if (
        recorded?.partner_id === tenantId &&
        sameRequest({ endUserId: recorded.end_user_id, rawHash: recorded.raw_hash })
      ) {
        requirePartner(ctx, 'distribution');
        requireEndUser(ctx);
        return replay(recorded, ctx, rawHash);
      }
      // Anything else is decided as before, on the parsed body (a reordered but equal body
      // replays by its canonical fingerprint; another is a conflict).
      return decide(parseRequestBytes(subjects.ordering.place, request), ctx, {
        rawHash,
        recorded,
      });
    },
  };
}
