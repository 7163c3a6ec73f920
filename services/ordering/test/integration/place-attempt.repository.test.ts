import { createDatabase, outboxRowOf } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, type OrderingDatabase } from '../../src/app.js';
import type { OrderDetails, OrderRow, PlaceSnapshot } from '../../src/db/ordering.table.js';
import { insertOrder, orderEventOf, statusChangeOf } from '../../src/lifecycle/order.repository.js';
import {
  advanceAttempt,
  claimAttempt,
  claimForSettlement,
  dueForSettlement,
  LeaseLostError,
  recordAttemptOutcome,
  recordPlacedOrder,
} from '../../src/place/place-attempt.repository.js';

/** Place's idempotency records against the real database: leases per run, steps forward only. */

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-place-attempts',
  });
});

afterAll(async () => {
  await db.destroy();
  await env.cleanup();
});

const partnerId = randomUUID();
/** Only how a snapshot is stored matters here. */
const snapshot = { storeId: randomUUID() } as unknown as PlaceSnapshot;
const claimFor = (key: string, holder: string, leaseMs = 60_000) =>
  claimAttempt(db, {
    key,
    partnerId,
    endUserId: 'buyer',
    mode: 'live',
    fingerprint: 'f',
    orderId: randomUUID(),
    holder,
    leaseMs,
    retentionMs: 24 * 3_600_000,
  });

const lapse = (key: string) =>
  db
    .updateTable('place_attempts')
    .set({ lease_expires_at: sql<Date>`now() - interval '1 second'` })
    .where('idempotency_key', '=', key)
    .execute();

