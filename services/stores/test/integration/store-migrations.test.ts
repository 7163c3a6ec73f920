import { subjects } from '@pcp/contracts';
import {
  keyringFromEnv,
  migrateToLatest,
  open,
  SecretBindingError,
  unboundForMigrations,
  type BusClient,
} from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORES_SCHEMA, storesMigrations, type StoresDatabase } from '../../src/app.js';
import { submissionSecretBinding } from '../../src/db/secret-binding.js';

let stores: StoresUnderTest;
let db: Kysely<StoresDatabase>;
let client: BusClient;

/** The last migration before the delivery radius cap and ISO 4217 digits. */
const BEFORE_HARDENING = '2026-11-22T0400-store-delivery-radius-index';
/** The last migration before order submission secrets. */
const BEFORE_SECRETS = '2026-11-25T0100-store-catalog-version';
/** The last migration that stored them in plaintext. */
const BEFORE_SEALING = '2026-11-30T0100-store-location-covering-index';
/** The last migration that left them sealed unbound (sb1). */
const BEFORE_BINDING = '2026-12-21T0100-store-profile-version';

async function migrateTo(name: string) {
  const migrator = new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: STORES_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(storesMigrations) },
  });
  const { error } = await migrator.migrateTo(name);
  expect(error).toBeUndefined();
}

/** A store row as saved before those migrations: money scaled by the runtime's ICU digits. */
async function insertOldStore(store: {
  currency: string;
  radiusMeters: number;
  feeMinor: number;
  minimumOrderMinor: number;
  orderSubmissionUrl?: string;
}): Promise<string> {
  const storeId = randomUUID();
  await sql`
    insert into stores (store_id, partner_id, name, phone, timezone, currency, address1, city,
      state, postal_code, country, latitude, longitude, fulfillment_types, availability,
      delivery_radius_meters, delivery_fee_minor, delivery_minimum_order_minor,
      delivery_eta_minutes, tax_rate_ppm, minimum_order_minor, order_submission_url, status)
    values (${storeId}, ${randomUUID()}, 'Saved before', '+3612345678', 'Europe/Budapest',
      ${store.currency}, 'Váci utca 1', 'Budapest', 'Budapest', '1052', 'HU', 47.49, 19.05,
      array['DELIVERY_BY_MERCHANT'], '[]'::jsonb, ${store.radiusMeters}, ${store.feeMinor},
      ${store.feeMinor}, 30, 0, ${store.minimumOrderMinor}, ${store.orderSubmissionUrl ?? null},
      'online')
  `.execute(db);
  return storeId;
}

const lookUp = (storeId: string) =>
  client.request(
    subjects.stores.lookup,
    { storeId },
    { requestId: randomUUID(), partnerId: randomUUID(), partnerKind: 'distribution', mode: 'live' },
  );

beforeAll(async () => {
  stores = await startStoresUnderTest();
  ({ db, client } = stores);
});

afterAll(async () => {
  await stores?.stop();
});

describe('stores migrations of issue 9', () => {
  it('cap saved delivery radii at 50 km and keep saved amounts at their value in ISO digits', async () => {
    await migrateTo(BEFORE_HARDENING);
    // 500 HUF and 250 IQD as the runtime's locale data scaled them (0 digits); 2.99 USD.
    const forint = await insertOldStore({
      currency: 'HUF',
      radiusMeters: 120_000,
      feeMinor: 500,
      minimumOrderMinor: 2_000,
    });
    const dinar = await insertOldStore({
      currency: 'IQD',
      radiusMeters: 50_000,
      feeMinor: 250,
      minimumOrderMinor: 0,
    });
    const dollar = await insertOldStore({
      currency: 'USD',
      radiusMeters: 5_000,
      feeMinor: 299,
      minimumOrderMinor: 1_500,
    });

    await migrateToLatest(db, STORES_SCHEMA, storesMigrations);

    expect(await lookUp(forint)).toMatchObject({
      currency: 'HUF',
      delivery: { radiusMeters: 50_000, fee: 500, minimumOrder: 500 },
      minimumOrder: 2_000,
    });
    expect(await lookUp(dinar)).toMatchObject({
      delivery: { radiusMeters: 50_000, fee: 250, minimumOrder: 250 },
    });
    expect(await lookUp(dollar)).toMatchObject({
      delivery: { radiusMeters: 5_000, fee: 2.99, minimumOrder: 2.99 },
      minimumOrder: 15,
    });
    // The cap holds for rows written any other way too.
    await expect(
      sql`update stores set delivery_radius_meters = 50001 where store_id = ${dollar}`.execute(db),
    ).rejects.toThrow(/stores_delivery_radius_cap/);
  });
});

