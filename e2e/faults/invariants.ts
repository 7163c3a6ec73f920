import type pg from 'pg';
import type { FaultPlatform, SimulatorCharge } from './platform.js';
import type { PhaseLog, Workload } from './workload.js';

/** The invariants, in the table's column order. */
export const INVARIANTS = [
  'place 2xx: 1 order, 1 capture',
  'no key charged twice',
  'no open authorization',
  'the ledger balances',
  "the store's orders placed",
  'webhooks all, in order',
  'unaccepted: cancelled, refunded once',
  'ingest runs terminal',
  'answered by deadline',
  'no process stayed down',
] as const;
export type Invariant = (typeof INVARIANTS)[number];

export interface Count {
  checked: number;
  violated: number;
}

/** Counts per invariant for one phase, and what each violation was. */
export class Tally {
  readonly counts = new Map<Invariant, Count>(
    INVARIANTS.map((invariant) => [invariant, { checked: 0, violated: 0 }]),
  );
  readonly violations: string[] = [];
  /** What the phase's checks saw, for its log line (the reconciler's work, say). */
  readonly notes: string[] = [];

  check(invariant: Invariant, holds: boolean, what: () => string): void {
    const count = this.counts.get(invariant)!;
    count.checked += 1;
    if (!holds) {
      count.violated += 1;
      this.violations.push(`${invariant}: ${what()}`);
    }
  }

  get violated(): number {
    return [...this.counts.values()].reduce((sum, count) => sum + count.violated, 0);
  }
}

/** The processor's states in which an authorization was captured (then maybe refunded). */
const CAPTURED = new Set(['captured', 'partially_refunded', 'refunded']);
const WEBHOOK_WAIT_MS = 30_000;
const INGEST_WAIT_MS = 60_000;
/** Longer than the short window and a sweep, with ordering restarting meanwhile. */
const UNACCEPTED_WAIT_MS = 45_000;
/** Longer than a restart takes even on a loaded machine: a process down this long stayed down. */
export const MAX_DOWNTIME_MS = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface OrderRow {
  order_id: string;
  version: number;
  charge_id: string | null;
}

/**
 * Check one phase's work against the truth: the ordering and payments databases, the
 * simulator's ledger, the receivers' logs and the ingest status API. Waits (bounded) for
 * webhooks and ingest runs still on their way.
 */
