import {
  createDatabase,
  keyringFromEnv,
  migrateToLatest,
  open,
  parseKeyring,
  seal,
} from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  ORDERING_SCHEMA,
  orderingMigrations,
  rewrapWebhookSecrets,
  type OrderingDatabase,
} from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

/** The last migration that stored webhook secrets in plaintext. */
const BEFORE_SEALING = '2026-12-01T0200-flat-order-address';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
/** The dev keyring the migration uses (SECRETS_KEYS is unset in tests). */
const dev = keyringFromEnv({});
const devEntry = `dev:${dev.keys.get('dev')!.toString('base64')}`;

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

const endpoint = (partnerId: string) =>
  db
    .selectFrom('webhook_endpoints')
    .select(['secret', 'previous_secret'])
    .where('partner_id', '=', partnerId)
    .executeTakeFirstOrThrow();

describe('webhook signing secrets at rest', () => {
  it('are sealed by the migration: no plaintext stays, and each opens to what it was', async () => {
    const migrator = new Migrator({
      db: db as Kysely<unknown>,
      migrationTableSchema: ORDERING_SCHEMA,
      provider: { getMigrations: () => Promise.resolve(orderingMigrations) },
    });
    expect((await migrator.migrateTo(BEFORE_SEALING)).error).toBeUndefined();
    const [rotating, plain] = [randomUUID(), randomUUID()];
    const secrets = { current: newSecret(), previous: newSecret(), plain: newSecret() };
    await sql`insert into webhook_endpoints (partner_id, url, events, secret, previous_secret,
        previous_secret_expires_at)
      values (${rotating}, 'https://market.example/hooks', array['order.created'],
        ${secrets.current}, ${secrets.previous}, now() + interval '1 hour'),
        (${plain}, 'https://market.example/hooks', array['order.created'], ${secrets.plain},
        null, null)`.execute(db);

    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);

    const table = JSON.stringify(await db.selectFrom('webhook_endpoints').selectAll().execute());
    for (const secret of Object.values(secrets)) {
      expect(table).not.toContain(secret.slice('whsec_'.length));
    }
    const sealed = await endpoint(rotating);
    expect(sealed.secret).toMatch(/^sb1\.dev\./);
    expect(open(dev, sealed.secret)).toBe(secrets.current);
    expect(open(dev, sealed.previous_secret!)).toBe(secrets.previous);
    const single = await endpoint(plain);
    expect(open(dev, single.secret)).toBe(secrets.plain);
    expect(single.previous_secret).toBeNull();
  });

  it('are re-wrapped under a new first key by rewrap-secrets, and an unknown key fails loudly', async () => {
    const partnerId = randomUUID();
    const secret = newSecret();
    await db
      .insertInto('webhook_endpoints')
      .values({
        partner_id: partnerId,
        url: 'https://market.example/hooks',
        events: ['order.created'],
        secret: seal(dev, secret),
      })
      .execute();
    // A test tenant's webhook stream secret is sealed the same way.
    const streamSecret = newSecret();
    await db
      .insertInto('webhook_streams')
      .values({ partner_id: partnerId, secret: seal(dev, streamSecret) })
      .execute();
    const next = `next:${randomBytes(32).toString('base64')}`;
    const result = await rewrapWebhookSecrets(db, parseKeyring(`${next},${devEntry}`));
    expect(result.rewrapped).toBeGreaterThanOrEqual(2);
    const moved = await endpoint(partnerId);
    expect(moved.secret).toMatch(/^sb1\.next\./);
    // The new key alone opens it: the dev key can be dropped.
    expect(open(parseKeyring(next), moved.secret)).toBe(secret);
    const stream = await db
      .selectFrom('webhook_streams')
      .select('secret')
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow();
    expect(open(parseKeyring(next), stream.secret)).toBe(streamSecret);
    // A keyring without the key the rows name refuses, and changes nothing.
    await expect(rewrapWebhookSecrets(db, dev)).rejects.toThrow(
      /sealed with key "next", which SECRETS_KEYS lacks/,
    );
    expect((await endpoint(partnerId)).secret).toBe(moved.secret);
  });
});