describe('the order submission secret migration', () => {
  it('gives each saved store with an orderSubmissionUrl its own signing secret', async () => {
    await migrateTo(BEFORE_SECRETS);
    const saved = (orderSubmissionUrl?: string) =>
      insertOldStore({
        currency: 'USD',
        radiusMeters: 5_000,
        feeMinor: 299,
        minimumOrderMinor: 0,
        orderSubmissionUrl,
      });
    const first = await saved('https://partner.example/orders');
    const second = await saved('https://partner.example/orders');
    const none = await saved();
    const stored = async () =>
      new Map(
        (
          await db
            .selectFrom('stores')
            .select(['store_id', 'order_submission_secret'])
            .where('store_id', 'in', [first, second, none])
            .execute()
        ).map((row) => [row.store_id, row.order_submission_secret]),
      );

    await migrateTo(BEFORE_SEALING);
    const plaintext = await stored();
    expect(plaintext.get(first)).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(plaintext.get(second)).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(plaintext.get(first)).not.toBe(plaintext.get(second));
    expect(plaintext.get(none)).toBeNull();

    // The next migration seals them (the dev key here: SECRETS_KEYS is unset in tests),
    // unbound; a later one binds each to its row.
    const keyring = keyringFromEnv({});
    await migrateTo(BEFORE_BINDING);
    const unbound = await stored();
    for (const storeId of [first, second]) {
      const value = unbound.get(storeId)!;
      expect(value).toMatch(/^sb1\.dev\./);
      expect(value).not.toContain(plaintext.get(storeId)!.slice('whsec_'.length));
      expect(unboundForMigrations.open(keyring, value)).toBe(plaintext.get(storeId));
    }
    await migrateToLatest(db, STORES_SCHEMA, storesMigrations);
    const sealed = await stored();
    const rows = await db
      .selectFrom('stores')
      .select(['store_id', 'partner_id', 'mode'])
      .where('store_id', 'in', [first, second])
      .execute();
    for (const row of rows) {
      const value = sealed.get(row.store_id)!;
      expect(value).toMatch(/^sb2\.dev\./);
      expect(value).not.toContain(plaintext.get(row.store_id)!.slice('whsec_'.length));
      expect(open(keyring, submissionSecretBinding(row), value)).toBe(plaintext.get(row.store_id));
      // Bound: the other store's row does not open it, nor does sb1's (unbound) reading.
      const other = rows.find((candidate) => candidate.store_id !== row.store_id)!;
      expect(() => open(keyring, submissionSecretBinding(other), value)).toThrow(
        SecretBindingError,
      );
      expect(() => open(keyring, submissionSecretBinding(row), unbound.get(row.store_id)!)).toThrow(
        SecretBindingError,
      );
    }
    expect(sealed.get(none)).toBeNull();
    // Ordering gets the secret it had before.
    expect(
      await client.request(
        subjects.stores.submissionSecrets,
        { storeId: first },
        {
          requestId: randomUUID(),
          partnerId: randomUUID(),
          partnerKind: 'distribution',
          mode: 'live',
        },
      ),
    ).toEqual({ secrets: [plaintext.get(first)] });
  });
});

describe('the store hours and busy migration', () => {
  const BEFORE_HOURS = '2026-12-02T0100-seal-submission-secrets';
  const saved = () =>
    insertOldStore({ currency: 'USD', radiusMeters: 5_000, feeMinor: 299, minimumOrderMinor: 0 });

  it('marks saved pauses as the partner’s and gives saved stores the defaults', async () => {
    await migrateTo(BEFORE_HOURS);
    const online = await saved();
    const paused = await saved();
    await sql`update stores set status = 'paused', pause_reason = 'too_busy', paused_at = now()
      where store_id = ${paused}`.execute(db);

    await migrateToLatest(db, STORES_SCHEMA, storesMigrations);
    const rows = await db
      .selectFrom('stores')
      .select([
        'store_id',
        'status',
        'paused_by',
        'extra_prep_minutes',
        'special_days',
        'acceptance_window_seconds',
      ])
      .where('store_id', 'in', [online, paused])
      .orderBy('status')
      .execute();
    const defaults = { extra_prep_minutes: null, special_days: [], acceptance_window_seconds: 600 };
    expect(rows).toEqual([
      { store_id: online, status: 'online', paused_by: null, ...defaults },
      { store_id: paused, status: 'paused', paused_by: 'partner', ...defaults },
    ]);
    expect(await lookUp(online)).toMatchObject({
      acceptanceWindowSeconds: 600,
      extraPrepMinutes: null,
    });
    // The checks hold for rows written any other way.
    await expect(
      sql`update stores set paused_by = null where store_id = ${paused}`.execute(db),
    ).rejects.toThrow(/stores_paused_by_paused/);
    await expect(
      sql`update stores set acceptance_window_seconds = 59 where store_id = ${online}`.execute(db),
    ).rejects.toThrow(/stores_acceptance_window_range/);
  });

  it('reverts a busy store to online when migrated down', async () => {
    const busy = await saved();
    await sql`update stores set status = 'busy', extra_prep_minutes = 15, paused_at = now()
      where store_id = ${busy}`.execute(db);
    await migrateTo(BEFORE_HOURS);
    const { rows } = await sql<{ status: string }>`select status from stores
      where store_id = ${busy}`.execute(db);
    expect(rows).toEqual([{ status: 'online' }]);
    await migrateToLatest(db, STORES_SCHEMA, storesMigrations);
  });
});
