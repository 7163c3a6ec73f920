import { maxChargesPerReconciliation, subjects, type ChargeOwners } from '@pcp/contracts';
import type { BusClient, Logger } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ChargeActions } from '../charges/charge-actions.js';
import type { ChargeRow, PaymentsDatabase } from '../db/payments.table.js';
import { judgeCharge, ledgerClasses, type LedgerClass, type Verdict } from '../domain/ledger.js';
import type { ModeProcessors } from '../processor/mode-processors.js';
import type { ProcessorAuthorization } from '../processor/payment-processor.js';

export interface ReconcilerDeps {
  readonly db: Kysely<PaymentsDatabase>;
  readonly bus: BusClient;
  /** A charge is looked up at the processor of its own mode. */
  readonly processors: ModeProcessors;
  readonly actions: ChargeActions;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly clock: () => Date;
  /** See `LedgerBounds.inFlightMs`. */
  readonly inFlightMs: number;
  /**
   * A charge changed this recently (or with a refund asked this recently) may have a call of
   * payments' own in flight: it is left in flight for this run, so the reconciler never races
   * the operation whose answer it would otherwise adopt or undo.
   */
  readonly quietMs: number;
  /** Charges one run examines at most (the rest wait for the next run). */
  readonly maxChargesPerRun: number;
}

/** One unexplained charge of a report: enough for an operator to find it, nothing more. */
export interface UnexplainedCharge {
  readonly chargeId: string;
  readonly orderId: string | null;
  readonly status: string;
  readonly reason: string;
}

/** What one reconciliation found and did (`npm run admin -- reconcile` prints it). */
export interface ReconciliationReport {
  readonly startedAt: string;
  readonly finishedAt: string;
  /** Another replica was reconciling: this run did nothing. */
  readonly skipped: boolean;
  readonly examined: number;
  /** Each charge's class once the run was done with it (released ones are voided/refunded). */
  readonly classes: Record<LedgerClass, number>;
  /** Charges the run released: voided or refunded, with why. */
  readonly released: { chargeId: string; orderId: string | null; action: string; why: string }[];
  /**
   * Releases the run did not make because the charge's owners, read again just before,
   * disagreed with the run's first read (each is logged as an error: it should never happen).
   */
  readonly withheld: { chargeId: string; orderId: string | null; why: string }[];
  /** Where the processor had moved on and payments had not recorded it (a lost answer). */
  readonly adopted: number;
  /** At most `MAX_LISTED` of them; `classes.unexplained` counts them all. */
  readonly unexplained: UnexplainedCharge[];
  /** Charges the run could not examine now (processor or ordering unavailable). */
  readonly failed: number;
  /** More charges were waiting than one run examines. */
  readonly more: boolean;
}

const BATCH = 100;
const CONCURRENCY = 8;
const MAX_LISTED = 100;
/** One reconciler at a time across the replicas of a deployment: its lease row and length. */
const LEASE_NAME = 'reconciler';
const LEASE_MS = 120_000;
/** The classes a charge leaves on its own, or with an operator's help (a gauge each). */
const UNRESOLVED = ['in_flight', 'unexplained'] as const;
const UNRESOLVED_CACHE_MS = 15_000;

/**
 * The ledger's reconciler (one replica at a time): for every charge not yet found explained
 * since it last changed, it asks the processor what it holds and ordering which orders and
 * place attempts hold the charge, then judges it (`domain/ledger.ts`). What the processor
 * did and payments never recorded (a lost answer) is recorded first; money held for no order
 * is released; what cannot be decided is reported and counted until someone resolves it.
 */
