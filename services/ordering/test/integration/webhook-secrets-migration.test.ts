import {
  createDatabase,
  keyringFromEnv,
  migrateToLatest,
  open,
  parseKeyring,
  seal,
  SecretBindingError,
  unboundForMigrations,
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
import { endpointSecretBinding, streamSecretBinding } from '../../src/webhooks/secret-bindings.js';

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

/** The last migration that stored webhook secrets in plaintext. */
const BEFORE_SEALING = '2026-12-01T0200-flat-order-address';
/** The last migration that left them sealed unbound (sb1). */
const BEFORE_BINDING = '2026-12-24T0100-order-refunds';

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
  it('are sealed by the migration, then bound to their rows: no plaintext stays, and each opens to what it was in its own row only', async () => {
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

    expect((await migrator.migrateTo(BEFORE_BINDING)).error).toBeUndefined();
    const unbound = await endpoint(rotating);
    expect(unbound.secret).toMatch(/^sb1\.dev\./);
    expect(unboundForMigrations.open(dev, unbound.secret)).toBe(secrets.current);
    // A test tenant's stream secret, sealed unbound as the stream's handler did then.
    const tenant = randomUUID();
    const streamSecret = newSecret();
    await db
      .insertInto('webhook_streams')
      .values({ partner_id: tenant, secret: unboundForMigrations.seal(dev, streamSecret) })
      .execute();

    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);

    const table = JSON.stringify(await db.selectFrom('webhook_endpoints').selectAll().execute());
    for (const secret of Object.values(secrets)) {
      expect(table).not.toContain(secret.slice('whsec_'.length));
    }
    // Endpoints from before modes are live.
    const rotatingRow = endpointSecretBinding({ partner_id: rotating, mode: 'live' });
    const bound = await endpoint(rotating);
    expect(bound.secret).toMatch(/^sb2\.dev\./);
    expect(open(dev, rotatingRow, bound.secret)).toBe(secrets.current);
    expect(open(dev, rotatingRow, bound.previous_secret!)).toBe(secrets.previous);
    const single = await endpoint(plain);
    expect(
      open(dev, endpointSecretBinding({ partner_id: plain, mode: 'live' }), single.secret),
    ).toBe(secrets.plain);
    expect(single.previous_secret).toBeNull();
    const stream = await db
      .selectFrom('webhook_streams')
      .select('secret')
      .where('partner_id', '=', tenant)
      .executeTakeFirstOrThrow();
    expect(stream.secret).toMatch(/^sb2\.dev\./);
    expect(open(dev, streamSecretBinding(tenant), stream.secret)).toBe(streamSecret);
    // Bound: not in another partner's row, nor the other mode's, nor as an sb1 value.
    expect(() =>
      open(dev, endpointSecretBinding({ partner_id: plain, mode: 'live' }), bound.secret),
    ).toThrow(SecretBindingError);
    expect(() =>
      open(dev, endpointSecretBinding({ partner_id: rotating, mode: 'test' }), bound.secret),
    ).toThrow(SecretBindingError);
    expect(() => open(dev, rotatingRow, unbound.secret)).toThrow(SecretBindingError);
  });

  it('are re-wrapped under a new first key by rewrap-secrets, and an unknown key fails loudly', async () => {
    const partnerId = randomUUID();
    const row = endpointSecretBinding({ partner_id: partnerId, mode: 'live' });
    const secret = newSecret();
    const sealed = seal(dev, row, secret);
    await db
      .insertInto('webhook_endpoints')
      .values({
        partner_id: partnerId,
        url: 'https://market.example/hooks',
        events: ['order.created'],
        secret: sealed,
      })
      .execute();
    // A test tenant's webhook stream secret is sealed the same way.
    const streamSecret = newSecret();
    await db
      .insertInto('webhook_streams')
      .values({
        partner_id: partnerId,
        secret: seal(dev, streamSecretBinding(partnerId), streamSecret),
      })
      .execute();
    const next = `next:${randomBytes(32).toString('base64')}`;
    const result = await rewrapWebhookSecrets(db, parseKeyring(`${next},${devEntry}`), {
      rotateDataKey: false,
    });
    expect(result.rewrapped).toBeGreaterThanOrEqual(2);
    const moved = await endpoint(partnerId);
    expect(moved.secret).toMatch(/^sb2\.next\./);
    // Only the data key's wrapping changed.
    expect(moved.secret.split('.')[3]).toBe(sealed.split('.')[3]);
    // The new key alone opens it: the dev key can be dropped.
    expect(open(parseKeyring(next), row, moved.secret)).toBe(secret);
    const stream = await db
      .selectFrom('webhook_streams')
      .select('secret')
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow();
    expect(open(parseKeyring(next), streamSecretBinding(partnerId), stream.secret)).toBe(
      streamSecret,
    );
    // A keyring without the key the rows name refuses, and changes nothing.
    await expect(rewrapWebhookSecrets(db, dev, { rotateDataKey: false })).rejects.toThrow(
      /sealed with key "next", which SECRETS_KEYS lacks/,
    );
    expect((await endpoint(partnerId)).secret).toBe(moved.secret);

    // Rotating data keys too: every value re-sealed under a fresh data key.
    const rotated = await rewrapWebhookSecrets(db, parseKeyring(next), { rotateDataKey: true });
    expect(rotated.rewrapped).toBe(rotated.examined);
    const resealed = await endpoint(partnerId);
    expect(resealed.secret).toMatch(/^sb2\.next\./);
    expect(resealed.secret.split('.')[2]).not.toBe(moved.secret.split('.')[2]);
    // A new ciphertext: re-sealed, not only re-wrapped (a fresh data key: secret-box.test.ts).
    expect(resealed.secret.split('.')[3]).not.toBe(moved.secret.split('.')[3]);
    expect(open(parseKeyring(next), row, resealed.secret)).toBe(secret);
  });
});
