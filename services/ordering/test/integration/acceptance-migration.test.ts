import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, orderingMigrations, type OrderingDatabase } from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

/** The last migration before the acceptance window. */
const BEFORE_ACCEPTANCE = '2026-12-02T0100-seal-webhook-secrets';

const migrator = () =>
  new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: ORDERING_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(orderingMigrations) },
  });

/** An order as stored before the migration (no deadline, no canceller). */
async function insertOrder(state: 'open' | 'cancelled'): Promise<string> {
  const orderId = randomUUID();
  await sql`
    insert into orders (order_id, partner_id, end_user_id, store_id, store_partner_id,
      fulfillment_mode, state, status, version, details, total_minor, currency, cancel_reason,
      created_at, updated_at)
    values (${orderId}, ${randomUUID()}, 'diner-1', ${randomUUID()}, ${randomUUID()}, 'PICKUP',
      ${state}, ${state === 'open' ? 'pending' : 'cancelled'}, 1, '{}'::jsonb, 100, 'USD',
      ${state === 'open' ? null : 'Closed'}, now(), now())`.execute(db);
  return orderId;
}

const columnsOf = (orderId: string) =>
  db
    .selectFrom('orders')
    .select(['accept_by', 'cancelled_by'])
    .where('order_id', '=', orderId)
    .executeTakeFirstOrThrow();

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

describe('the acceptance migration', () => {
  it('marks earlier cancels as the store’s and gives earlier pending orders no deadline', async () => {
    expect((await migrator().migrateTo(BEFORE_ACCEPTANCE)).error).toBeUndefined();
    const pending = await insertOrder('open');
    const cancelled = await insertOrder('cancelled');
    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    expect(await columnsOf(pending)).toEqual({ accept_by: null, cancelled_by: null });
    expect(await columnsOf(cancelled)).toEqual({ accept_by: null, cancelled_by: 'store' });
  });

  it('refuses a canceller other than the store or the platform', async () => {
    const orderId = await insertOrder('cancelled');
    await expect(
      sql`update orders set cancelled_by = 'nobody' where order_id = ${orderId}`.execute(db),
    ).rejects.toThrow(/check constraint/);
  });

  it('rolls back and forward again', async () => {
    expect((await migrator().migrateTo(BEFORE_ACCEPTANCE)).error).toBeUndefined();
    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    expect(await db.selectFrom('store_acceptance_timeouts').select('store_id').execute()).toEqual(
      [],
    );
  });
});
