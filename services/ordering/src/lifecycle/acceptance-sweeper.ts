import { subjects } from '@pcp/contracts';
import type { BusClient, Logger } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { Counter, type Registry } from 'prom-client';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { NOT_ACCEPTED_REASON } from './acceptance-window.js';
import {
  claimPause,
  countTimeouts,
  duePauses,
  lockDueOrders,
  pauseDone,
} from './acceptance.repository.js';
import type { OrderingMutant } from '../config.js';
import { oweCancelRefunds } from './order-refunds.js';
import { recordOrderEvents } from './order.repository.js';

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
  const [updated] = await cancelAllNotAccepted(trx, [row], deps);
  return updated!;
}

/**
 * `cancelNotAccepted` for a batch of pending orders the caller's transaction locked, a
 * statement for each kind of row the batch writes (orders, history, outbox, refunds, store
 * runs) however many orders it has. Each order gets its version, event and refund as alone.
 */
export async function cancelAllNotAccepted(
  trx: Kysely<OrderingDatabase>,
  rows: readonly OrderRow[],
  deps: AcceptanceDeps,
): Promise<OrderRow[]> {
  if (rows.length === 0) return [];
  const now = deps.clock();
  const locked = new Map(rows.map((row) => [row.order_id, row]));
  const updated = await trx
    .updateTable('orders')
    .set({
      state: 'cancelled',
      status: 'cancelled',
      updated_at: now,
      cancel_reason: NOT_ACCEPTED_REASON,
      cancelled_by: 'platform',
      version: sql<number>`version + 1`,
    })
    .where('order_id', 'in', [...locked.keys()])
    .where('status', '=', 'pending')
    .returningAll()
    .execute();
  // The rows are locked: each moved from the version read, or the batch is undone.
  const moved = (row: OrderRow) => locked.get(row.order_id)?.version === row.version - 1;
  if (updated.length !== locked.size || !updated.every(moved)) {
    throw new Error('an order of the batch changed under its lock');
  }
  await recordOrderEvents(
    trx,
    updated.map((row) => ({ row, event: 'order.cancelled', previousStatus: 'pending' })),
    deps.prefix,
  );
  if (deps.mutant !== 'acceptance-no-refund') await oweCancelRefunds(trx, updated);
  // A deleted store has no run to count, and no pause to take.
  await countTimeouts(
    trx,
    updated.filter((row) => row.store_deleted_at === null),
    now,
  );
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

/**
 * Orders one transaction cancels, and transactions at once: a burst of thousands due at once is
 * cancelled at a few hundred a second per replica (docs/benchmarks.md#acceptance).
 */
const CANCEL_BATCH = 100;
const CANCEL_CONCURRENCY = 2;
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

  /**
   * Cancel a batch of due orders no other run holds (of those, `only` when given): how many
   * it locked (0 when none is left) and cancelled. A batch whose commit fails is cancelled
   * again one order at a time, so an order that cannot be cancelled keeps no other pending;
   * that one is skipped for this sweep and tried again next.
   */
  async function cancelBatch(
    failed: string[],
    only?: string,
  ): Promise<{ locked: number; cancelled: number }> {
    let claimed: OrderRow[] = [];
    try {
      const cancelled = await deps.db.transaction().execute(async (trx) => {
        claimed = await lockDueOrders(trx, deps.clock(), {
          limit: only === undefined ? CANCEL_BATCH : 1,
          skip: failed,
          ...(only === undefined ? {} : { only }),
        });
        return cancelAllNotAccepted(trx, claimed, deps);
      });
      if (cancelled.length > 0) {
        outcomes.inc({ outcome: 'cancelled' }, cancelled.length);
        deps.nudge();
        deps.nudgeRefunds();
      }
      return { locked: claimed.length, cancelled: cancelled.length };
    } catch (error) {
      if (claimed.length === 0) throw error;
      if (only !== undefined) {
        // Its commit failed: skipped for this sweep, tried again next.
        failed.push(only);
        outcomes.inc({ outcome: 'cancel_failed' });
        deps.logger.warn(
          { err: error, orderId: only },
          'an order past its acceptance window could not be cancelled; it is tried again',
        );
        return { locked: 1, cancelled: 0 };
      }
      let cancelled = 0;
      for (const row of claimed) {
        if (stopping) break;
        cancelled += (await cancelBatch(failed, row.order_id)).cancelled;
      }
      return { locked: claimed.length, cancelled };
    }
  }

  /** Cancel every due order (batches at once until one comes back short): how many. */
  async function cancelDue(): Promise<number> {
    const failed: string[] = [];
    let cancelled = 0;
    const worker = async () => {
      while (!stopping) {
        const batch = await cancelBatch(failed);
        cancelled += batch.cancelled;
        if (batch.locked < CANCEL_BATCH) return;
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
