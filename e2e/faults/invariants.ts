import pg from 'pg';
import type { ReconciliationReport } from '@pcp/payments';
import type { FaultPlatform, SimulatorCharge } from './platform.js';
import type { PhaseLog, PlaceOutcome, Workload } from './workload.js';

/**
 * The invariants, in the table's column order. Every money invariant is checked against the
 * processor's own ledger (the simulator's `GET /v1/charges`), never against payments' view of
 * it: payments' rows are what a defect would get wrong.
 */
export const INVARIANTS = [
  'place 2xx: 1 order, 1 capture',
  'one key, one capture',
  'no open authorization',
  'orders paid as they stand',
  'refunds owed are settled',
  'the ledger balances',
  'unaccepted: cancelled, refunded once',
  "the store's orders placed",
  'webhooks all, in order',
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
/** Longer than the refund sweeper's interval and a few of its back-offs after a fault ends. */
const REFUND_WAIT_MS = 45_000;
/** How often the place attempts of a running phase are read (see `AttemptWatch`). */
const ATTEMPT_WATCH_MS = 1_000;
/** Longer than a restart takes even on a loaded machine: a process down this long stayed down. */
export const MAX_DOWNTIME_MS = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A place attempt as the checks know it: its key and when it got its final answer. */
interface AttemptSeen {
  readonly key: string;
  readonly status: number | null;
  /** When its final answer was recorded (ms since the epoch); null while unanswered. */
  readonly answeredAt: number | null;
}

/**
 * The place attempts of a phase, by order id, read every second while the phase runs and once
 * more at its checks: an answered attempt is deleted when its retention ends (seconds, in the
 * retention faults), and the checks still need to know which key an order id was a life of,
 * and when that key was answered.
 */
export class AttemptWatch {
  readonly seen = new Map<string, AttemptSeen>();
  readonly #pool: pg.Pool;
  readonly #since: Date;
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;

  private constructor(databaseUrl: string, since: number) {
    this.#since = new Date(since);
    // One connection, made again after a database restart; its errors are the next read's.
    this.#pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    this.#pool.on('error', () => undefined);
  }

  static start(platform: FaultPlatform, since: number): AttemptWatch {
    const watch = new AttemptWatch(platform.databaseUrl, since);
    watch.#timer = setInterval(() => {
      // A read still running (a slow or restarting database) is not doubled.
      watch.#reading ??= watch
        .read(watch.#pool)
        .catch(() => undefined)
        .finally(() => {
          watch.#reading = undefined;
        });
    }, ATTEMPT_WATCH_MS);
    return watch;
  }

  /** Read the attempts changed since the phase started (answers never change once given). */
  async read(db: pg.Pool | pg.Client): Promise<void> {
    const { rows } = await db.query<{
      order_id: string;
      idempotency_key: string;
      response_status: number | null;
      updated_at: Date;
    }>(
      `SELECT order_id, idempotency_key, response_status, updated_at
         FROM ordering.place_attempts WHERE updated_at >= $1`,
      [this.#since],
    );
    for (const row of rows) {
      if (this.seen.get(row.order_id)?.answeredAt) continue;
      this.seen.set(row.order_id, {
        key: row.idempotency_key,
        status: row.response_status,
        answeredAt: row.response_status === null ? null : row.updated_at.getTime(),
      });
    }
  }

  /** Stop reading every second (once, however often asked); `seen` keeps what was read. */
  stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#stopped ??= (async () => {
      await this.#reading;
      await this.#pool.end();
    })();
    return this.#stopped;
  }
}

interface OrderRow {
  order_id: string;
  state: 'open' | 'completed' | 'cancelled';
  status: string;
  version: number;
  charge_id: string | null;
  total_minor: number;
  payment_type: string | null;
  /** Created or changed since the phase started. */
  of_phase: boolean;
}

/**
 * What the money checks read, once, before the reconciler is run: the processor's ledger
 * first, then the orders, payments' charge → order links and the place attempts.
 */
interface PhaseState {
  /** The processor's authorizations made during the phase. */
  readonly charges: readonly SimulatorCharge[];
  /** Every processor authorization, by the payments charge it was made for (its reference). */
  readonly byReference: ReadonlyMap<string, readonly SimulatorCharge[]>;
  /** Payments' charges named by a phase authorization or order: the order id each is keyed by. */
  readonly chargeOrder: ReadonlyMap<string, string | null>;
  /** The orders of the phase, the 2xx answers' and the first lives of reused keys. */
  readonly orders: ReadonlyMap<string, OrderRow>;
  /** Place attempts by order id (read during the phase and now). */
  readonly attempts: ReadonlyMap<string, AttemptSeen>;
  /** What is known of order ids phase captures name that no attempt of the phase does. */
  readonly stray: ReadonlyMap<string, string>;
}

