import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, orderingMigrations, type OrderingDatabase } from '../../src/app.js';
import {
  deliveryAttempts,
  recentOrderAttempts,
} from '../../src/webhooks/delivery-attempts.repository.js';
import { claimDueDeliveries } from '../../src/webhooks/delivery-claim.repository.js';
import { listDeliveries, resendDelivery } from '../../src/webhooks/delivery-list.repository.js';
import {
  recordDeliveries,
  type OrderEventDelivery,
} from '../../src/webhooks/delivery-record.repository.js';
import {
  pruneSettledDeliveries,
  settleDeliveries,
  type TryOutcome,
} from '../../src/webhooks/delivery-settle.repository.js';

// A delivery's latest try is kept on its row and only superseded tries are attempt rows; the
// attempt log partners read is the same as when every try was a row.

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-webhook-current-try',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

async function partnerWithEndpoint(): Promise<string> {
  const partnerId = randomUUID();
  await db
    .insertInto('webhook_endpoints')
    .values({
      partner_id: partnerId,
      url: 'http://127.0.0.1:9/hooks',
      events: ['order.created', 'order.status_changed'],
      secret: 's',
    })
    .execute();
  return partnerId;
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

/** One try of `deliveryId`: claimed (made due first) and settled with `outcome`. */
async function tryOnce(deliveryId: string, outcome: TryOutcome): Promise<void> {
  await sql`update webhook_deliveries set next_attempt_at = now() - interval '1 second'
             where delivery_id = ${deliveryId}`.execute(db);
  const leased = await claimDueDeliveries(db, {
    holder: 'test',
    leaseMs: 60_000,
    limit: 500,
    storeLimit: 0,
    scanLimit: 4_000,
    perPartner: 8,
    gapGraceMs: 60_000,
  });
  const lease = leased.find((row) => row.delivery_id === deliveryId)?.lease_owner;
  expect(lease).toBeTruthy();
  await settleDeliveries(db, [{ deliveryId, holder: lease!, outcome }]);
}

const storedTries = (deliveryId: string) =>
  db
    .selectFrom('webhook_delivery_attempts')
    .select(['attempt', 'outcome'])
    .where('delivery_id', '=', deliveryId)
    .orderBy('attempt_id')
    .execute();

const listed = async (partnerId: string, deliveryId: string) =>
  (await deliveryAttempts(db, { deliveryId, partnerId, limit: 100 }))!;

describe('the current try on the delivery row', () => {
  it('writes no attempt row for a delivery delivered at its first try, and still lists the try', async () => {
    const partnerId = await partnerWithEndpoint();
    const orderId = randomUUID();
    const event = orderEvent(partnerId, orderId, 1);
    await recordDeliveries(db, [event], 100);
    await tryOnce(event.deliveryId, { kind: 'delivered', attempts: 1, status: 204, latencyMs: 12 });

    expect(await storedTries(event.deliveryId)).toEqual([]);
    const { rows, total } = await listed(partnerId, event.deliveryId);
    expect(total).toBe(1);
    expect(rows).toEqual([
      {
        delivery_id: event.deliveryId,
        attempt: 1,
        outcome: 'delivered',
        response_status: 204,
        latency_ms: 12,
        error: null,
        tried_at: expect.any(Date),
      },
    ]);
    const timeline = await recentOrderAttempts(db, { orderId, partnerId, limit: 100 });
    expect(timeline.rows).toMatchObject([
      { delivery_id: event.deliveryId, attempt: 1, version: 1, event_type: 'order.created' },
    ]);
    const page = await listDeliveries(db, partnerId, { limit: 10 }, undefined);
    expect(page.rows[0]).toMatchObject({ last_latency_ms: 12, last_response_status: 204 });
  });

  it('lists a retried delivery’s tries in order; a postponement and a resend change none of them', async () => {
    const partnerId = await partnerWithEndpoint();
    const orderId = randomUUID();
    const event = orderEvent(partnerId, orderId, 1);
    await recordDeliveries(db, [event], 100);
    const retry = { kind: 'retry', delayMs: 60_000, status: 503, latencyMs: 30 } as const;
    await tryOnce(event.deliveryId, { ...retry, attempts: 1, error: 'HTTP 503' });
    // The open breaker holds a try back: no try, the delivery's error is the breaker's.
    await tryOnce(event.deliveryId, { kind: 'postponed', delayMs: 60_000, error: 'breaker open' });
    await tryOnce(event.deliveryId, { ...retry, attempts: 2, status: null, error: 'timeout' });
    const beforeResend = await listed(partnerId, event.deliveryId);
    const resent = await resendDelivery(db, partnerId, event.deliveryId);
    expect(resent).toMatchObject({ attempts: 0, last_error: null, last_latency_ms: 30 });
    // A resend's try counts from 1 again.
    await tryOnce(event.deliveryId, { kind: 'delivered', attempts: 1, status: 204, latencyMs: 7 });

    // The superseded tries are rows; the latest is the delivery's.
    expect(await storedTries(event.deliveryId)).toEqual([
      { attempt: 1, outcome: 'failed' },
      { attempt: 2, outcome: 'failed' },
    ]);
    const { rows, total } = await listed(partnerId, event.deliveryId);
    expect(total).toBe(3);
    expect(rows.slice(0, 2)).toEqual(beforeResend.rows);
    expect(
      rows.map(({ attempt, outcome, response_status, latency_ms, error }) => ({
        attempt,
        outcome,
        response_status,
        latency_ms,
        error,
      })),
    ).toEqual([
      { attempt: 1, outcome: 'failed', response_status: 503, latency_ms: 30, error: 'HTTP 503' },
      { attempt: 2, outcome: 'failed', response_status: null, latency_ms: 30, error: 'timeout' },
      { attempt: 1, outcome: 'delivered', response_status: 204, latency_ms: 7, error: null },
    ]);
    expect(rows[0]!.tried_at.getTime()).toBeLessThan(rows[1]!.tried_at.getTime());
    expect(rows[1]!.tried_at.getTime()).toBeLessThan(rows[2]!.tried_at.getTime());
    // The newest two of three, and the order's timeline reads the same tries.
    const newest = (await deliveryAttempts(db, {
      deliveryId: event.deliveryId,
      partnerId,
      limit: 2,
    }))!;
    expect(newest.rows).toEqual(rows.slice(1));
    const timeline = await recentOrderAttempts(db, { orderId, partnerId, limit: 100 });
    expect(timeline.total).toBe(3);
    expect(timeline.rows.map(({ attempt, outcome }) => ({ attempt, outcome }))).toEqual(
      rows.map(({ attempt, outcome }) => ({ attempt, outcome })),
    );
  });

  it('skips a delivery its endpoint’s version does not know: no try, unlisted, the next due', async () => {
    const partnerId = await partnerWithEndpoint();
    const orderId = randomUUID();
    const first = orderEvent(partnerId, orderId, 1);
    const second = orderEvent(partnerId, orderId, 2);
    await recordDeliveries(db, [first, second], 100);
    await tryOnce(first.deliveryId, {
      kind: 'retry',
      attempts: 1,
      delayMs: 60_000,
      status: 503,
      error: 'HTTP 503',
      latencyMs: 5,
    });
    const before = await listed(partnerId, first.deliveryId);
    await tryOnce(first.deliveryId, { kind: 'skipped', error: 'not in the endpoint’s version' });

    const row = await db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('delivery_id', '=', first.deliveryId)
      .executeTakeFirstOrThrow();
    // The try made before stays the delivery's last, with no attempt row added for the skip.
    expect(row).toMatchObject({
      status: 'skipped',
      attempts: 1,
      last_try_attempt: 1,
      last_try_outcome: 'failed',
      last_response_status: 503,
      next_attempt_at: null,
      lease_owner: null,
    });
    expect(await storedTries(first.deliveryId)).toEqual([]);
    expect(before.rows).toHaveLength(1);
    // Not the partner's any more: neither listed nor resendable.
    expect(
      await deliveryAttempts(db, { deliveryId: first.deliveryId, partnerId, limit: 10 }),
    ).toBeUndefined();
    expect(await resendDelivery(db, partnerId, first.deliveryId)).toBeUndefined();
    // The version behind it was woken.
    const next = await db
      .selectFrom('webhook_deliveries')
      .select(['status', 'next_attempt_at'])
      .where('delivery_id', '=', second.deliveryId)
      .executeTakeFirstOrThrow();
    expect(next.status).toBe('pending');
    expect(next.next_attempt_at).not.toBeNull();
  });

  it('prunes a delivery’s superseded tries with it', async () => {
    const partnerId = await partnerWithEndpoint();
    const event = orderEvent(partnerId, randomUUID(), 1);
    await recordDeliveries(db, [event], 100);
    await tryOnce(event.deliveryId, {
      kind: 'retry',
      attempts: 1,
      delayMs: 60_000,
      status: 500,
      error: 'HTTP 500',
      latencyMs: 3,
    });
    await tryOnce(event.deliveryId, { kind: 'delivered', attempts: 2, status: 204, latencyMs: 4 });
    expect(await storedTries(event.deliveryId)).toHaveLength(1);
    await sql`update webhook_deliveries set created_at = now() - interval '2 days'
               where delivery_id = ${event.deliveryId}`.execute(db);
    await pruneSettledDeliveries(db, 86_400_000);
    expect(await storedTries(event.deliveryId)).toEqual([]);
  });
});

/** The last migration before the current try moved onto the delivery row. */
const BEFORE_CURRENT_TRY = '2026-12-25T0300-bind-webhook-secrets';

const migrator = () =>
  new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: ORDERING_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(orderingMigrations) },
  });