export async function checkPhase(
  platform: FaultPlatform,
  workload: Workload,
  phase: PhaseLog,
  phaseStartedAt: number,
): Promise<Tally> {
  const tally = new Tally();
  const db = await platform.connectDatabase();
  try {
    // Orders left pending time out up to a sweep after the load stops: wait for their cancels
    // and refunds first, or the processor's ledger below is read between a cancel and its
    // refund and their captures seem to pay for no live order.
    const unaccepted = await settleUnaccepted(phase, db);
    const keys = phase.outcomes.map((outcome) => outcome.key);
    // The answers recorded as refusals: their attempts' orders must not exist.
    const refusedOrders = (
      await db.query<{ order_id: string }>(
        'SELECT order_id FROM ordering.place_attempts WHERE idempotency_key = ANY($1) AND response_status >= 400',
        [keys],
      )
    ).rows.map((row) => row.order_id);
    const placedIds = phase.outcomes.flatMap((outcome) =>
      outcome.orderId ? [outcome.orderId] : [],
    );
    const orders = new Map(
      (
        await db.query<OrderRow>(
          'SELECT order_id, version, charge_id FROM ordering.orders WHERE order_id = ANY($1)',
          [[...placedIds, ...refusedOrders]],
        )
      ).rows.map((row) => [row.order_id, row]),
    );
    const charges = await platform.processorCharges();
    const byPaymentsCharge = new Map<string, SimulatorCharge[]>();
    for (const charge of charges) {
      // Authorized for the payments charge named by its reference.
      if (!charge.reference) continue;
      byPaymentsCharge.set(charge.reference, [
        ...(byPaymentsCharge.get(charge.reference) ?? []),
        charge,
      ]);
    }

    for (const outcome of phase.outcomes) {
      if (outcome.result === 'ok') {
        const order = outcome.orderId ? orders.get(outcome.orderId) : undefined;
        const captures = (
          order?.charge_id ? (byPaymentsCharge.get(order.charge_id) ?? []) : []
        ).filter((charge) => CAPTURED.has(charge.status)).length;
        // A key used again after its retention is a new order, never its first life's.
        const { reusedFrom } = outcome;
        const reused = reusedFrom !== undefined && reusedFrom !== outcome.orderId;
        const first = reused ? orders.get(reusedFrom) : undefined;
        tally.check(
          'place 2xx: 1 order, 1 capture',
          order !== undefined &&
            captures === 1 &&
            (!reused || first === undefined || first.charge_id !== order.charge_id),
          () =>
            `key ${outcome.key} answered 2xx with order ${outcome.orderId}: ` +
            `${order ? 'order stored' : 'NO order stored'}, ${captures} captures` +
            (reused ? ` (a reuse of the key that placed ${outcome.reusedFrom})` : ''),
        );
      } else {
        tally.check(
          'place 2xx: 1 order, 1 capture',
          outcome.result === 'rejected',
          () => `key ${outcome.key} still has no final answer (${outcome.problem ?? 'no answer'})`,
        );
      }
    }
    for (const orderId of refusedOrders) {
      tally.check(
        'place 2xx: 1 order, 1 capture',
        !orders.has(orderId),
        () => `a key was refused, yet its order ${orderId} exists`,
      );
    }

    const phaseCharges = charges.filter(
      (charge) => Date.parse(charge.createdAt) >= phaseStartedAt - 1_000,
    );
    const perKey = new Map<string, number>();
    for (const charge of phaseCharges) {
      perKey.set(charge.idempotencyKey, (perKey.get(charge.idempotencyKey) ?? 0) + 1);
    }
    for (const [key, count] of perKey) {
      tally.check(
        'no key charged twice',
        count === 1,
        () => `processor key ${key}: ${count} charges`,
      );
    }
    for (const charge of phaseCharges) {
      tally.check(
        'no open authorization',
        charge.status !== 'authorized',
        () => `processor authorization ${charge.id} (${charge.idempotencyKey}) is still open`,
      );
    }

    await checkLedger(platform, phaseCharges, db, tally);
    await checkStoreOrders(workload, phase, db, tally);
    checkUnaccepted(unaccepted, phase, tally);
    await checkWebhooks(workload, phase, db, tally);
    await checkIngests(workload, phase, tally);
  } finally {
    await db.end();
  }
  for (const request of phase.pastDeadline) {
    tally.check('answered by deadline', false, () => `${request} got no answer by its deadline`);
  }
  const answered = phase.requests - phase.pastDeadline.length;
  tally.counts.get('answered by deadline')!.checked += answered;

  const notReady = new Set(platform.supervisor.notReady());
  const downtimes = platform.supervisor.downtimes.filter(
    (downtime) => downtime.from >= phaseStartedAt,
  );
  for (const name of platform.supervisor.names()) {
    const longest = Math.max(
      0,
      ...downtimes
        .filter((downtime) => downtime.name === name)
        .map((downtime) => (downtime.to ?? Date.now()) - downtime.from),
    );
    tally.check('no process stayed down', !notReady.has(name) && longest <= MAX_DOWNTIME_MS, () =>
      notReady.has(name)
        ? `${name} is not ready after the recovery`
        : `${name} was down ${(longest / 1000).toFixed(1)} s`,
    );
  }
  return tally;
}

/**
 * The ledger balances: the reconciler, run as an operator runs it, finds every charge
 * explained or released (none it cannot explain, none it could not examine, none still in
 * flight once every key was answered); every capture the processor made in the phase pays
 * for exactly one order, or was refunded; and no two orders share a charge.
 */
