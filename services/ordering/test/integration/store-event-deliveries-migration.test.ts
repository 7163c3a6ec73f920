import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, orderingMigrations, type OrderingDatabase } from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

/** The last migration before store events shared the deliveries table. */
const BEFORE_STORE_EVENTS = '2026-12-02T0100-seal-webhook-secrets';

function migrator() {
  return new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: ORDERING_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(orderingMigrations) },
  });
}

/** An order event's row as the recorder wrote it before: no store or sequence columns. */
async function insertOldDelivery(orderId: string, storeId: string, version: number) {
  const payload = JSON.stringify({ type: 'order.created', data: { orderId, storeId, version } });
  await sql`
    insert into webhook_deliveries
      (delivery_id, event_id, partner_id, order_id, version, event_type, payload, status,
       next_attempt_at, occurred_at)
    values (${randomUUID()}, ${randomUUID()}, ${randomUUID()}, ${orderId}, ${version},
            'order.created', ${payload}, 'pending', now(), now())
  `.execute(db);
}

/** A store event's row as the recorder writes it now. */
function storeRow(storeId: string, partnerId: string, version: number, payload: string | null) {
  return db
    .insertInto('webhook_deliveries')
    .values({
      delivery_id: randomUUID(),
      event_id: randomUUID(),
      partner_id: partnerId,
      order_id: null,
      store_id: storeId,
      sequence_key: `store:${storeId}:${partnerId}`,
      version,
      event_type: 'store.status_changed',
      payload,
      status: 'pending',
      next_attempt_at: new Date(),
      occurred_at: new Date(),
      last_attempt_at: null,
      last_error: null,
      last_response_status: null,
      lease_expires_at: null,
      lease_owner: null,
      delivered_at: null,
      origin: null,
    })
    .execute();
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

describe('the store-event deliveries migration', () => {
  it('gives every order delivery its store (from its payload) and its order as its sequence', async () => {
    expect((await migrator().migrateTo(BEFORE_STORE_EVENTS)).error).toBeUndefined();
    const orderId = randomUUID();
    const storeId = randomUUID();
    await insertOldDelivery(orderId, storeId, 1);
    await insertOldDelivery(orderId, storeId, 2);

    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);

    const rows = await db
      .selectFrom('webhook_deliveries')
      .select(['store_id', 'sequence_key', 'version'])
      .where('order_id', '=', orderId)
      .orderBy('version')
      .execute();
    expect(rows).toEqual([
      { store_id: storeId, sequence_key: orderId, version: 1 },
      { store_id: storeId, sequence_key: orderId, version: 2 },
    ]);
    // A version is still recorded once per sequence.
    await expect(insertOldDeliveryNow(orderId, storeId, 2)).rejects.toThrow(/sequence_version/);
  });

  it('takes store rows without an order or a body of their own, and refuses a mix', async () => {
    const storeId = randomUUID();
    const partnerId = randomUUID();
    await storeRow(storeId, partnerId, 1, null);
    await expect(storeRow(storeId, randomUUID(), 2, '{"type":"x"}')).rejects.toThrow(
      /webhook_deliveries_kind_check/,
    );
    await expect(storeRow(storeId, partnerId, 1, null)).rejects.toThrow(/sequence_version/);
  });

  it('drops the store rows when rolled back, keeping the order rows', async () => {
    const orderId = randomUUID();
    await insertOldDeliveryNow(orderId, randomUUID(), 1);
    await storeRow(randomUUID(), randomUUID(), 1, null);
    expect((await migrator().migrateTo(BEFORE_STORE_EVENTS)).error).toBeUndefined();
    const { rows } = await sql<{ orders: number }>`
      select count(*)::int as orders from webhook_deliveries where order_id = ${orderId}
    `.execute(db);
    expect(rows[0]!.orders).toBe(1);
    const { rows: nulls } = await sql<{ count: number }>`
      select count(*)::int as count from webhook_deliveries where order_id is null
    `.execute(db);
    expect(nulls[0]!.count).toBe(0);
    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    const back = await db
      .selectFrom('webhook_deliveries')
      .select(['sequence_key'])
      .where('order_id', '=', orderId)
      .executeTakeFirstOrThrow();
    expect(back.sequence_key).toBe(orderId);
  });
});

/** An order event's row as the recorder writes it now. */
async function insertOldDeliveryNow(orderId: string, storeId: string, version: number) {
  const payload = JSON.stringify({ type: 'order.created', data: { orderId, storeId, version } });
  await sql`
    insert into webhook_deliveries
      (delivery_id, event_id, partner_id, order_id, store_id, sequence_key, version, event_type,
       payload, status, next_attempt_at, occurred_at)
    values (${randomUUID()}, ${randomUUID()}, ${randomUUID()}, ${orderId}, ${storeId}, ${orderId},
            ${version}, 'order.created', ${payload}, 'pending', now(), now())
  `.execute(db);
}
