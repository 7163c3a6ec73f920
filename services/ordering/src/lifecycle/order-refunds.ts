import { subjects } from '@pcp/contracts';
import { AppError, type BusClient, type Logger, type RequestContext } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { OrderingDatabase, OrderRefundRow, OrderRow } from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/** Whether cancelling the order refunds it: a card order with a charge and something to pay. */
export function refundsOnCancel<
  Row extends Pick<OrderRow, 'details' | 'charge_id' | 'total_minor'>,
>(row: Row): row is Row & { charge_id: string } {
  return row.details.paymentType === 'CARD' && row.charge_id !== null && row.total_minor > 0;
}

/**
 * Owe the refund of the card order that the caller's transaction cancels, in that transaction:
 * the cancel and its refund are one decision, so an order is never refunded while it stays
 * open, nor cancelled without its refund (docs/guide/orders.md#cancelling). The key is the
 * order's, whoever cancels (its store, the acceptance window, the sandbox's helper), so the
 * order is refunded once. Payments refunds whatever of the capture is left.
 */
export function oweCancelRefund(trx: Db, row: OrderRow): Promise<void> {
  return oweCancelRefunds(trx, [row]);
}

/** `oweCancelRefund` for a batch of orders the caller's transaction cancels, in one statement. */
export async function oweCancelRefunds(trx: Db, rows: readonly OrderRow[]): Promise<void> {
  const owed = rows.filter(refundsOnCancel);
  if (owed.length === 0) return;
  await trx
    .insertInto('order_refunds')
    .values(
      owed.map((row) => ({
        idempotency_key: `order-cancel-${row.order_id}`,
        order_id: row.order_id,
        charge_id: row.charge_id,
        reason: 'cancel' as const,
        amount: null,
        state: 'owed' as const,
      })),
    )
    .onConflict((conflict) => conflict.column('idempotency_key').doNothing())
    .execute();
}

export interface RefundSweeperDeps {
  readonly db: Db;
  readonly bus: BusClient;
  readonly logger: Logger;
  readonly registry: Registry;
  /** How long payments may take to answer one refund (the processor's timeout and some). */
  readonly paymentsTimeoutMs: number;
  /** A refund that failed is asked again after this, doubling each try up to `retryMaxMs`. */
  readonly retryMs: number;
  readonly retryMaxMs: number;
}

/**
 * Refunds one sweep claims at once, all asked of payments at once: each is asked within its
 * lease, and a burst of cancels is refunded at about the pace it is cancelled.
 */
const CLAIM_BATCH = 16;
/**
 * How long a refund may stay owed through failed tries before it is raised to operators: a
 * processor outage of a minute or two heals by itself, longer wants a person.
 */
const RAISE_AFTER_MS = 120_000;
const OWED_CACHE_MS = 15_000;

/** An owed refund as the sweeper claimed it, with whom payments knows its charge by. */
type ClaimedRefund = OrderRefundRow & Pick<OrderRow, 'partner_id' | 'end_user_id' | 'mode'>;

/**
 * The refund sweeper, on every replica: asks payments for every owed refund until payments
 * answers it (each claimed with SKIP LOCKED and its next try pushed past the call's length
 * first, so replicas never ask for one at once, and one whose replica dies is asked again
 * after that). A refund payments cannot make now is asked again after a back-off that doubles
 * up to `retryMaxMs`; one refused for good, or still failing `RAISE_AFTER_MS` after it was
 * owed, is raised once (an error log, `pcp_order_refunds_raised_total`, and the `raised` gauge the
 * alert watches) and still asked at the capped back-off, so it heals when its cause is fixed.
 */