describe('leases', () => {
  it('belong to one run: after a lapsed lease, the run that lost it writes nothing, even in the same replica', async () => {
    const key = randomUUID();
    const first = await claimFor(key, 'replica-a:run-1');
    if (first.kind !== 'claimed') throw new Error(first.kind);
    await lapse(key);
    const second = await claimFor(key, 'replica-a:run-2');
    expect(second).toMatchObject({ kind: 'claimed', resumed: true, expired: false });
    // The first run wakes up and tries to record what it did: refused.
    await expect(advanceAttempt(db, first.attempt, 'validated')).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    if (second.kind !== 'claimed') throw new Error(second.kind);
    const moved = await advanceAttempt(db, second.attempt, 'validated', { snapshot });
    expect(moved).toMatchObject({ step: 'validated', lease_owner: 'replica-a:run-2' });
  });

  it('move a step forward only from the step the run read', async () => {
    const key = randomUUID();
    const claim = await claimFor(key, 'replica-a:run-1');
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    const validated = await advanceAttempt(db, claim.attempt, 'validated', { snapshot });
    const capturing = await advanceAttempt(db, validated, 'capturing', { charge_id: randomUUID() });
    // A stale copy of the row (the run's own, read before) cannot move it back.
    await expect(advanceAttempt(db, validated, 'submitting')).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    const recorded = await recordAttemptOutcome(
      db,
      capturing,
      { status: 201, body: '{}' },
      3_600_000,
    );
    expect(recorded).toMatchObject({ step: 'recorded', response_status: 201, lease_owner: null });
    // What the run knows is what the row says (nothing is read back).
    expect(
      await db
        .selectFrom('place_attempts')
        .select([
          'step',
          'snapshot',
          'charge_id',
          'response_status',
          'response_body',
          'lease_owner',
        ])
        .where('idempotency_key', '=', key)
        .executeTakeFirst(),
    ).toEqual({
      step: 'recorded',
      snapshot,
      charge_id: capturing.charge_id,
      response_status: 201,
      response_body: '{}',
      lease_owner: null,
    });
    await expect(advanceAttempt(db, capturing, 'recorded')).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('a key past its deadline is claimed as expired, to be settled rather than resumed', async () => {
    const key = randomUUID();
    await claimFor(key, 'replica-a:run-1');
    await db
      .updateTable('place_attempts')
      .set({
        lease_expires_at: sql<Date>`now() - interval '1 second'`,
        expires_at: sql<Date>`now() - interval '1 second'`,
      })
      .where('idempotency_key', '=', key)
      .execute();
    expect(await claimFor(key, 'replica-b:run-1')).toMatchObject({
      kind: 'claimed',
      expired: true,
    });
  });
});

describe('settlement claims', () => {
  it('act on the row as claimed: a live retry that took the key first wins, and the sweeper does nothing', async () => {
    const key = randomUUID();
    const claim = await claimFor(key, 'replica-a:run-1');
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await db
      .updateTable('place_attempts')
      .set({
        settle_at: sql<Date>`now() - interval '1 second'`,
        lease_owner: null,
        lease_expires_at: null,
      })
      .where('idempotency_key', '=', key)
      .execute();
    expect(await dueForSettlement(db, 1_000)).toContain(key);
    // The partner's retry claims it between the sweeper's listing and its claim.
    const retry = await claimFor(key, 'replica-b:run-9');
    expect(retry.kind).toBe('claimed');
    expect(await claimForSettlement(db, key, 'sweeper:run-1', 60_000, 1_000)).toBeUndefined();
  });

  it('push a key back before it is tried, doubling, so a key that keeps failing waits its turn', async () => {
    const key = randomUUID();
    await claimFor(key, 'replica-a:run-1');
    const due = () =>
      db
        .updateTable('place_attempts')
        .set({
          settle_at: sql<Date>`now() - interval '1 second'`,
          lease_owner: null,
          lease_expires_at: null,
        })
        .where('idempotency_key', '=', key)
        .execute();
    const delays: number[] = [];
    for (let tries = 0; tries < 3; tries++) {
      await due();
      const claimed = await claimForSettlement(db, key, `sweeper:run-${tries}`, 60_000, 10_000);
      expect(claimed).toMatchObject({ settle_tries: tries + 1, expired: false });
      const { rows } = await sql<{ seconds: number }>`
        select extract(epoch from settle_at - now())::float8 as seconds
          from place_attempts where idempotency_key = ${key}`.execute(db);
      delays.push(Math.round(rows[0]!.seconds));
    }
    expect(delays).toEqual([10, 20, 40]);
  });
});

describe('recording a placed order', () => {
  const storeId = randomUUID();
  const storePartnerId = randomUUID();
  const orderOf = (orderId: string): OrderRow => {
    const at = new Date('2026-12-07T12:00:00.123Z');
    return {
      order_id: orderId,
      partner_id: partnerId,
      end_user_id: 'buyer',
      store_id: storeId,
      store_partner_id: storePartnerId,
      mode: 'live',
      fulfillment_mode: 'PICKUP',
      state: 'open',
      status: 'pending',
      version: 1,
      details: { cart: { lines: [{ name: 'Soda "x"', quantity: 10 }] } } as unknown as OrderDetails,
      charge_id: randomUUID(),
      total_minor: 2364,
      currency: 'USD',
      estimated_ready_at: new Date('2026-12-07T12:20:00.000Z'),
      accept_by: new Date('2026-12-07T12:10:00.000Z'),
      cancel_reason: null,
      cancelled_by: null,
      store_deleted_at: null,
      created_at: at,
      updated_at: at,
    };
  };
  const placedOf = (order: OrderRow) => {
    const { values: event, envelope } = outboxRowOf(
      orderEventOf(order, 'order.created', null, 'test'),
    );
    return { order, statusChange: statusChangeOf(order, null), event, envelope };
  };
  /** What is stored of an order, its history and its event, its own ids left out. */
  const storedOf = async (orderId: string) => {
    const {
      order_id: _order,
      charge_id: _charge,
      ...order
    } = await db
      .selectFrom('orders')
      .selectAll()
      .where('order_id', '=', orderId)
      .executeTakeFirstOrThrow();
    const { order_id: _history, ...history } = await db
      .selectFrom('order_status_changes')
      .selectAll()
      .where('order_id', '=', orderId)
      .executeTakeFirstOrThrow();
    const { event_id: eventId, ...event } = await db
      .selectFrom('outbox')
      .select([
        'event_id',
        'subject',
        'aggregate_type',
        'aggregate_version',
        sql<string>`payload::text`.as('payload'),
      ])
      .where('aggregate_id', '=', orderId)
      .executeTakeFirstOrThrow();
    return {
      order,
      history,
      // Its ids are the order's own (the event's derived from it).
      event: {
        ...event,
        payload: event.payload.replaceAll(orderId, '<id>').replaceAll(eventId, '<event>'),
      },
    };
  };

  it('writes the order, its history and its event as the transaction of insertOrder did, and nothing for a run that lost the key', async () => {
    const key = randomUUID();
    const first = await claimFor(key, 'replica-a:run-1');
    if (first.kind !== 'claimed') throw new Error(first.kind);
    const capturing = await advanceAttempt(db, first.attempt, 'capturing', { snapshot });
    await lapse(key);
    const second = await claimFor(key, 'replica-a:run-2');
    if (second.kind !== 'claimed') throw new Error(second.kind);
    const answer = { status: 201, body: '{"placed":true}' };

    // The run that lost its lease: refused, and not one row written.
    await expect(
      recordPlacedOrder(db, capturing, placedOf(orderOf(capturing.order_id)), answer, 60_000),
    ).rejects.toBeInstanceOf(LeaseLostError);
    const written = await db
      .selectFrom('orders')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('order_id', '=', capturing.order_id)
      .executeTakeFirstOrThrow();
    expect(written.n).toBe(0);
    expect(
      await db
        .selectFrom('outbox')
        .selectAll()
        .where('aggregate_id', '=', capturing.order_id)
        .execute(),
    ).toEqual([]);

    const recorded = await recordPlacedOrder(
      db,
      second.attempt,
      placedOf(orderOf(second.attempt.order_id)),
      answer,
      60_000,
    );
    expect(recorded).toMatchObject({ step: 'recorded', lease_owner: null, response_status: 201 });
    expect(
      await db
        .selectFrom('place_attempts')
        .select(['step', 'response_status', 'response_body', 'lease_owner', 'settle_at'])
        .where('idempotency_key', '=', key)
        .executeTakeFirst(),
    ).toEqual({
      step: 'recorded',
      response_status: 201,
      response_body: answer.body,
      lease_owner: null,
      settle_at: null,
    });

    // The same order written as the lifecycle writes one: the same rows and the same event.
    const reference = orderOf(randomUUID());
    await db.transaction().execute((trx) => insertOrder(trx, reference, 'test'));
    expect(await storedOf(second.attempt.order_id)).toEqual(await storedOf(reference.order_id));
  });
});