describe('the current-try migration', () => {
  it('moves each delivery’s latest try onto its row, so every try is listed once, and back', async () => {
    expect((await migrator().migrateTo(BEFORE_CURRENT_TRY)).error).toBeUndefined();
    const partnerId = randomUUID();
    const orderId = randomUUID();
    // A delivery tried three times, one tried once, and one tried before tries were kept.
    const [retried, once, untracked] = [randomUUID(), randomUUID(), randomUUID()];
    for (const [deliveryId, version] of [
      [retried, 1],
      [once, 2],
      [untracked, 3],
    ] as const) {
      await sql`
        insert into webhook_deliveries (delivery_id, event_id, partner_id, order_id, store_id,
          sequence_key, version, event_type, payload, status, attempts, last_attempt_at,
          last_response_status, occurred_at)
        values (${deliveryId}, ${randomUUID()}, ${partnerId}, ${orderId}, ${randomUUID()},
          ${orderId}, ${version}, 'order.status_changed', '{}', 'delivered', 1,
          now() - interval '1 minute', 204, now())`.execute(db);
    }
    await sql`
      insert into webhook_delivery_attempts
        (delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at)
      values (${retried}, 1, 'failed', 500, 10, 'HTTP 500', now() - interval '3 minutes'),
             (${retried}, 2, 'failed', null, 2000, 'timeout', now() - interval '2 minutes'),
             (${retried}, 3, 'delivered', 204, 11, null, now() - interval '1 minute'),
             (${once}, 1, 'delivered', 204, 12, null, now() - interval '30 seconds')`.execute(db);
    // What the attempt log read before: every try as a row.
    const logBefore = await sql<Record<string, unknown>>`
      select delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at
        from webhook_delivery_attempts where delivery_id in (${retried}, ${once}, ${untracked})
       order by attempt_id`.execute(db);

    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    expect(await storedTries(retried)).toEqual([
      { attempt: 1, outcome: 'failed' },
      { attempt: 2, outcome: 'failed' },
    ]);
    expect(await storedTries(once)).toEqual([]);
    const log = async () =>
      (await recentOrderAttempts(db, { orderId, partnerId, limit: 100 })).rows.map(
        ({ event_type: _type, version: _version, ...row }) => row,
      );
    expect(await log()).toEqual(logBefore.rows);
    expect((await listed(partnerId, untracked)).rows).toEqual([]);
    const page = await listDeliveries(db, partnerId, { limit: 10 }, undefined);
    expect(page.rows.map((row) => [row.delivery_id, row.last_latency_ms]).sort()).toEqual(
      [
        [retried, 11],
        [once, 12],
        [untracked, null],
      ].sort(),
    );

    // Down and up again: the same log.
    expect((await migrator().migrateTo(BEFORE_CURRENT_TRY)).error).toBeUndefined();
    const logDown = await sql<Record<string, unknown>>`
      select delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at
        from webhook_delivery_attempts where delivery_id in (${retried}, ${once}, ${untracked})
       order by tried_at, attempt_id`.execute(db);
    expect(logDown.rows).toEqual(logBefore.rows);
    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    expect(await log()).toEqual(logBefore.rows);
  });
});
