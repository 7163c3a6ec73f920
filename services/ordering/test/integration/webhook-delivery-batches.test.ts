import { createDatabase } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, type OrderingDatabase } from '../../src/app.js';
import { deliveryAttempts } from '../../src/webhooks/delivery-attempts.repository.js';
import { claimDueDeliveries } from '../../src/webhooks/delivery-claim.repository.js';
import {
  recordDeliveries,
  type OrderEventDelivery,
} from '../../src/webhooks/delivery-record.repository.js';
import { settleDeliveries } from '../../src/webhooks/delivery-settle.repository.js';

// The webhook deliveries' batched statements on the real Postgres: the recorder's batch, the
// claim's per-partner look and the batched settle.

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-webhook-delivery-batches',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

async function endpoint(partnerId: string, events = ['order.created', 'order.status_changed']) {
  await db
    .insertInto('webhook_endpoints')
    .values({ partner_id: partnerId, url: 'http://127.0.0.1:9/hooks', events, secret: 's' })
    .execute();
}

const orderEvent = (partnerId: string, orderId: string, version: number): OrderEventDelivery => ({
  deliveryId: randomUUID(),
  eventId: randomUUID(),
  partnerId,
  orderId,
  storeId: randomUUID(),
  version,
  eventType: version === 1 ? 'order.created' : 'order.status_changed',
  payload: JSON.stringify({ version }),
  occurredAt: new Date(),
  origin: null,
});

const claim = (limit = 50, holder = 'test') =>
  claimDueDeliveries(db, {
    holder,
    leaseMs: 60_000,
    limit,
    storeLimit: 0,
    scanLimit: limit * 8,
    perPartner: 3,
    gapGraceMs: 60_000,
  });

describe('recording a batch of order events', () => {
  it('keeps later versions of an order in the batch waiting, skips the unsubscribed, adds nothing twice', async () => {
    const partnerId = randomUUID();
    await endpoint(partnerId, ['order.created']);
    const orderId = randomUUID();
    const [v1, v2, v3] = [1, 2, 3].map((version) => orderEvent(partnerId, orderId, version));
    // Subscribed to, unlike v2's kind.
    v3!.eventType = 'order.created';
    const other = orderEvent(partnerId, randomUUID(), 1);
    const first = await recordDeliveries(db, [v1!, other], 100);
    expect(first.map((one) => one.state)).toEqual(['due', 'due']);
    // v2 is unsubscribed (skipped); v3 waits for v1 (in the table) — and with v1 again.
    const second = await recordDeliveries(
      db,
      [{ ...v1!, deliveryId: randomUUID() }, v2!, v3!],
      100,
    );
    expect(second.map((one) => one.state)).toEqual([undefined, 'skipped', 'waiting']);

    const fresh = randomUUID();
    const batch = [1, 2, 3].map((version) => orderEvent(partnerId, fresh, version));
    const states = await recordDeliveries(
      db,
      batch.map((event) => ({ ...event, eventType: 'order.created' as const })),
      100,
    );
    expect(states.map((one) => one.state)).toEqual(['due', 'waiting', 'waiting']);
  });
});

describe('claiming', () => {
  it('takes other partners’ due deliveries however many older ones a partner at its cap has', async () => {
    const capped = randomUUID();
    await endpoint(capped);
    const events = Array.from({ length: 40 }, () => orderEvent(capped, randomUUID(), 1));
    await recordDeliveries(db, events, 100);
    await sql`update webhook_deliveries set next_attempt_at = now() - interval '1 hour'
               where partner_id = ${capped}`.execute(db);
    const leased = await claim(50, 'first');
    expect(leased.filter((row) => row.partner_id === capped)).toHaveLength(3);

    const healthy = randomUUID();
    await endpoint(healthy);
    await recordDeliveries(db, [orderEvent(healthy, randomUUID(), 1)], 100);
    const next = await claim(1, 'second');
    expect(next.map((row) => row.partner_id)).toEqual([healthy]);
  });

  it('takes a delivery again once its lease lapsed unsettled', async () => {
    const partnerId = randomUUID();
    await endpoint(partnerId);
    const event = orderEvent(partnerId, randomUUID(), 1);
    await recordDeliveries(db, [event], 100);
    const [leased] = (await claim()).filter((row) => row.partner_id === partnerId);
    expect(leased?.delivery_id).toBe(event.deliveryId);
    expect((await claim()).some((row) => row.partner_id === partnerId)).toBe(false);
    await sql`update webhook_deliveries set lease_expires_at = now() - interval '1 second'
               where delivery_id = ${event.deliveryId}`.execute(db);
    const again = (await claim(50, 'again')).filter((row) => row.partner_id === partnerId);
    expect(again.map((row) => row.delivery_id)).toEqual([event.deliveryId]);
  });
});

