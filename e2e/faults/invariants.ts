import type pg from 'pg';
import type { FaultPlatform, SimulatorCharge } from './platform.js';
import type { PhaseLog, Workload } from './workload.js';

/** The invariants, in the table's column order. */
export const INVARIANTS = [
  'place 2xx: 1 order, 1 capture',
  'no key charged twice',
  'no open authorization',
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
    const keys = phase.outcomes.map((outcome) => outcome.key);
    const attempts = new Map(
      (
        await db.query<{ idempotency_key: string; order_id: string }>(
          'SELECT idempotency_key, order_id FROM ordering.place_attempts WHERE idempotency_key = ANY($1)',
          [keys],
        )
      ).rows.map((row) => [row.idempotency_key, row.order_id]),
    );
    const orderIds = [...attempts.values()];
    const orders = new Map(
      (
        await db.query<OrderRow>(
          'SELECT order_id, version, charge_id FROM ordering.orders WHERE order_id = ANY($1)',
          [orderIds],
        )
      ).rows.map((row) => [row.order_id, row]),
    );
    const charges = await platform.processorCharges();
    const byPaymentsCharge = new Map<string, SimulatorCharge[]>();
    for (const charge of charges) {
      // payments' key: pcp-authorize-<its charge id>-<attempt>
      const chargeId = /^pcp-authorize-(.+)-\d+$/.exec(charge.idempotencyKey)?.[1];
      if (!chargeId) continue;
      byPaymentsCharge.set(chargeId, [...(byPaymentsCharge.get(chargeId) ?? []), charge]);
    }

    for (const outcome of phase.outcomes) {
      const attemptOrder = attempts.get(outcome.key);
      if (outcome.result === 'ok') {
        const order = outcome.orderId ? orders.get(outcome.orderId) : undefined;
        const captures = (
          order?.charge_id ? (byPaymentsCharge.get(order.charge_id) ?? []) : []
        ).filter((charge) => CAPTURED.has(charge.status)).length;
        tally.check(
          'place 2xx: 1 order, 1 capture',
          order !== undefined && attemptOrder === outcome.orderId && captures === 1,
          () =>
            `key ${outcome.key} answered 2xx with order ${outcome.orderId}: ` +
            `${order ? 'order stored' : 'NO order stored'}, key's order ${attemptOrder}, ${captures} captures`,
        );
      } else {
        // A key the partner was finally refused must not have left an order behind.
        const phantom = attemptOrder !== undefined && orders.has(attemptOrder);
        tally.check(
          'place 2xx: 1 order, 1 capture',
          !phantom && outcome.result === 'rejected',
          () =>
            outcome.result === 'unknown'
              ? `key ${outcome.key} still has no final answer (${outcome.problem ?? 'no answer'})`
              : `key ${outcome.key} was refused (${outcome.problem}) yet order ${attemptOrder} exists`,
        );
      }
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
