import { FIRST_PINNED_API_VERSION, LATEST_API_VERSION } from '@pcp/contracts';
import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createPartner } from '../../src/admin/partner-admin.js';
import { GATEWAY_SCHEMA, gatewayMigrations } from '../../src/db/migrations/index.js';
import type { GatewayDatabase } from '../../src/db/partner.table.js';

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;

/** The last migration before partners were pinned to an API version. */
const BEFORE_PINS = '2026-12-30T0100-client-request-ids';

const migrator = () =>
  new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: GATEWAY_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(gatewayMigrations) },
  });

const columnExists = async () =>
  (
    await sql<{ found: boolean }>`select exists (select 1 from information_schema.columns
      where table_schema = ${GATEWAY_SCHEMA} and table_name = 'partners'
        and column_name = 'api_version') as found`.execute(db)
  ).rows[0]?.found;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<GatewayDatabase>({
    url: env.databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: 'test',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

describe('the partner API version migration', () => {
  it('pins the partners that existed to 2026-12-01, requires a pin from then on, and reverts', async () => {
    expect((await migrator().migrateTo(BEFORE_PINS)).error).toBeUndefined();
    const before = await sql<{ partner_id: string }>`
      insert into partners (kind, name) values ('commerce', 'Before'), ('distribution', 'Too')
      returning partner_id`.execute(db);

    await migrateToLatest(db, GATEWAY_SCHEMA, gatewayMigrations);
    const pins = await db
      .selectFrom('partners')
      .select(['partner_id', 'api_version'])
      .where(
        'partner_id',
        'in',
        before.rows.map((row) => row.partner_id),
      )
      .execute();
    expect(pins).toHaveLength(2);
    for (const pin of pins) expect(pin.api_version).toBe(FIRST_PINNED_API_VERSION);
    // A row without a pin, or with something that is not a date, is refused.
    await expect(
      sql`insert into partners (kind, name) values ('commerce', 'Unpinned')`.execute(db),
    ).rejects.toThrow(/api_version/);
    await expect(
      sql`insert into partners (kind, name, api_version)
        values ('commerce', 'Odd', 'latest')`.execute(db),
    ).rejects.toThrow(/check/);
    // A partner created now is pinned to the newest version.
    const created = await createPartner(db, { kind: 'commerce', name: 'After' });
    const row = await db
      .selectFrom('partners')
      .select('api_version')
      .where('partner_id', '=', created.partnerId)
      .executeTakeFirstOrThrow();
    expect(row.api_version).toBe(LATEST_API_VERSION);

    expect((await migrator().migrateTo(BEFORE_PINS)).error).toBeUndefined();
    expect(await columnExists()).toBe(false);
    expect(await db.selectFrom('partners').select('partner_id').execute()).toHaveLength(3);
    await migrateToLatest(db, GATEWAY_SCHEMA, gatewayMigrations);
    expect(await columnExists()).toBe(true);
  });
});