export function createReconciler(deps: ReconcilerDeps) {
  const { db } = deps;
  const examined = new Counter({
    name: 'pcp_ledger_charges_examined_total',
    help: 'Charges the reconciler judged, by the class it found them in (released ones count as voided or refunded after it released them)',
    labelNames: ['class'] as const,
    registers: [deps.registry],
  });
  const releases = new Counter({
    name: 'pcp_ledger_releases_total',
    help: 'Charges the reconciler released because no order will use them: voided (an authorization) or refunded (a capture); withheld: a release not made because the owners read again disagreed',
    labelNames: ['action'] as const,
    registers: [deps.registry],
  });
  for (const action of ['voided', 'refunded', 'withheld']) releases.inc({ action }, 0);
  const runs = new Counter({
    name: 'pcp_ledger_reconciliations_total',
    help: 'Reconciler runs: completed, skipped (another replica held its lease), failed',
    labelNames: ['outcome'] as const,
    registers: [deps.registry],
  });
  // Every outcome from zero: increase() then sees the first, and a stall is a flat series.
  for (const outcome of ['completed', 'skipped', 'failed']) runs.inc({ outcome }, 0);
  let unresolved: { at: number; counts: Map<string, number> } | undefined;
  new Gauge({
    name: 'pcp_ledger_unresolved_charges',
    help: 'Charges whose last verdict was not settled, by class: in_flight (held for a place attempt that may still use it) and unexplained (neither captured for one live order, refunded, voided, declined nor in flight: each needs an operator)',
    labelNames: ['class'] as const,
    registers: [deps.registry],
    async collect() {
      // One indexed count per scrape window, however many scrape.
      if (!unresolved || Date.now() - unresolved.at > UNRESOLVED_CACHE_MS) {
        const rows = await db
          .selectFrom('charges')
          .select(['ledger_class', (eb) => eb.fn.countAll<number>().as('count')])
          .where('ledger_class', 'in', UNRESOLVED)
          .groupBy('ledger_class')
          .execute();
        unresolved = {
          at: Date.now(),
          counts: new Map(rows.map((row) => [row.ledger_class ?? '', Number(row.count)])),
        };
      }
      for (const ledgerClass of UNRESOLVED) {
        this.set({ class: ledgerClass }, unresolved.counts.get(ledgerClass) ?? 0);
      }
    },
  });

  let stopping = false;
  let running: Promise<unknown> | undefined;

  function reconcile(): Promise<ReconciliationReport> {
    const run = reconcileOnce();
    running = run.catch(() => undefined);
    return run;
  }

  async function reconcileOnce(): Promise<ReconciliationReport> {
    const startedAt = deps.clock().toISOString();
    const holder = randomUUID();
    try {
      if (!(await takeLease(holder))) {
        runs.inc({ outcome: 'skipped' });
        return { ...emptyReport(startedAt), skipped: true };
      }
      // Renewed while the run lasts: a replica that dies lets another take over soon.
      const renewal = setInterval(() => {
        takeLease(holder).catch((error: unknown) =>
          deps.logger.warn({ err: error }, 'renewing the reconciler lease failed'),
        );
      }, LEASE_MS / 3);
      try {
        const report = await examineAll(startedAt);
        runs.inc({ outcome: 'completed' });
        return report;
      } finally {
        clearInterval(renewal);
        await db
          .deleteFrom('reconciler_lease')
          .where('name', '=', LEASE_NAME)
          .where('holder', '=', holder)
          .execute();
      }
    } catch (error) {
      runs.inc({ outcome: 'failed' });
      throw error;
    }
  }

  /** Take (or keep) the one lease, unless another holder's is still running; true if held. */
  async function takeLease(holder: string): Promise<boolean> {
    const until = sql<Date>`now() + ${LEASE_MS} * interval '1 millisecond'`;
    const taken = await db
      .insertInto('reconciler_lease')
      .values({ name: LEASE_NAME, holder, expires_at: until })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ holder, expires_at: until })
          .where((eb) =>
            eb.or([
              eb('reconciler_lease.holder', '=', holder),
              eb('reconciler_lease.expires_at', '<', sql<Date>`now()`),
            ]),
          ),
      )
      .returning('holder')
      .executeTakeFirst();
    return taken?.holder === holder;
  }

  async function examineAll(startedAt: string): Promise<ReconciliationReport> {
    const tally = emptyReport(startedAt);
    const runId = randomUUID();
    let after: string | undefined;
    let seen = 0;
    while (seen < deps.maxChargesPerRun && !stopping) {
      const batch = await unreconciledCharges(
        Math.min(BATCH, maxChargesPerReconciliation, deps.maxChargesPerRun - seen),
        after,
      );
      if (batch.length === 0) break;
      seen += batch.length;
      const last = batch.at(-1)!;
      after = last.charge_id;
      const owners = await ownersOf(batch, runId);
      for (let start = 0; start < batch.length; start += CONCURRENCY) {
        await Promise.all(
          batch
            .slice(start, start + CONCURRENCY)
            .map((row) => examine(row, owners.get(row.charge_id), tally, runId)),
        );
      }
    }
    tally.examined = seen;
    tally.more = seen >= deps.maxChargesPerRun;
    tally.finishedAt = deps.clock().toISOString();
    return tally;
  }

  /** Who holds each charge, as ordering answers from one snapshot of its database. */
  async function ownersOf(
    rows: readonly ChargeRow[],
    runId: string,
  ): Promise<Map<string, ChargeOwners['owners'][number]>> {
    const { owners } = await deps.bus.request(
      subjects.ordering.chargeOwners,
      { charges: rows.map((row) => ({ chargeId: row.charge_id, orderId: row.order_id })) },
      { requestId: `reconcile-${runId}` },
    );
    return new Map(owners.map((owner) => [owner.chargeId, owner]));
  }

  /** Charges never found explained, or changed since, by id (a keyset: each once per run). */
  function unreconciledCharges(limit: number, after: string | undefined): Promise<ChargeRow[]> {
    let query = db
      .selectFrom('charges')
      .selectAll()
      .where(sql<boolean>`(reconciled_at is null or reconciled_at < updated_at)`);
    if (after) query = query.where('charge_id', '>', after);
    return query.orderBy('charge_id').limit(limit).execute();
  }

  async function examine(
    row: ChargeRow,
    owner: ChargeOwners['owners'][number] | undefined,
    tally: MutableReport,
    runId: string,
  ): Promise<void> {
    try {
      if (await busy(row)) {
        tally.classes.in_flight += 1;
        examined.inc({ class: 'in_flight' });
        await markJudged(row, 'in_flight');
        return;
      }
      const learnt = await withProcessorState(row, tally);
      let current = learnt.row;
      let verdict = judge(current, owner);
      // The processor disagreeing with payments outranks any rule about orders.
      if (learnt.mismatch) verdict = { class: 'unexplained', reason: learnt.mismatch };
      if ('release' in verdict) {
        // Money leaves only on the owners as they are now: read again for this one charge.
        const again = judge(current, (await ownersOf([current], runId)).get(current.charge_id));
        if (!('release' in again)) {
          await withhold(current, verdict.release, again, tally);
          verdict = again;
        }
      }
      let ledgerClass: LedgerClass;
      if ('release' in verdict) {
        current = await deps.actions.releaseCharge(current);
        const action = current.status === 'voided' ? 'voided' : 'refunded';
        releases.inc({ action });
        await recordAction(current, action, verdict.release);
        tally.released.push({
          chargeId: row.charge_id,
          orderId: row.order_id,
          action,
          why: verdict.release,
        });
        ledgerClass = action;
      } else {
        ledgerClass = verdict.class;
        if (verdict.class === 'unexplained') {
          deps.logger.error(
            { chargeId: row.charge_id, orderId: row.order_id, reason: verdict.reason },
            'the reconciler cannot explain a charge',
          );
          if (tally.unexplained.length < MAX_LISTED) {
            tally.unexplained.push({
              chargeId: row.charge_id,
              orderId: row.order_id,
              status: current.status,
              reason: verdict.reason,
            });
          }
        }
      }
      tally.classes[ledgerClass] += 1;
      examined.inc({ class: ledgerClass });
      await markJudged(current, ledgerClass);
    } catch (error) {
      tally.failed += 1;
      deps.logger.warn(
        { err: error, chargeId: row.charge_id },
        'the reconciler could not examine a charge now; the next run does',
      );
    }
  }

  function judge(row: ChargeRow, owner: ChargeOwners['owners'][number] | undefined): Verdict {
    return judgeCharge(
      {
        status: row.status,
        amount: row.amount,
        currency: row.currency,
        capturedAmount: row.captured_amount,
        refundedAmount: row.refunded_amount,
        createdAt: row.created_at,
        keyedByOrder: row.order_id !== null,
      },
      owner ?? { orders: [], attempt: null },
      { now: deps.clock(), inFlightMs: deps.inFlightMs },
    );
  }

  /**
   * A release the owners read again overturned: the first read was not one snapshot, or
   * ordering moved an answered attempt on. Neither should ever happen; it is kept and logged.
   */
  async function withhold(
    row: ChargeRow,
    release: string,
    again: Verdict,
    tally: MutableReport,
  ): Promise<void> {
    const why = `${release}, yet the owners read again say ${'class' in again ? again.class : 'release'}`;
    releases.inc({ action: 'withheld' });
    deps.logger.error(
      { chargeId: row.charge_id, orderId: row.order_id, why },
      "the reconciler withheld a release: a charge's owners changed between two reads",
    );
    tally.withheld.push({ chargeId: row.charge_id, orderId: row.order_id, why });
    await recordAction(row, 'withheld', why);
  }

  /** Keep what the reconciler did on its own, for operators (`admin reconciler-actions`). */
  async function recordAction(
    row: ChargeRow,
    action: 'voided' | 'refunded' | 'withheld',
    reason: string,
  ): Promise<void> {
    await db
      .insertInto('reconciler_actions')
      .values({ charge_id: row.charge_id, order_id: row.order_id, action, reason })
      .execute();
  }

  /** Whether payments itself may still be working on the charge (see `quietMs`). */
  async function busy(row: ChargeRow): Promise<boolean> {
    const quietSince = deps.clock().getTime() - deps.quietMs;
    if (row.updated_at.getTime() > quietSince) return true;
    const recent = await db
      .selectFrom('refunds')
      .select('refund_id')
      .where('charge_id', '=', row.charge_id)
      .where('status', '=', 'pending')
      .where('created_at', '>', new Date(quietSince))
      .executeTakeFirst();
    return recent !== undefined;
  }

  /**
   * The charge as the processor has it: an unknown authorization is learnt, and an answer
   * the processor gave but payments never recorded (a capture, a void, a refund) is adopted.
   * Any other difference is a mismatch, for the report.
   */
  async function withProcessorState(
    row: ChargeRow,
    tally: MutableReport,
  ): Promise<{ row: ChargeRow; mismatch?: string }> {
    if (row.status === 'authorizing') {
      const learnt = await deps.actions.learnAuthorization(row);
      if (learnt !== row) tally.adopted += 1;
      return { row: learnt };
    }
    if (!row.processor_authorization_id) return { row };
    const held: ProcessorAuthorization | undefined = await deps.processors
      .forMode(row.mode)
      .retrieve({ authorizationId: row.processor_authorization_id }, {});
    if (!held) return { row, mismatch: 'the processor does not know its authorization' };
    const adopted = await deps.actions.adoptProcessorState(row, held);
    if (adopted !== row) {
      tally.adopted += 1;
      return { row: adopted };
    }
    const differs =
      held.status !== row.status ||
      held.capturedAmount !== row.captured_amount ||
      held.refundedAmount !== row.refunded_amount;
    return differs
      ? {
          row,
          mismatch: `the processor has it ${held.status} (captured ${held.capturedAmount}, refunded ${held.refundedAmount}) where payments has ${row.status} (captured ${row.captured_amount}, refunded ${row.refunded_amount})`,
        }
      : { row };
  }

  /** Keep the verdict; an explained charge is not looked at again until it changes. */
  async function markJudged(row: ChargeRow, ledgerClass: LedgerClass): Promise<void> {
    const settled = ledgerClass !== 'in_flight' && ledgerClass !== 'unexplained';
    await db
      .updateTable('charges')
      .set({
        ledger_class: ledgerClass,
        // now() is at least updated_at of any change this run made: explained until it moves.
        reconciled_at: settled ? sql<Date>`greatest(now(), updated_at)` : null,
      })
      .where('charge_id', '=', row.charge_id)
      // Unchanged since it was judged (pg's microseconds, as the Date read in milliseconds).
      .where(sql<Date>`date_trunc('milliseconds', updated_at)`, '=', row.updated_at)
      .execute();
  }

  return {
    reconcile,
    /** Let a run in progress finish the batch it is in, and wait for it. */
    async stop(): Promise<void> {
      stopping = true;
      await running;
    },
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;

type MutableReport = {
  -readonly [K in keyof ReconciliationReport]: ReconciliationReport[K];
};

function emptyReport(startedAt: string): MutableReport {
  return {
    startedAt,
    finishedAt: startedAt,
    skipped: false,
    examined: 0,
    classes: Object.fromEntries(ledgerClasses.map((name) => [name, 0])) as Record<
      LedgerClass,
      number
    >,
    released: [],
    withheld: [],
    adopted: 0,
    unexplained: [],
    failed: 0,
    more: false,
  };
}

/** Reconciler actions an operator lists at most (`npm run admin -- reconciler-actions`). */
export const RECONCILER_ACTIONS_LIST_MAX = 500;

/**
 * `reconciler-actions`: what the reconciler did on its own, newest first: each release
 * (voided, refunded) is money the path that should have released it did not; each withheld
 * one, a charge whose owners changed between two reads.
 */
export async function listReconcilerActions(db: Kysely<PaymentsDatabase>, limit: number) {
  const rows = await db
    .selectFrom('reconciler_actions')
    .select(['charge_id', 'order_id', 'action', 'reason', 'acted_at'])
    .orderBy('action_id', 'desc')
    .limit(limit)
    .execute();
  return {
    actions: rows.map((row) => ({
      chargeId: row.charge_id,
      orderId: row.order_id,
      action: row.action,
      reason: row.reason,
      actedAt: row.acted_at.toISOString(),
    })),
  };
}
