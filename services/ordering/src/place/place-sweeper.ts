import type { Logger, RequestContext } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import type { OrderingDatabase } from '../db/ordering.table.js';
import {
  claimForSettlement,
  deleteExpiredAnswers,
  dueForSettlement,
} from './place-attempt.repository.js';
import type { PlaceSaga } from './place-saga.js';

export interface PlaceSweeperDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly saga: PlaceSaga;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Names this replica in the leases its settlements hold. */
  readonly holder: string;
  readonly leaseMs: number;
  /** A key that could not be settled is tried again after this, doubling each time. */
  readonly backoffMs: number;
}

/** Keys settled per sweep, and at once. */
const SETTLE_BATCH = 100;
const SETTLE_CONCURRENCY = 8;
/** Answered keys forgotten per sweep. */
const DELETE_BATCH = 5_000;

/**
 * The keys no partner finishes. An attempt left at a step the store may hold (the
 * submission or the capture may have been sent) is finished soon after it is abandoned, by
 * the same saga a retry runs, so the order the store may be making exists and is paid; a
 * key past its deadline is settled (its payment released, IDEMPOTENCY_KEY_EXPIRED); an
 * answer past its retention is forgotten. Every replica sweeps; each key is claimed by one
 * run at a time, and a key that cannot be settled now is pushed back before it is tried,
 * so it never holds the others up.
 */
export function createPlaceSweeper(deps: PlaceSweeperDeps) {
  const settlements = new Counter({
    name: 'pcp_place_settlements_total',
    help: 'Place keys the sweeper took up: finished (an abandoned attempt the store may hold, run to its answer), expired (past its deadline: payment released, IDEMPOTENCY_KEY_EXPIRED), failed (tried again after its back-off)',
    labelNames: ['outcome'] as const,
    registers: [deps.registry],
  });
  // Every outcome from zero, so increase() sees the first of each.
  for (const outcome of ['finished', 'expired', 'failed']) settlements.inc({ outcome }, 0);
  let running: Promise<{ settled: number; forgotten: number }> | undefined;
  let stopping = false;

  async function settle(key: string): Promise<boolean> {
    const holder = `${deps.holder}:${randomUUID()}`;
    const claimed = await claimForSettlement(deps.db, key, holder, deps.leaseMs, deps.backoffMs);
    if (!claimed) return false; // a retry holds it or answered it meanwhile
    const { expired, ...attempt } = claimed;
    // The placing partner's context: payments keeps charges per partner and end user.
    const ctx: RequestContext = {
      requestId: `place-settle-${attempt.order_id}`,
      partnerId: attempt.partner_id,
      partnerKind: 'distribution',
      endUserId: attempt.end_user_id,
      mode: attempt.mode,
    };
    try {
      await (expired
        ? deps.saga.settleExpired(attempt, ctx)
        : deps.saga.run(attempt, undefined, ctx));
      settlements.inc({ outcome: expired ? 'expired' : 'finished' });
      return true;
    } catch (error) {
      settlements.inc({ outcome: 'failed' });
      deps.logger.warn(
        { err: error, orderId: attempt.order_id, step: attempt.step },
        'an abandoned place attempt could not be settled; it is tried again after its back-off',
      );
      return false;
    }
  }

  async function sweepOnce(): Promise<{ settled: number; forgotten: number }> {
    const forgotten = await deleteExpiredAnswers(deps.db, DELETE_BATCH);
    const due = await dueForSettlement(deps.db, SETTLE_BATCH);
    let settled = 0;
    for (let start = 0; start < due.length && !stopping; start += SETTLE_CONCURRENCY) {
      const results = await Promise.all(due.slice(start, start + SETTLE_CONCURRENCY).map(settle));
      settled += results.filter(Boolean).length;
    }
    return { settled, forgotten };
  }

  return {
    /** One sweep (the timer's, or a test's); a sweep already running is joined, not doubled. */
    sweep(): Promise<{ settled: number; forgotten: number }> {
      if (stopping) return Promise.resolve({ settled: 0, forgotten: 0 });
      running ??= sweepOnce().finally(() => {
        running = undefined;
      });
      return running;
    },
    /** Start no more settlements; wait for those in flight (a key left is claimed again later). */
    async stop(): Promise<void> {
      stopping = true;
      await running?.catch(() => undefined);
    },
  };
}

export type PlaceSweeper = ReturnType<typeof createPlaceSweeper>;