export function createRefundSweeper(deps: RefundSweeperDeps) {
  const { db } = deps;
  const outcomes = new Counter({
    name: 'pcp_order_refunds_total',
    help: 'Owed refunds the refund sweeper asked payments for, by outcome: settled, failed (asked again after its back-off), raised (to operators, once per refund)',
    labelNames: ['outcome'] as const,
    registers: [deps.registry],
  });
  for (const outcome of ['settled', 'failed', 'raised']) outcomes.inc({ outcome }, 0);
  // One count per scrape window (however many scrape), afresh after this replica changed it.
  let owed: { at: number; owed: number; raised: number } | undefined;
  new Gauge({
    name: 'pcp_order_refunds_owed',
    help: 'Refunds ordering owes and payments has not answered yet: owed (all of them), raised (of those, the ones raised to operators: refused for good or failing for a while)',
    labelNames: ['state'] as const,
    registers: [deps.registry],
    async collect() {
      if (!owed || Date.now() - owed.at > OWED_CACHE_MS) {
        const row = await db
          .selectFrom('order_refunds')
          .select((eb) => [
            eb.fn.countAll<number>().as('owed'),
            eb.fn.count<number>('raised_at').as('raised'),
          ])
          .where('state', '=', 'owed')
          .executeTakeFirstOrThrow();
        owed = { at: Date.now(), owed: Number(row.owed), raised: Number(row.raised) };
      }
      this.set({ state: 'owed' }, owed.owed);
      this.set({ state: 'raised' }, owed.raised);
    },
  });

  let running: Promise<number> | undefined;
  let again = false;
  let stopping = false;

  /** Due refunds no other sweep holds, each pushed past one call's length before it is asked. */
  async function claimDue(): Promise<ClaimedRefund[]> {
    const leaseMs = deps.paymentsTimeoutMs + 5_000;
    const { rows } = await sql<ClaimedRefund>`
      update order_refunds r
         set next_try_at = now() + ${leaseMs} * interval '1 millisecond', tries = r.tries + 1
        from (select idempotency_key from order_refunds
               where state = 'owed' and next_try_at <= now()
               order by next_try_at
               limit ${CLAIM_BATCH}
               for update skip locked) due,
             orders o
       where r.idempotency_key = due.idempotency_key and o.order_id = r.order_id
      returning r.*, o.partner_id, o.end_user_id, o.mode`.execute(db);
    return rows;
  }

  async function settle(refund: ClaimedRefund): Promise<void> {
    // Payments keeps charges per placing partner and end user, in the order's mode.
    const placer: RequestContext = {
      requestId: `order-refund-${refund.order_id}`,
      partnerId: refund.partner_id,
      partnerKind: 'distribution',
      endUserId: refund.end_user_id,
      mode: refund.mode,
    };
    try {
      await deps.bus.request(
        subjects.payments.refund,
        {
          chargeId: refund.charge_id,
          idempotencyKey: refund.idempotency_key,
          ...(refund.amount === null ? {} : { amount: refund.amount }),
        },
        placer,
        { timeoutMs: deps.paymentsTimeoutMs },
      );
    } catch (error) {
      await failed(refund, error);
      return;
    }
    await db
      .updateTable('order_refunds')
      .set({ state: 'settled', settled_at: sql<Date>`now()`, last_error: null })
      .where('idempotency_key', '=', refund.idempotency_key)
      .where('state', '=', 'owed')
      .execute();
    outcomes.inc({ outcome: 'settled' });
    owed = undefined; // counted afresh at the next scrape
  }

  async function failed(refund: ClaimedRefund, error: unknown): Promise<void> {
    outcomes.inc({ outcome: 'failed' });
    const final = error instanceof AppError && !error.info.retryable;
    const reason = error instanceof AppError ? `${error.code}: ${error.message}` : String(error);
    const backoffMs = Math.min(deps.retryMs * 2 ** Math.min(refund.tries - 1, 30), deps.retryMaxMs);
    const owedMs = Date.now() - refund.created_at.getTime();
    const raise = refund.raised_at === null && (final || owedMs >= RAISE_AFTER_MS);
    await db
      .updateTable('order_refunds')
      .set({
        next_try_at: sql<Date>`now() + ${backoffMs} * interval '1 millisecond'`,
        last_error: reason.slice(0, 500),
        ...(raise ? { raised_at: sql<Date>`now()` } : {}),
      })
      .where('idempotency_key', '=', refund.idempotency_key)
      .where('state', '=', 'owed')
      .execute();
    const fields = {
      orderId: refund.order_id,
      chargeId: refund.charge_id,
      tries: refund.tries,
      retryInMs: backoffMs,
      reason,
    };
    if (raise) {
      outcomes.inc({ outcome: 'raised' });
      owed = undefined;
      deps.logger.error(
        fields,
        "a cancelled order's refund cannot be settled; it is asked again with a back-off (docs/operations.md#refunds-owed)",
      );
    } else if (refund.raised_at === null) {
      deps.logger.warn(fields, "a cancelled order's refund failed; it is asked again");
    }
  }

  async function sweepOnce(): Promise<number> {
    let settled = 0;
    for (;;) {
      const due = await claimDue();
      await Promise.all(due.map(settle));
      settled += due.length;
      if (due.length < CLAIM_BATCH || stopping) return settled;
    }
  }

  function sweep(): Promise<number> {
    if (stopping) return Promise.resolve(0);
    if (running) {
      // A refund owed after this sweep claimed its batch waits for the next, not the timer.
      again = true;
      return running;
    }
    running = sweepOnce().finally(() => {
      running = undefined;
      if (again && !stopping) {
        again = false;
        void sweep().catch((error: unknown) =>
          deps.logger.warn({ err: error }, 'sweeping owed refunds failed'),
        );
      }
    });
    return running;
  }

  return {
    /** One sweep (the timer's, or a test's); a sweep already running is joined. */
    sweep,
    /** A cancel committed a refund: sweep now rather than at the next tick. */
    nudge(): void {
      sweep().catch((error: unknown) =>
        deps.logger.warn({ err: error }, 'sweeping owed refunds failed'),
      );
    },
    /** Start no more work; wait for the sweep in flight (what it left is taken up later). */
    async stop(): Promise<void> {
      stopping = true;
      await running?.catch(() => undefined);
    },
  };
}

export type RefundSweeper = ReturnType<typeof createRefundSweeper>;

/** Owed refunds an operator lists at most (`npm run admin -- refunds-owed`). */
export const OWED_REFUNDS_LIST_MAX = 500;

/**
 * `refunds-owed`: the refunds ordering still owes, raised ones first, then oldest first, with
 * how often each was asked and why it last failed; and how many are owed and raised in all.
 */
export async function listOwedRefunds(db: Db, limit: number) {
  const [rows, counts] = await Promise.all([
    db
      .selectFrom('order_refunds')
      .select([
        'order_id',
        'charge_id',
        'reason',
        'tries',
        'next_try_at',
        'last_error',
        'raised_at',
        'created_at',
      ])
      .where('state', '=', 'owed')
      .orderBy(sql`raised_at is null`)
      .orderBy('created_at')
      .limit(limit)
      .execute(),
    db
      .selectFrom('order_refunds')
      .select((eb) => [
        eb.fn.countAll<number>().as('owed'),
        eb.fn.count<number>('raised_at').as('raised'),
      ])
      .where('state', '=', 'owed')
      .executeTakeFirstOrThrow(),
  ]);
  return {
    owed: Number(counts.owed),
    raised: Number(counts.raised),
    refunds: rows.map((row) => ({
      orderId: row.order_id,
      chargeId: row.charge_id,
      reason: row.reason,
      tries: row.tries,
      nextTryAt: row.next_try_at.toISOString(),
      lastError: row.last_error,
      raisedAt: row.raised_at?.toISOString() ?? null,
      owedSince: row.created_at.toISOString(),
    })),
  };
}