/**
 * Check one phase's work against the truth: the processor simulator's ledger, the ordering
 * and payments databases, the receivers' logs and the ingest status API. Waits (bounded) for
 * what the phase still owes (cancels and refunds, webhooks, ingest runs); then reads the state
 * every money check uses, checks it, and only then runs the ledger's reconciler: a safety net
 * that cleaned up first would hide the defect it would have caught.
 */
export async function checkPhase(
  platform: FaultPlatform,
  workload: Workload,
  phase: PhaseLog,
  phaseStartedAt: number,
  attempts: AttemptWatch,
): Promise<Tally> {
  const tally = new Tally();
  const db = await platform.connectDatabase();
  const since = new Date(phaseStartedAt);
  try {
    // Orders left pending time out up to a sweep after the load stops, and cancels owe
    // refunds the sweeper settles soon after: wait for both, or the processor's ledger below is
    // read between a cancel and its refund.
    const unaccepted = await settleUnaccepted(phase, db);
    const refunds = await settleRefunds(db, since);
    await attempts.stop();
    await attempts.read(db);
    const state = await readState(platform, db, phase, since, attempts.seen);

    checkPlaced(state, phase, tally);
    checkCaptures(state, phase, tally);
    for (const charge of state.charges) {
      tally.check(
        'no open authorization',
        charge.status !== 'authorized',
        () => `processor authorization ${charge.id} (${charge.idempotencyKey}) is still open`,
      );
    }
    checkOrdersPaid(state, tally);
    if (refunds.length > 0) {
      const again = refunds.filter((refund) => refund.tries > 1).length;
      tally.notes.push(`${refunds.length} refunds owed, ${again} of them asked more than once`);
    }
    for (const refund of refunds) {
      tally.check(
        'refunds owed are settled',
        refund.state === 'settled' && refund.raised_at === null,
        () =>
          `order ${refund.order_id}'s refund (${refund.idempotency_key}) is ${refund.state}` +
          `${refund.raised_at ? ', raised to operators' : ''} after ${refund.tries} tries` +
          (refund.last_error ? ` (last: ${refund.last_error})` : ''),
      );
    }
    checkUnaccepted(unaccepted, state, phase, tally);
    await checkLedger(platform, db, state, since, tally);
    await checkStoreOrders(workload, phase, db, tally);
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

async function readState(
  platform: FaultPlatform,
  db: pg.Client,
  phase: PhaseLog,
  since: Date,
  attempts: ReadonlyMap<string, AttemptSeen>,
): Promise<PhaseState> {
  const processor = await platform.processorCharges();
  const byReference = new Map<string, SimulatorCharge[]>();
  for (const charge of processor) {
    if (charge.reference === null) continue;
    byReference.set(charge.reference, [...(byReference.get(charge.reference) ?? []), charge]);
  }
  // No slack: the simulator's clock is this machine's, and a phase starts only after the last
  // one's keys were all answered, its last authorization maybe a moment before.
  const charges = processor.filter((charge) => Date.parse(charge.createdAt) >= since.getTime());
  const named = phase.outcomes.flatMap((outcome) => [
    ...(outcome.orderId ? [outcome.orderId] : []),
    ...(outcome.reusedFrom ? [outcome.reusedFrom] : []),
  ]);
  const orders = new Map(
    (
      await db.query<OrderRow>(
        `SELECT order_id, state, status, version, charge_id,
                total_minor::float8 AS total_minor, details->>'paymentType' AS payment_type,
                (created_at >= $2 OR updated_at >= $2) AS of_phase
           FROM ordering.orders
          WHERE order_id = ANY($1) OR created_at >= $2 OR updated_at >= $2`,
        [[...named, ...attempts.keys()], since],
      )
    ).rows.map((row) => [row.order_id, row]),
  );
  const references = [
    ...charges.flatMap((charge) => (charge.reference ? [charge.reference] : [])),
    ...[...orders.values()].flatMap((order) => (order.charge_id ? [order.charge_id] : [])),
  ];
  const chargeOrder = new Map(
    (
      await db.query<{ charge_id: string; order_id: string | null }>(
        'SELECT charge_id::text, order_id::text FROM payments.charges WHERE charge_id::text = ANY($1)',
        [references],
      )
    ).rows.map((row) => [row.charge_id, row.order_id]),
  );
  // What became of an order id a phase capture names that no attempt of the phase does (for
  // the violation's text: its attempt from before the phase, or its order).
  const strays = [...new Set(chargeOrder.values())].filter(
    (orderId): orderId is string => orderId !== null && !attempts.has(orderId),
  );
  const stray = new Map<string, string>();
  if (strays.length > 0) {
    const { rows } = await db.query<{ order_id: string; about: string }>(
      `SELECT a.order_id::text AS order_id,
              concat('its attempt ', a.idempotency_key, ' is ', a.step, ' (answered ',
                     coalesce(a.response_status::text, 'not yet'), ', created ', a.created_at,
                     ', changed ', a.updated_at, ')',
                     coalesce(', its order ' || o.state || ' created ' || o.created_at, ', no order')) AS about
         FROM ordering.place_attempts a LEFT JOIN ordering.orders o ON o.order_id = a.order_id
        WHERE a.order_id = ANY($1)`,
      [strays],
    );
    for (const row of rows) stray.set(row.order_id, row.about);
  }
  return { charges, byReference, chargeOrder, orders, attempts, stray };
}

/** The processor's authorizations of a payments charge that were captured (maybe refunded since). */
function capturesOf(state: PhaseState, chargeId: string | null): readonly SimulatorCharge[] {
  if (chargeId === null) return [];
  return (state.byReference.get(chargeId) ?? []).filter((charge) => CAPTURED.has(charge.status));
}

/**
 * Every key answered 2xx has its order, and that order's charge exactly one authorization the
 * processor captured; every key refused (a store's refusal too: STORE_REJECTED) has no order;
 * every key has a final answer.
 */
function checkPlaced(state: PhaseState, phase: PhaseLog, tally: Tally): void {
  for (const outcome of phase.outcomes) {
    if (outcome.result === 'ok') {
      const order = outcome.orderId ? state.orders.get(outcome.orderId) : undefined;
      const captures = capturesOf(state, order?.charge_id ?? null).length;
      // A key used again after its retention is a new order, never its first life's.
      const { reusedFrom } = outcome;
      const reused = reusedFrom !== undefined && reusedFrom !== outcome.orderId;
      const first = reused ? state.orders.get(reusedFrom) : undefined;
      tally.check(
        'place 2xx: 1 order, 1 capture',
        order !== undefined &&
          captures === 1 &&
          (!reused || first === undefined || first.charge_id !== order.charge_id),
        () =>
          `key ${outcome.key} answered 2xx with order ${outcome.orderId}: ` +
          `${order ? 'order stored' : 'NO order stored'}, ${captures} processor captures` +
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
  // The answers recorded as refusals: their attempts' orders must not exist.
  const keys = new Set(phase.outcomes.map((outcome) => outcome.key));
  for (const [orderId, attempt] of state.attempts) {
    if (!keys.has(attempt.key) || attempt.status === null || attempt.status < 400) continue;
    tally.check(
      'place 2xx: 1 order, 1 capture',
      !state.orders.has(orderId),
      () => `key ${attempt.key} was refused (${attempt.status}), yet its order ${orderId} exists`,
    );
  }
}

/**
 * At most one capture at the processor per life of a place key (its order id: payments keys
 * the charge by it, and each retry under a new processor key would be a new authorization) and
 * per key the workload used (a key used again after its retention has one life per use). A
 * capture the processor made for no payments charge, or for an order id no attempt and no
 * answer names, is money no key accounts for.
 */
function checkCaptures(state: PhaseState, phase: PhaseLog, tally: Tally): void {
  const keyOf = new Map<string, string>();
  for (const outcome of phase.outcomes) {
    if (outcome.orderId) keyOf.set(outcome.orderId, outcome.key);
  }
  for (const [orderId, attempt] of state.attempts) keyOf.set(orderId, attempt.key);
  const lives = new Map<string, number>();
  for (const outcome of phase.outcomes) {
    lives.set(outcome.key, (lives.get(outcome.key) ?? 0) + 1);
  }
  const perOrder = new Map<string, SimulatorCharge[]>();
  const perKey = new Map<string, Set<string>>();
  for (const charge of state.charges) {
    if (!CAPTURED.has(charge.status)) continue;
    const orderId = charge.reference ? state.chargeOrder.get(charge.reference) : undefined;
    const key = orderId ? keyOf.get(orderId) : undefined;
    tally.check(
      'one key, one capture',
      key !== undefined,
      () =>
        `processor capture ${charge.id} (reference ${charge.reference ?? 'none'}) ` +
        (orderId === undefined
          ? 'has no payments charge'
          : `is for order ${orderId ?? '(none)'}, which no place attempt or answer of the ` +
            `phase names (${(orderId && state.stray.get(orderId)) ?? 'no attempt at all'}); ` +
            `authorized ${charge.createdAt} under ${charge.idempotencyKey}`),
    );
    if (!orderId || !key) continue;
    perOrder.set(orderId, [...(perOrder.get(orderId) ?? []), charge]);
    perKey.set(key, (perKey.get(key) ?? new Set()).add(orderId));
  }
  for (const [orderId, captures] of perOrder) {
    tally.check(
      'one key, one capture',
      captures.length === 1,
      () =>
        `order ${orderId} (one life of key ${keyOf.get(orderId)}) was captured ` +
        `${captures.length} times: ${captures.map((charge) => charge.id).join(', ')}`,
    );
  }
  for (const [key, orderIds] of perKey) {
    const used = lives.get(key) ?? 0;
    tally.check(
      'one key, one capture',
      orderIds.size <= used,
      () =>
        `key ${key}, used ${used} times, was captured for ${orderIds.size} orders: ` +
        [...orderIds].join(', '),
    );
  }
}

/**
 * Every order of the phase (created or changed in it) is paid as it stands, at the processor:
 * an open or completed one captured its total and refunded nothing (no adjustments exist
 * yet); a cancelled one refunded exactly what it captured; one with nothing to charge by card
 * has no charge. And every capture of the phase still holding money pays for an open or
 * completed order.
 */
function checkOrdersPaid(state: PhaseState, tally: Tally): void {
  const live = new Set<string>();
  for (const order of state.orders.values()) {
    if (!order.of_phase) continue;
    if (order.state !== 'cancelled' && order.charge_id) live.add(order.charge_id);
    const chargeable = order.payment_type === 'CARD' && order.total_minor > 0;
    if (order.charge_id === null) {
      tally.check(
        'orders paid as they stand',
        !chargeable,
        () => `${order.state} card order ${order.order_id} of ${order.total_minor} has no charge`,
      );
      continue;
    }
    const captures = capturesOf(state, order.charge_id);
    const [capture] = captures;
    const paid =
      captures.length === 1 &&
      capture !== undefined &&
      capture.capturedAmount === order.total_minor &&
      (order.state === 'cancelled'
        ? capture.refundedAmount === capture.capturedAmount
        : capture.refundedAmount === 0);
    tally.check(
      'orders paid as they stand',
      paid,
      () =>
        `${order.state} order ${order.order_id} of ${order.total_minor}: the processor has ` +
        (captures.length === 0
          ? `no capture of its charge (${describe(state.byReference.get(order.charge_id!))})`
          : captures
              .map(
                (charge) =>
                  `${charge.id} ${charge.status}, captured ${charge.capturedAmount}, refunded ${charge.refundedAmount}`,
              )
              .join('; ')),
    );
  }
  for (const charge of state.charges) {
    if (!CAPTURED.has(charge.status) || charge.refundedAmount >= charge.capturedAmount) continue;
    tally.check(
      'orders paid as they stand',
      charge.reference !== null && live.has(charge.reference),
      () => {
        const orderId = charge.reference ? state.chargeOrder.get(charge.reference) : undefined;
        const order = orderId ? state.orders.get(orderId) : undefined;
        return (
          `processor capture ${charge.id} (payments charge ${charge.reference ?? 'none'}) holds ` +
          `${charge.capturedAmount - charge.refundedAmount} for no open or completed order of ` +
          `the phase (order ${orderId ?? 'none'}: ` +
          `${order ? order.state : ((orderId && state.stray.get(orderId)) ?? 'not found')})`
        );
      },
    );
  }
}

function describe(charges: readonly SimulatorCharge[] | undefined): string {
  if (!charges?.length) return 'no authorization';
  return charges.map((charge) => `${charge.id} ${charge.status}`).join(', ');
}

interface OwedRefund {
  idempotency_key: string;
  order_id: string;
  state: 'owed' | 'settled';
  tries: number;
  last_error: string | null;
  raised_at: Date | null;
}

/**
 * Waits (bounded) until every refund owed for an order of the phase (created or changed in it,
 * or owed since it started) is settled or raised, then returns them as they stand.
 */
async function settleRefunds(db: pg.Client, since: Date): Promise<OwedRefund[]> {
  const read = async () =>
    (
      await db.query<OwedRefund>(
        `SELECT r.idempotency_key, r.order_id, r.state, r.tries, r.last_error, r.raised_at
           FROM ordering.order_refunds r JOIN ordering.orders o ON o.order_id = r.order_id
          WHERE o.created_at >= $1 OR o.updated_at >= $1 OR r.created_at >= $1`,
        [since],
      )
    ).rows;
  // A raised refund is a violation already, however it ends: no need to wait for it.
  const done = (row: OwedRefund) => row.state === 'settled' || row.raised_at !== null;
  const deadline = Date.now() + REFUND_WAIT_MS;
  let rows = await read();
  while (!rows.every(done) && Date.now() < deadline) {
    await sleep(250);
    rows = await read();
  }
  return rows;
}

/**
 * The reconciler's work of the phase, after the checks above read the state: every release
 * the background reconciler made (voided or refunded) is money the path that should have
 * released it did not, and every release it withheld a charge whose owners two reads saw
 * differently; both are violations. The one release that is not: an authorization the
 * processor made after the key already had its final answer (a late authorization, after
 * payments gave up on it), counted in the notes. Then the reconciler as an operator runs it
 * must find nothing unexplained, in flight, failed, to release or to withhold.
 *
 * No check that two orders share a charge: the unique index `orders_charge_key` forbids it.
 */
async function checkLedger(
  platform: FaultPlatform,
  db: pg.Client,
  state: PhaseState,
  since: Date,
  tally: Tally,
): Promise<void> {
  let late = 0;
  const judge = (action: ReconcilerAction) => {
    if (action.action === 'withheld') {
      tally.check(
        'the ledger balances',
        false,
        () => `the reconciler withheld a release: ${said(action)}`,
      );
      return;
    }
    const answeredAt = action.order_id ? state.attempts.get(action.order_id)?.answeredAt : null;
    const authorizations = (state.byReference.get(action.charge_id) ?? []).filter(
      (charge) => charge.status !== 'declined',
    );
    const excused =
      answeredAt !== null &&
      answeredAt !== undefined &&
      authorizations.some((charge) => Date.parse(charge.createdAt) > answeredAt);
    if (excused) late += 1;
    tally.check(
      'the ledger balances',
      excused,
      () => `the background reconciler released what the platform left held: ${said(action)}`,
    );
  };
  const before = await reconcilerActions(db, { since });
  before.forEach(judge);

  const report = await platform.reconcile();
  // What the background reconciler did while the operator's run ran is the phase's too.
  const own = new Set([...report.released, ...report.withheld].map((charge) => charge.chargeId));
  const lastId = before.at(-1)?.action_id ?? 0;
  (await reconcilerActions(db, { since, after: lastId }))
    .filter((action) => !own.has(action.charge_id))
    .forEach(judge);

  const released = report.released.map((charge) => charge.action);
  tally.notes.push(
    `reconciler: ${report.examined} examined, ${report.adopted} adopted from the processor, ` +
      `${released.filter((action) => action === 'voided').length} voided and ` +
      `${released.filter((action) => action === 'refunded').length} refunded, ` +
      `${report.classes.in_flight} in flight` +
      (late > 0 ? `; ${late} late authorizations released in the background` : ''),
  );
  checkReport(report, tally);
}

function checkReport(report: ReconciliationReport, tally: Tally): void {
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
  // Every key of the phase has its answer and every refund owed was waited for.
  tally.check(
    'the ledger balances',
    report.classes.in_flight === 0,
    () => `${report.classes.in_flight} charges still in flight after every key was answered`,
  );
  tally.check(
    'the ledger balances',
    report.released.length === 0,
    () =>
      `the reconciler released what the platform left held: ${JSON.stringify(report.released.slice(0, 5))}`,
  );
  tally.check(
    'the ledger balances',
    report.withheld.length === 0,
    () => `the reconciler withheld releases: ${JSON.stringify(report.withheld.slice(0, 5))}`,
  );
}

interface ReconcilerAction {
  action_id: number;
  charge_id: string;
  order_id: string | null;
  action: 'voided' | 'refunded' | 'withheld';
  reason: string;
}

const said = (action: ReconcilerAction) =>
  `${action.action} charge ${action.charge_id} (order ${action.order_id ?? 'none'}): ${action.reason}`;

async function reconcilerActions(
  db: pg.Client,
  { since, after = 0 }: { since: Date; after?: number },
): Promise<ReconcilerAction[]> {
  return (
    await db.query<ReconcilerAction>(
      `SELECT action_id::int AS action_id, charge_id::text, order_id::text, action, reason
         FROM payments.reconciler_actions
        WHERE acted_at >= $1 AND action_id > $2 ORDER BY action_id`,
      [since, after],
    )
  ).rows;
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
  total_minor: number;
  /** Its cancel's refund: owed, settled, or null when none is owed. */
  refund_state: 'owed' | 'settled' | null;
}

/**
 * Waits (bounded) until every order the store never moved that had a short window is cancelled
 * and the refund its cancel owes is settled, then returns them as they stand.
 */
async function settleUnaccepted(phase: PhaseLog, db: pg.Client): Promise<UnacceptedOrder[]> {
  if (phase.leftPending.length === 0) return [];
  const read = async () =>
    (
      await db.query<UnacceptedOrder>(
        `SELECT o.order_id, o.status, o.cancelled_by, o.charge_id,
                o.total_minor::float8 AS total_minor, r.state AS refund_state
           FROM ordering.orders o
           LEFT JOIN ordering.order_refunds r ON r.order_id = o.order_id AND r.reason = 'cancel'
          WHERE o.order_id = ANY($1) AND o.accept_by - o.created_at < interval '60 seconds'`,
        [phase.leftPending],
      )
    ).rows;
  // A cancel that owes no refund never will: nothing to wait for (the check says so).
  const settled = (row: UnacceptedOrder) =>
    row.status === 'cancelled' && (row.charge_id === null || row.refund_state !== 'owed');
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
 * the platform, and the processor refunded exactly its capture, once
 * (docs/guide/orders.md#acceptance-window).
 */
function checkUnaccepted(
  rows: readonly UnacceptedOrder[],
  state: PhaseState,
  phase: PhaseLog,
  tally: Tally,
): void {
  if (phase.leftPending.length === 0) return;
  tally.notes.push(
    `${rows.length} orders with a short window timed out (of ${phase.leftPending.length} the store never moved)`,
  );
  for (const row of rows) {
    const captures = capturesOf(state, row.charge_id);
    const refunded =
      row.charge_id === null ||
      (captures.length === 1 &&
        captures[0]!.capturedAmount === row.total_minor &&
        captures[0]!.refundedAmount === captures[0]!.capturedAmount);
    tally.check(
      'unaccepted: cancelled, refunded once',
      row.status === 'cancelled' && row.cancelled_by === 'platform' && refunded,
      () =>
        `order ${row.order_id} is ${row.status} (by ${row.cancelled_by ?? 'nobody'}), its refund ` +
        `${row.refund_state ?? 'never owed'}; the processor has ` +
        (captures.length === 0
          ? 'no capture'
          : captures
              .map(
                (charge) =>
                  `${charge.id} captured ${charge.capturedAmount}, refunded ${charge.refundedAmount}`,
              )
              .join('; ')),
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
  const placed = phase.outcomes.filter(
    (outcome): outcome is PlaceOutcome & { orderId: string } =>
      outcome.result === 'ok' && outcome.orderId !== undefined,
  );
  const versions = async () =>
    new Map(
      (
        await db.query<{ order_id: string; version: number }>(
          'SELECT order_id, version FROM ordering.orders WHERE order_id = ANY($1)',
          [placed.map((outcome) => outcome.orderId)],
        )
      ).rows.map((row) => [row.order_id, row.version]),
    );
  const arrived = (outcome: (typeof placed)[number], expected: Map<string, number>) =>
    (workload.distribution[outcome.partnerIndex]?.receiver?.arrivals.get(outcome.orderId) ?? [])
      .length >= (expected.get(outcome.orderId) ?? 0);
  const deadline = Date.now() + WEBHOOK_WAIT_MS;
  let expected = await versions();
  while (!placed.every((outcome) => arrived(outcome, expected)) && Date.now() < deadline) {
    await sleep(250);
    expected = await versions();
  }
  for (const outcome of placed) {
    const { orderId } = outcome;
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