async function checkLedger(
  platform: FaultPlatform,
  phaseCharges: readonly SimulatorCharge[],
  db: pg.Client,
  tally: Tally,
): Promise<void> {
  const report = await platform.reconcile();
  const released = report.released.map((charge) => charge.action);
  tally.notes.push(
    `reconciler: ${report.examined} examined, ${report.adopted} adopted from the processor, ` +
      `${released.filter((action) => action === 'voided').length} voided and ` +
      `${released.filter((action) => action === 'refunded').length} refunded, ` +
      `${report.classes.in_flight} in flight`,
  );
  tally.check(
    'the ledger balances',
    report.unexplained.length === 0,
    () =>
      `the reconciler cannot explain ${report.classes.unexplained} charges: ${JSON.stringify(report.unexplained.slice(0, 5))}`,
  );
  tally.check(
    'the ledger balances',
    report.failed === 0,
    () => `the reconciler could not examine ${report.failed} charges`,
  );
  // Every key of the phase has its answer: no charge may still wait on one.
  tally.check(
    'the ledger balances',
    report.classes.in_flight === 0,
    () => `${report.classes.in_flight} charges still in flight after every key was answered`,
  );
  const references = phaseCharges.flatMap((charge) => (charge.reference ? [charge.reference] : []));
  const holders = new Map<string, number>();
  for (const row of (
    await db.query<{ charge_id: string; orders: number }>(
      `SELECT charge_id, count(*)::int AS orders FROM ordering.orders
        WHERE charge_id = ANY($1) AND state <> 'cancelled' GROUP BY charge_id`,
      [references],
    )
  ).rows) {
    holders.set(row.charge_id, row.orders);
  }
  for (const charge of phaseCharges) {
    if (charge.status !== 'captured') continue;
    const orders = charge.reference ? (holders.get(charge.reference) ?? 0) : 0;
    tally.check(
      'the ledger balances',
      orders === 1,
      () =>
        `processor capture ${charge.id} (payments charge ${charge.reference}) pays for ${orders} live orders`,
    );
  }
  const shared = await db.query<{ charge_id: string }>(
    'SELECT charge_id FROM ordering.orders WHERE charge_id IS NOT NULL GROUP BY charge_id HAVING count(*) > 1',
  );
  tally.check(
    'the ledger balances',
    shared.rows.length === 0,
    () => `charges shared by orders: ${shared.rows.map((row) => row.charge_id).join(', ')}`,
  );
}

/**
 * Every order the store took in the phase (it answered 2xx or 409) was placed, or its key
 * expired unfinished and was answered IDEMPOTENCY_KEY_EXPIRED (released, counted and logged
 * as an order the store may hold: only the retention faults make that happen in seconds).
 */
async function checkStoreOrders(
  workload: Workload,
  phase: PhaseLog,
  db: pg.Client,
  tally: Tally,
): Promise<void> {
  const taken = workload.store.takenSince(phase.startedAt);
  if (taken.length === 0) return;
  const placed = new Set(
    (
      await db.query<{ order_id: string }>(
        'SELECT order_id FROM ordering.orders WHERE order_id = ANY($1)',
        [taken],
      )
    ).rows.map((row) => row.order_id),
  );
  const expired = new Set(
    (
      await db.query<{ order_id: string }>(
        `SELECT order_id FROM ordering.place_attempts
          WHERE order_id = ANY($1) AND response_body LIKE '%IDEMPOTENCY_KEY_EXPIRED%'`,
        [taken],
      )
    ).rows.map((row) => row.order_id),
  );
  for (const orderId of taken) {
    tally.check(
      "the store's orders placed",
      placed.has(orderId) || expired.has(orderId),
      () => `the store took order ${orderId}, which the platform never placed`,
    );
  }
}

interface UnacceptedOrder {
  order_id: string;
  status: string;
  cancelled_by: string | null;
  charge_id: string | null;
  /** Refunds of its charge: all of them, and those that succeeded. */
  refunds: number;
  refunded: number;
}

/**
 * Waits (bounded) until every order the store never moved that had a short window is cancelled
 * and its charge refunded, then returns them as they stand.
 */
async function settleUnaccepted(phase: PhaseLog, db: pg.Client): Promise<UnacceptedOrder[]> {
  if (phase.leftPending.length === 0) return [];
  const read = async () =>
    (
      await db.query<UnacceptedOrder>(
        `SELECT o.order_id, o.status, o.cancelled_by, o.charge_id,
                count(r.charge_id)::int AS refunds,
                (count(*) FILTER (WHERE r.status = 'succeeded'))::int AS refunded
           FROM ordering.orders o
           LEFT JOIN payments.refunds r ON r.charge_id = o.charge_id
          WHERE o.order_id = ANY($1) AND o.accept_by - o.created_at < interval '60 seconds'
          GROUP BY o.order_id, o.status, o.cancelled_by, o.charge_id`,
        [phase.leftPending],
      )
    ).rows;
  const settled = (row: UnacceptedOrder) =>
    row.status === 'cancelled' && (row.charge_id === null || row.refunded > 0);
  const deadline = Date.now() + UNACCEPTED_WAIT_MS;
  let rows = await read();
  while (!rows.every(settled) && Date.now() < deadline) {
    await sleep(250);
    rows = await read();
  }
  return rows;
}

