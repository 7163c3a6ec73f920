import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, orderingMigrations, type OrderingDatabase } from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

/** The last migration before timelines. */
const BEFORE_TIMELINE = '2026-12-21T0400-webhook-partner-due';

const migrator = () =>
  new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: ORDERING_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(orderingMigrations) },
  });

/** An order as stored before timelines, at its `version`, moved a minute after it was placed. */
async function insertOrder(version: number, status: 'pending' | 'ready'): Promise<string> {
  const orderId = randomUUID();
  await sql`
    insert into orders (order_id, partner_id, end_user_id, store_id, store_partner_id,
      fulfillment_mode, state, status, version, details, total_minor, currency,
      estimated_ready_at, created_at, updated_at)
    values (${orderId}, ${randomUUID()}, 'diner-1', ${randomUUID()}, ${randomUUID()}, 'PICKUP',
      'open', ${status}, ${version}, '{}'::jsonb, 100, 'USD', '2026-11-22T18:45:00Z',
      '2026-11-22T18:05:00Z', '2026-11-22T18:06:00Z')`.execute(db);
  return orderId;
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

describe('the order timeline migration', () => {
  it('keeps the version each earlier order is at as its first status change', async () => {
    expect((await migrator().migrateTo(BEFORE_TIMELINE)).error).toBeUndefined();
    const placed = await insertOrder(1, 'pending');
    const moved = await insertOrder(4, 'ready');
    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    const changes = await db
      .selectFrom('order_status_changes')
      .selectAll()
      .where('order_id', 'in', [placed, moved])
      .orderBy('version')
      .execute();
    expect(changes).toEqual([
      {
        order_id: placed,
        version: 1,
        state: 'open',
        status: 'pending',
        previous_status: null,
        estimated_ready_at: new Date('2026-11-22T18:45:00Z'),
        cancel_reason: null,
        cancelled_by: null,
        unavailable_item_ids: null,
        changed_at: new Date('2026-11-22T18:06:00Z'),
      },
      expect.objectContaining({
        order_id: moved,
        version: 4,
        status: 'ready',
        previous_status: null,
      }),
    ]);
  });

  it('deletes an order’s history with the order, and checks a try’s outcome', async () => {
    const orderId = await insertOrder(1, 'pending');
    await sql`
      insert into order_status_changes (order_id, version, state, status, changed_at)
      values (${orderId}, 2, 'open', 'confirmed', now())`.execute(db);
    const deliveryId = randomUUID();
    await sql`
      insert into webhook_deliveries (delivery_id, event_id, partner_id, order_id, store_id,
        sequence_key, version, event_type, payload, status, occurred_at)
      values (${deliveryId}, ${randomUUID()}, ${randomUUID()}, ${orderId}, ${randomUUID()},
        ${orderId}, 1, 'order.created', '{}', 'delivered', now())`.execute(db);
    await sql`
      insert into webhook_delivery_attempts
        (delivery_id, attempt, outcome, response_status, latency_ms, tried_at)
      values (${deliveryId}, 1, 'delivered', 204, 12, now())`.execute(db);
    await expect(
      sql`insert into webhook_delivery_attempts
            (delivery_id, attempt, outcome, latency_ms, tried_at)
          values (${deliveryId}, 2, 'lost', 1, now())`.execute(db),
    ).rejects.toThrow(/check constraint/);

    // (A delivery's tries go with it in the retention prune: webhook-current-try.test.ts.)
    await db.deleteFrom('orders').where('order_id', '=', orderId).execute();
    const left = await sql<{ changes: number }>`
      select count(*)::int as changes from order_status_changes where order_id = ${orderId}`.execute(
      db,
    );
    expect(left.rows).toEqual([{ changes: 0 }]);
  });

  it('rolls back and forward again', async () => {
    expect((await migrator().migrateTo(BEFORE_TIMELINE)).error).toBeUndefined();
    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    expect(
      await db.selectFrom('webhook_delivery_attempts').select('delivery_id').execute(),
    ).toEqual([]);
  });
});