describe('settling a batch', () => {
  it('records each outcome under its own lease and makes the next version of a finished one due', async () => {
    const partnerId = randomUUID();
    await endpoint(partnerId);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const recorded = [
      orderEvent(partnerId, a, 1),
      orderEvent(partnerId, a, 2),
      orderEvent(partnerId, b, 1),
      orderEvent(partnerId, c, 1),
    ];
    await recordDeliveries(db, recorded, 100);
    const leased = (await claim(50, 'settle')).filter((row) => row.partner_id === partnerId);
    expect(leased).toHaveLength(3);
    const lease = (id: string) => leased.find((row) => row.delivery_id === id)!.lease_owner!;
    await settleDeliveries(db, [
      {
        deliveryId: recorded[0]!.deliveryId,
        holder: lease(recorded[0]!.deliveryId),
        outcome: { kind: 'delivered', attempts: 1, status: 204, latencyMs: 12.4 },
      },
      {
        deliveryId: recorded[2]!.deliveryId,
        holder: lease(recorded[2]!.deliveryId),
        outcome: {
          kind: 'retry',
          attempts: 1,
          delayMs: 60_000,
          status: 500,
          error: 'HTTP 500',
          latencyMs: 30,
        },
      },
      // Not its lease (lapsed and taken over): nothing is written.
      {
        deliveryId: recorded[3]!.deliveryId,
        holder: 'someone else',
        outcome: { kind: 'dead', attempts: 1, status: 500, error: 'HTTP 500', latencyMs: 5 },
      },
    ]);
    const rows = await db
      .selectFrom('webhook_deliveries')
      .select(['delivery_id', 'status', 'attempts', 'lease_owner', 'last_error'])
      .select(sql<boolean>`next_attempt_at <= now()`.as('due'))
      .select(sql<boolean>`next_attempt_at > now() + interval '50 seconds'`.as('later'))
      .where('partner_id', '=', partnerId)
      .execute();
    const row = (event: OrderEventDelivery) =>
      rows.find((one) => one.delivery_id === event.deliveryId)!;
    expect(row(recorded[0]!)).toMatchObject({
      status: 'delivered',
      attempts: 1,
      lease_owner: null,
    });
    expect(row(recorded[1]!)).toMatchObject({ status: 'pending', due: true });
    expect(row(recorded[2]!)).toMatchObject({
      status: 'failed',
      later: true,
      last_error: 'HTTP 500',
    });
    expect(row(recorded[3]!)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(row(recorded[3]!).lease_owner).not.toBeNull();
    // Each try made under its lease is kept for the order's timeline; none of the lapsed one.
    // (As the delivery log reads them: the latest try is on the delivery's row.)
    const attempts = [];
    for (const event of recorded) {
      const tries = await deliveryAttempts(db, { ...event, limit: 100 });
      attempts.push(
        ...tries!.rows.map(
          ({ delivery_id, attempt, outcome, response_status, latency_ms, error }) => ({
            delivery_id,
            attempt,
            outcome,
            response_status,
            latency_ms,
            error,
          }),
        ),
      );
    }
    expect(attempts).toEqual(
      expect.arrayContaining([
        {
          delivery_id: recorded[0]!.deliveryId,
          attempt: 1,
          outcome: 'delivered',
          response_status: 204,
          latency_ms: 12,
          error: null,
        },
        {
          delivery_id: recorded[2]!.deliveryId,
          attempt: 1,
          outcome: 'failed',
          response_status: 500,
          latency_ms: 30,
          error: 'HTTP 500',
        },
      ]),
    );
    expect(attempts).toHaveLength(2);
  });
});