/**
 * Every order the store never answered whose window was short (placed while the fault held:
 * a replica still on the 600 s default leaves its orders to time out later) is cancelled by
 * the platform, its charge refunded exactly once (docs/guide/orders.md#acceptance-window).
 */
function checkUnaccepted(rows: readonly UnacceptedOrder[], phase: PhaseLog, tally: Tally): void {
  if (phase.leftPending.length === 0) return;
  tally.notes.push(
    `${rows.length} orders with a short window timed out (of ${phase.leftPending.length} the store never moved)`,
  );
  for (const row of rows) {
    tally.check(
      'unaccepted: cancelled, refunded once',
      row.status === 'cancelled' &&
        row.cancelled_by === 'platform' &&
        (row.charge_id === null || row.refunded === 1),
      () =>
        `order ${row.order_id} is ${row.status} (by ${row.cancelled_by ?? 'nobody'}), ` +
        `${row.refunded} succeeded refunds of ${row.refunds}`,
    );
  }
}

/** Every placed order's versions 1..N (N: its version in the database) arrived, in order. */
async function checkWebhooks(
  workload: Workload,
  phase: PhaseLog,
  db: pg.Client,
  tally: Tally,
): Promise<void> {
  const placed = phase.outcomes.filter((outcome) => outcome.result === 'ok' && outcome.orderId);
  const versions = async () =>
    new Map(
      (
        await db.query<{ order_id: string; version: number }>(
          'SELECT order_id, version FROM ordering.orders WHERE order_id = ANY($1)',
          [placed.map((outcome) => outcome.orderId!)],
        )
      ).rows.map((row) => [row.order_id, row.version]),
    );
  const arrived = (outcome: (typeof placed)[number], expected: Map<string, number>) =>
    (workload.distribution[outcome.partnerIndex]?.receiver?.arrivals.get(outcome.orderId!) ?? [])
      .length >= (expected.get(outcome.orderId!) ?? 0);
  const deadline = Date.now() + WEBHOOK_WAIT_MS;
  let expected = await versions();
  while (!placed.every((outcome) => arrived(outcome, expected)) && Date.now() < deadline) {
    await sleep(250);
    expected = await versions();
  }
  for (const outcome of placed) {
    const orderId = outcome.orderId!;
    const version = expected.get(orderId) ?? 0;
    const got = (
      workload.distribution[outcome.partnerIndex]?.receiver?.arrivals.get(orderId) ?? []
    ).map((arrival) => arrival.version);
    const inOrder =
      version > 0 &&
      got.length === version &&
      got.every((arrivedVersion, index) => arrivedVersion === index + 1);
    tally.check(
      'webhooks all, in order',
      inOrder,
      () =>
        `order ${orderId} at version ${version}: webhooks arrived for versions [${got.join(', ')}]`,
    );
  }
}

/** Every ingest run the workload started ended, succeeded or failed. */
async function checkIngests(workload: Workload, phase: PhaseLog, tally: Tally): Promise<void> {
  const deadline = Date.now() + INGEST_WAIT_MS;
  const last = new Map<string, string>();
  for (const run of phase.ingests) {
    for (;;) {
      try {
        const { data } = await workload.commerce.client.GET(
          '/v1/commerce/stores/{storeId}/catalog-ingest/{catalogIngestId}/status',
          { params: { path: { storeId: run.storeId, catalogIngestId: run.catalogIngestId } } },
        );
        if (data) last.set(run.catalogIngestId, data.status);
      } catch {
        // Asked again below until the deadline.
      }
      const status = last.get(run.catalogIngestId);
      if (status === 'succeeded' || status === 'failed' || Date.now() > deadline) break;
      await sleep(250);
    }
    const status = last.get(run.catalogIngestId);
    tally.check(
      'ingest runs terminal',
      status === 'succeeded' || status === 'failed',
      () => `ingest ${run.catalogIngestId} is still ${status ?? 'unread'}`,
    );
  }
}
