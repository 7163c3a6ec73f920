import { subjects } from '@pcp/contracts';
import type { BusClient, Logger } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { Counter, type Registry } from 'prom-client';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { NOT_ACCEPTED_REASON } from './acceptance-window.js';
import {
  claimPause,
  countTimeout,
  duePauses,
  lockDueOrder,
  pauseDone,
} from './acceptance.repository.js';
import type { OrderingMutant } from '../config.js';
import { oweCancelRefund } from './order-refunds.js';
import { recordOrderEvent, updateOrderStatus } from './order.repository.js';

export interface AcceptanceDeps {
  readonly clock: () => Date;
  /** The deployment's subject prefix (the outbox's event subjects carry it). */
  readonly prefix: string;
  /** Test-only: the fault suite's planted defect (`ORDERING_TEST_MUTANT`). */
  readonly mutant?: OrderingMutant;
}

/**
 * Cancel a pending order whose window ended (docs/guide/orders.md#acceptance-window), its row
 * locked by the caller's transaction: `cancelled` by the platform with its event in the
 * outbox and its refund owed (the same key as a store's cancel, so the two never both
 * refund), and counted against its store (while it has one). Nothing here waits on payments:
 * the refund sweeper asks for the refund once this commits (the caller nudges it).
 */
export async function cancelNotAccepted(
  trx: Kysely<OrderingDatabase>,
  row: OrderRow,
  deps: AcceptanceDeps,
): Promise<OrderRow> {
  const now = deps.clock();
  const updated = await updateOrderStatus(trx, row, {
    state: 'cancelled',
    status: 'cancelled',
    updated_at: now,
    cancel_reason: NOT_ACCEPTED_REASON,
    cancelled_by: 'platform',
  });
  await recordOrderEvent(trx, updated, 'order.cancelled', row.status, deps.prefix);
  if (deps.mutant !== 'acceptance-no-refund') await oweCancelRefund(trx, updated);
  // A deleted store has no run to count, and no pause to take.
  if (row.store_deleted_at === null) await countTimeout(trx, row, now);
  return updated;
}

export interface AcceptanceSweeperDeps extends AcceptanceDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly bus: BusClient;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Publish the outbox now (after a commit that wrote an event). */
  readonly nudge: () => void;
  /** Ask payments for owed refunds now (after a commit that cancelled a card order). */
  readonly nudgeRefunds: () => void;
}

/** Orders cancelled per sweep, and at once (each in its own transaction). */
const CANCEL_BATCH = 200;
const CANCEL_CONCURRENCY = 4;
/** Pauses asked per sweep. */
const PAUSE_BATCH = 50;
/** A pause stores did not take is asked again after this, doubling up to the cap. */
const PAUSE_RETRY_MS = 1_000;
const PAUSE_RETRY_MAX_MS = 300_000;

/**
 * The acceptance window's enforcer, on every replica: cancels pending orders past their
 * deadline (each claimed with FOR UPDATE SKIP LOCKED, so replicas never cancel one twice) and
 * asks stores for the platform pauses that 3 timeouts in a row made due, until it answers.
 * Everything it acts on is in the database, so a restart loses nothing.
 */
export function createAcceptanceSweeper(deps: AcceptanceSweeperDeps) {
  const outcomes = new Counter({
    name: 'pcp_acceptance_sweeps_total',
    help: 'What the acceptance sweeper did: cancelled (a pending order past its window, its refund owed), cancel_failed (left pending for the next sweep), paused (a store after 3 timeouts in a row), pause_failed (asked again after its back-off)',
    labelNames: ['outcome'] as const,
    registers: [deps.registry],
  });
  for (const outcome of ['cancelled', 'cancel_failed', 'paused', 'pause_failed']) {
    outcomes.inc({ outcome }, 0);
  }
  let running: Promise<{ cancelled: number; paused: number }> | undefined;
  let stopping = false;

  /** Cancel one due order no other run holds; undefined when none is left. */
  async function cancelOne(failed: string[]): Promise<OrderRow | undefined> {
    let claimed: OrderRow | undefined;
    try {
      const result = await deps.db.transaction().execute(async (trx) => {
        const row = await lockDueOrder(trx, deps.clock(), failed);
        if (!row) return undefined;
        claimed = row;
        return cancelNotAccepted(trx, row, deps);
      });
      if (!result) return undefined;
      outcomes.inc({ outcome: 'cancelled' });
      deps.nudge();
      deps.nudgeRefunds();
      return result;
    } catch (error) {
      if (!claimed) throw error;
      // Its commit failed: skipped for this sweep, tried again next.
      failed.push(claimed.order_id);
      outcomes.inc({ outcome: 'cancel_failed' });
      deps.logger.warn(
        { err: error, orderId: claimed.order_id },
        'an order past its acceptance window could not be cancelled; it is tried again',
      );
      return claimed;
    }
  }

  async function cancelDue(): Promise<number> {
    const failed: string[] = [];
    let cancelled = 0;
    let budget = CANCEL_BATCH;
    const worker = async () => {
      while (!stopping && budget > 0) {
        budget -= 1;
        const row = await cancelOne(failed);
        if (!row) return;
        if (row.status === 'cancelled') cancelled += 1;
      }
    };
    await Promise.all(Array.from({ length: CANCEL_CONCURRENCY }, worker));
    return cancelled;
  }

  async function pauseDue(): Promise<number> {
    let paused = 0;
    for (const pause of await duePauses(deps.db, deps.clock(), PAUSE_BATCH)) {
      if (stopping) break;
      const backoff = Math.min(PAUSE_RETRY_MS * 2 ** pause.pause_tries, PAUSE_RETRY_MAX_MS);
      const retryAt = new Date(deps.clock().getTime() + backoff);
      if (!(await claimPause(deps.db, pause, retryAt))) continue;
      try {
        await deps.bus.request(
          subjects.stores.platformPause,
          { storeId: pause.store_id },
          {
            requestId: `acceptance-pause-${pause.store_id}`,
            partnerId: pause.store_partner_id,
            partnerKind: 'commerce',
          },
        );
        await pauseDone(deps.db, pause.store_id, retryAt);
        outcomes.inc({ outcome: 'paused' });
        paused += 1;
      } catch (error) {
        outcomes.inc({ outcome: 'pause_failed' });
        deps.logger.warn(
          { err: error, storeId: pause.store_id, retryAt },
          'a store could not be paused after its orders were not accepted in time; asked again later',
        );
      }
    }
    return paused;
  }

  return {
    /** One sweep (the timer's, or a test's); a sweep already running is joined, not doubled. */
    sweep(): Promise<{ cancelled: number; paused: number }> {
      if (stopping) return Promise.resolve({ cancelled: 0, paused: 0 });
      running ??= (async () => {
        const cancelled = await cancelDue();
        const paused = await pauseDue();
        return { cancelled, paused };
      })().finally(() => {
        running = undefined;
      });
      return running;
    },
    /** Start no more work; wait for the sweep in flight (what it left is taken up later). */
    async stop(): Promise<void> {
      stopping = true;
      await running?.catch(() => undefined);
    },
  };
}
