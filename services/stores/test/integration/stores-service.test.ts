import { events, subjects } from '@pcp/contracts';
import {
  applyJetStreamTopology,
  createBusClient,
  deadLetterHeaders,
  deadLetterStream,
  deadLetterSubject,
  eventIdOf,
  jetStreamTopology,
  keyringFromEnv,
  open,
  parseKeyring,
  type AppError,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomBytes, randomUUID } from 'node:crypto';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestEnvironment } from '@pcp/testing/environment';
import {
  createStoresService,
  rewrapSubmissionSecrets,
  storesEnvSchema,
  type StoresDatabase,
} from '../../src/app.js';
import { submissionSecretBinding } from '../../src/db/secret-binding.js';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { storeProfile } from '@pcp/testing/fixtures';

let stores: StoresUnderTest;
let env: TestEnvironment;
let db: Kysely<StoresDatabase>;
let client: BusClient;
/** The service's clock; tests move it. */
let clockNow = new Date('2026-11-22T12:00:00.000Z');

const commerce = (partnerId: string): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'commerce',
  mode: 'live',
});
const distribution = (): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution',
  mode: 'live',
});
/** `whsec_` and the base64 of 24 bytes. */
const SIGNING_SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;

beforeAll(async () => {
  stores = await startStoresUnderTest({ clock: () => clockNow });
  ({ env, db, client } = stores);
});

afterAll(async () => {
  await stores?.stop();
});

describe('stores.v1.upsert', () => {
  it('refuses a partner’s new store beyond STORES_MAX_PER_PARTNER with 409 STORE_LIMIT_REACHED, and still replaces its stores', async () => {
    const prefix = `${env.prefix}_capped`;
    const capped = createStoresService({
      nc: env.nc,
      logger: env.logger,
      metrics: env.newMetrics('stores'),
      subjectPrefix: prefix,
      requestTimeoutMs: 5_000,
      db,
      config: { ...storesEnvSchema.parse({}), STORES_MAX_PER_PARTNER: 3 },
    });
    await applyJetStreamTopology(await env.nc.jetstreamManager(), jetStreamTopology(prefix));
    await capped.start();
    try {
      const cappedClient = createBusClient(env.nc, {
        prefix,
        timeoutMs: 5_000,
        logger: env.logger,
      });
      const partnerId = randomUUID();
      const upsert = (storeId: string, name = 'Chicago Burgers') =>
        cappedClient.request(
          subjects.stores.upsert,
          { storeId, profile: storeProfile({ name }) },
          commerce(partnerId),
        );
      const storeIds = Array.from({ length: 5 }, () => randomUUID());
      // Concurrent creations cannot pass the limit together.
      const results = await Promise.allSettled(storeIds.map((storeId) => upsert(storeId)));
      expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(3);
      const refused = results.filter((result) => result.status === 'rejected');
      expect(refused).toHaveLength(2);
      expect(refused.map((result) => (result.reason as AppError).code)).toEqual([
        'STORE_LIMIT_REACHED',
        'STORE_LIMIT_REACHED',
      ]);
      const held = await db
        .selectFrom('stores')
        .select('store_id')
        .where('partner_id', '=', partnerId)
        .execute();
      expect(held).toHaveLength(3);
      const replaced = await upsert(held[0]!.store_id, 'Loop Burgers');
      expect({ created: replaced.created, name: replaced.store.name }).toEqual({
        created: false,
        name: 'Loop Burgers',
      });
      // Another partner is not held back by this one.
      const other = await cappedClient.request(
        subjects.stores.upsert,
        { storeId: randomUUID(), profile: storeProfile() },
        commerce(randomUUID()),
      );
      expect(other.created).toBe(true);
    } finally {
      await capped.stop();
    }
  });

  it('creates a store, then replaces it', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const first = await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(partnerId),
    );
    expect(first.created).toBe(true);
    expect(first.store).toMatchObject({
      storeId,
      name: 'Chicago Burgers',
      currency: 'USD',
      delivery: { fee: 2.99, minimumOrder: 15 },
      taxRate: 0.0875,
      status: 'online',
    });

    const second = await client.request(
      subjects.stores.upsert,
      {
        storeId,
        profile: storeProfile({ name: 'Loop Burgers', currency: 'KWD', minimumOrder: 1.125 }),
      },
      commerce(partnerId),
    );
    expect(second.created).toBe(false);
    expect(second.store).toMatchObject({
      name: 'Loop Burgers',
      currency: 'KWD',
      minimumOrder: 1.125,
    });
    expect(second.store.createdAt).toBe(first.store.createdAt);

    const row = await db
      .selectFrom('stores')
      .selectAll()
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      partner_id: partnerId,
      name: 'Loop Burgers',
      minimum_order_minor: 1125,
      tax_rate_ppm: 87_500,
    });
  });

  it('lets concurrent upserts of one new id by its partner all succeed, exactly one creating', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, index) =>
        client.request(
          subjects.stores.upsert,
          { storeId, profile: storeProfile({ name: `Burgers ${index}` }) },
          commerce(partnerId),
        ),
      ),
    );
    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect(results.every((result) => result.store.storeId === storeId)).toBe(true);
    const rows = await db
      .selectFrom('stores')
      .select(['name', 'partner_id'])
      .where('store_id', '=', storeId)
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.partner_id).toBe(partnerId);
  });

  it('answers STORE_NOT_FOUND to another partner and leaves the store unchanged', async () => {
    const owner = randomUUID();
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(owner),
    );
    const before = await db
      .selectFrom('stores')
      .selectAll()
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();

    await expectAppError(
      client.request(
        subjects.stores.upsert,
        { storeId, profile: storeProfile({ name: 'Hijacked' }) },
        commerce(randomUUID()),
      ),
      'STORE_NOT_FOUND',
    );
    await expectAppError(
      client.request(subjects.stores.get, { storeId }, commerce(randomUUID())),
      'STORE_NOT_FOUND',
    );

    const after = await db
      .selectFrom('stores')
      .selectAll()
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();
    expect(after).toEqual(before);
    expect(after.name).toBe('Chicago Burgers');
  });

  it('answers FORBIDDEN to a distribution partner or an anonymous caller', async () => {
    const storeId = randomUUID();
    await expectAppError(
      client.request(
        subjects.stores.upsert,
        { storeId, profile: storeProfile() },
        {
          requestId: randomUUID(),
          partnerId: randomUUID(),
          partnerKind: 'distribution',
          mode: 'live',
        },
      ),
      'FORBIDDEN',
    );
    await expectAppError(
      client.request(
        subjects.stores.upsert,
        { storeId, profile: storeProfile() },
        { requestId: randomUUID() },
      ),
      'FORBIDDEN',
    );
    const rows = await db
      .selectFrom('stores')
      .select('store_id')
      .where('store_id', '=', storeId)
      .execute();
    expect(rows).toEqual([]);
  });

  it('answers an invalid profile with REQUEST_INVALID and element pointers under /profile', async () => {
    const error = await expectAppError(
      client.request(
        subjects.stores.upsert,
        { storeId: randomUUID(), profile: storeProfile({ currency: 'JPY', minimumOrder: 1.5 }) },
        commerce(randomUUID()),
      ),
      'REQUEST_INVALID',
    );
    // The USD-style fee 2.99 is too precise for JPY as well.
    expect(error.errors?.map((e) => [e.code, e.pointer]).sort()).toEqual([
      ['PRECISION_EXCEEDED', '/profile/delivery/fee'],
      ['PRECISION_EXCEEDED', '/profile/minimumOrder'],
    ]);
  });
});

describe('stores.v1.get / lookup / list', () => {
  it('shows the owner the commerce view and distribution partners the marketfront view', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(partnerId),
    );
    const own = await client.request(subjects.stores.get, { storeId }, commerce(partnerId));
    expect(own.orderSubmissionUrl).toBe('https://partner.example/orders');
    expect(own).not.toHaveProperty('orderSubmissionSecret');
    const market = await client.request(subjects.stores.lookup, { storeId }, distribution());
    expect(market).toMatchObject({ storeId, name: 'Chicago Burgers', status: 'online' });
    expect(market).not.toHaveProperty('orderSubmissionUrl');
    expect(market).not.toHaveProperty('orderSubmissionSecret');
    await expectAppError(
      client.request(subjects.stores.lookup, { storeId }, commerce(partnerId)),
      'FORBIDDEN',
    );
  });

  it('pages through a partner’s stores, oldest first, with totals', async () => {
    const partnerId = randomUUID();
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      const storeId = randomUUID();
      ids.push(storeId);
      await client.request(
        subjects.stores.upsert,
        { storeId, profile: storeProfile({ name: `S${index}` }) },
        commerce(partnerId),
      );
    }
    // Another partner's store never shows.
    await client.request(
      subjects.stores.upsert,
      { storeId: randomUUID(), profile: storeProfile() },
      commerce(randomUUID()),
    );

    const first = await client.request(subjects.stores.list, { limit: 2 }, commerce(partnerId));
    expect(first).toMatchObject({ totalCount: 5, hasMore: true });
    expect(first.stores.map((store) => store.storeId)).toEqual(ids.slice(0, 2));
    const middle = await client.request(
      subjects.stores.list,
      { limit: 2, offset: 2 },
      commerce(partnerId),
    );
    expect(middle).toMatchObject({ totalCount: 5, hasMore: true });
    expect(middle.stores.map((store) => store.storeId)).toEqual(ids.slice(2, 4));
    const last = await client.request(
      subjects.stores.list,
      { limit: 2, offset: 4 },
      commerce(partnerId),
    );
    expect(last).toMatchObject({ totalCount: 5, hasMore: false });
    expect(last.stores.map((store) => store.storeId)).toEqual([ids[4]]);
    const beyond = await client.request(subjects.stores.list, { offset: 10 }, commerce(partnerId));
    expect(beyond).toEqual({ stores: [], totalCount: 5, hasMore: false });
    const all = await client.request(subjects.stores.list, {}, commerce(partnerId));
    expect(all.stores.map((store) => store.storeId)).toEqual(ids);
    expect(all.hasMore).toBe(false);

    const empty = await client.request(subjects.stores.list, {}, commerce(randomUUID()));
    expect(empty).toEqual({ stores: [], totalCount: 0, hasMore: false });
    await expectAppError(
      client.request(subjects.stores.list, { limit: 0 }, commerce(partnerId)),
      'REQUEST_INVALID',
    );
  });
});

describe('order submission secret', () => {
  const upsert = (partnerId: string, storeId: string, overrides: Record<string, unknown> = {}) =>
    client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile(overrides) },
      commerce(partnerId),
    );
  const rotate = (partnerId: string, storeId: string) =>
    client.request(subjects.stores.rotateSubmissionSecret, { storeId }, commerce(partnerId));
  const signingSecrets = async (storeId: string) =>
    (await client.request(subjects.stores.submissionSecrets, { storeId }, distribution())).secrets;
  const storedSecrets = (storeId: string) =>
    db
      .selectFrom('stores')
      .select(['order_submission_secret', 'order_submission_previous_secret'])
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();

  it('is shown by the upsert that creates it and never again: not by get, list or later upserts', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const withoutUrl = await upsert(partnerId, storeId, { orderSubmissionUrl: null });
    expect(withoutUrl.store).toMatchObject({
      orderSubmissionUrl: null,
      orderSubmissionSecret: null,
    });
    expect((await storedSecrets(storeId)).order_submission_secret).toBeNull();

    const withUrl = await upsert(partnerId, storeId);
    const secret = withUrl.store.orderSubmissionSecret;
    expect(secret).toMatch(SIGNING_SECRET);
    expect(await signingSecrets(storeId)).toEqual([secret]);

    const renamed = await upsert(partnerId, storeId, { name: 'Loop Burgers' });
    expect(renamed.store.orderSubmissionSecret).toBeNull();
    const read = await client.request(subjects.stores.get, { storeId }, commerce(partnerId));
    expect(read).not.toHaveProperty('orderSubmissionSecret');
    const list = await client.request(subjects.stores.list, {}, commerce(partnerId));
    expect(list.stores[0]).not.toHaveProperty('orderSubmissionSecret');
    for (const reply of [read, list]) expect(JSON.stringify(reply)).not.toContain(secret!.slice(6));

    // Kept without a URL, so re-adding one keeps the owner's verification working.
    await upsert(partnerId, storeId, { orderSubmissionUrl: undefined });
    const readded = await upsert(partnerId, storeId);
    expect(readded.store.orderSubmissionSecret).toBeNull();
    expect(await signingSecrets(storeId)).toEqual([secret]);
  });

  it('is stored sealed: the table holds no plaintext secret', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const created = await upsert(partnerId, storeId);
    const rotated = await rotate(partnerId, storeId);
    const row = await storedSecrets(storeId);
    const stored = JSON.stringify(
      await db.selectFrom('stores').selectAll().where('store_id', '=', storeId).execute(),
    );
    for (const secret of [created.store.orderSubmissionSecret!, rotated.orderSubmissionSecret!]) {
      expect(stored).not.toContain(secret);
      expect(stored).not.toContain(secret.slice('whsec_'.length));
    }
    expect(row.order_submission_secret).toMatch(/^sb2\.dev\./);
    expect(row.order_submission_previous_secret).toMatch(/^sb2\.dev\./);
  });

  it("is bound to its store: one copied by SQL into another partner's test store is not handed out", async () => {
    const victimStore = randomUUID();
    const victim = (await upsert(randomUUID(), victimStore)).store.orderSubmissionSecret!;
    const attackerStore = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId: attackerStore, profile: storeProfile() },
      { ...commerce(randomUUID()), mode: 'test' },
    );
    const stolen = await storedSecrets(victimStore);
    await db
      .updateTable('stores')
      .set({ order_submission_secret: stolen.order_submission_secret })
      .where('store_id', '=', attackerStore)
      .execute();

    const error = await expectAppError(
      client.request(subjects.stores.submissionSecrets, { storeId: attackerStore }, distribution()),
      'INTERNAL',
    );
    expect(JSON.stringify(error)).not.toContain(victim);
    // In its own row it still opens.
    expect(await signingSecrets(victimStore)).toEqual([victim]);
    // A rotation refuses while the copy is there (it does not open for its row): gone, so
    // this file's rotation test sees sound rows only.
    await expect(
      rewrapSubmissionSecrets(db, keyringFromEnv({}), { rotateDataKey: true }),
    ).rejects.toThrow(`stores.stores row ${attackerStore} (test)`);
    await db.deleteFrom('stores').where('store_id', '=', attackerStore).execute();
  });

  it('is one secret, shown once, when concurrent upserts create the store', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, index) => upsert(partnerId, storeId, { name: `B${index}` })),
    );
    const shown = results.map((r) => r.store.orderSubmissionSecret).filter((s) => s !== null);
    expect(shown).toHaveLength(1);
    expect(await signingSecrets(storeId)).toEqual(shown);
  });

  it('is never set or changed by a sent-back value', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const one = await upsert(partnerId, storeId);
    await upsert(partnerId, storeId, { orderSubmissionSecret: 'whsec_c2VudC1iYWNrLXNlY3JldA==' });
    expect(await signingSecrets(storeId)).toEqual([one.store.orderSubmissionSecret]);
  });

  it('rotates: the new one is shown once and both sign for the overlap, then only the new one', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const first = (await upsert(partnerId, storeId)).store.orderSubmissionSecret;
    const rotated = await rotate(partnerId, storeId);
    expect(rotated.orderSubmissionSecret).toMatch(SIGNING_SECRET);
    expect(rotated.orderSubmissionSecret).not.toBe(first);
    // The overlap is 24 hours (STORES_SUBMISSION_SECRET_OVERLAP_MS) on the service's clock.
    const expiresAt = new Date(rotated.orderSubmissionPreviousSecretExpiresAt!);
    expect(expiresAt.getTime() - clockNow.getTime()).toBe(86_400_000);
    expect(await signingSecrets(storeId)).toEqual([rotated.orderSubmissionSecret, first]);
    const read = await client.request(subjects.stores.get, { storeId }, commerce(partnerId));
    expect(read.orderSubmissionPreviousSecretExpiresAt).toBe(expiresAt.toISOString());

    const saved = clockNow;
    clockNow = new Date(expiresAt.getTime() + 1);
    try {
      expect(await signingSecrets(storeId)).toEqual([rotated.orderSubmissionSecret]);
      const after = await client.request(subjects.stores.get, { storeId }, commerce(partnerId));
      expect(after.orderSubmissionPreviousSecretExpiresAt).toBeNull();
    } finally {
      clockNow = saved;
    }
  });

  it('rotates only the caller’s own store', async () => {
    const storeId = randomUUID();
    await upsert(randomUUID(), storeId);
    await expectAppError(rotate(randomUUID(), storeId), 'STORE_NOT_FOUND');
    await expectAppError(rotate(randomUUID(), randomUUID()), 'STORE_NOT_FOUND');
    await expectAppError(
      client.request(subjects.stores.rotateSubmissionSecret, { storeId }, distribution()),
      'FORBIDDEN',
    );
  });

  it('answers STORE_NOT_FOUND for the signing secrets of a store without any', async () => {
    const storeId = randomUUID();
    await upsert(randomUUID(), storeId, { orderSubmissionUrl: null });
    await expectAppError(
      client.request(subjects.stores.submissionSecrets, { storeId }, distribution()),
      'STORE_NOT_FOUND',
    );
  });

  it('cannot be missing while the store has a URL (a database check)', async () => {
    const storeId = randomUUID();
    await upsert(randomUUID(), storeId);
    await expect(
      db
        .updateTable('stores')
        .set({ order_submission_secret: null })
        .where('store_id', '=', storeId)
        .execute(),
    ).rejects.toThrow(/stores_order_submission_secret/);
  });
});

describe('rewrapSubmissionSecrets', () => {
  it('moves every secret to the first key so the old key can go, and fails loudly on an unknown key', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const first = (
      await client.request(
        subjects.stores.upsert,
        { storeId, profile: storeProfile() },
        commerce(partnerId),
      )
    ).store.orderSubmissionSecret;
    const next = `next:${randomBytes(32).toString('base64')}`;
    const dev = keyringFromEnv({});
    const devEntry = `dev:${dev.keys.get('dev')!.toString('base64')}`;
    const result = await rewrapSubmissionSecrets(db, parseKeyring(`${next},${devEntry}`), {
      rotateDataKey: false,
    });
    expect(result.rewrapped).toBeGreaterThanOrEqual(1);
    const stored = () =>
      db
        .selectFrom('stores')
        .select(['store_id', 'partner_id', 'mode', 'order_submission_secret'])
        .where('store_id', '=', storeId)
        .executeTakeFirstOrThrow();
    const row = await stored();
    const binding = submissionSecretBinding(row);
    expect(row.order_submission_secret).toMatch(/^sb2\.next\./);
    // The new key alone opens it now; the dev key alone cannot.
    expect(open(parseKeyring(next), binding, row.order_submission_secret!)).toBe(first);
    expect(() => open(dev, binding, row.order_submission_secret!)).toThrow(
      /"next".*SECRETS_KEYS lacks/,
    );
    await expect(rewrapSubmissionSecrets(db, dev, { rotateDataKey: false })).rejects.toThrow(
      /"next"/,
    );
    // Back under the dev key, for the other tests of this file, each under a fresh data key.
    await rewrapSubmissionSecrets(db, parseKeyring(`${devEntry},${next}`), { rotateDataKey: true });
    const resealed = (await stored()).order_submission_secret!;
    expect(resealed).toMatch(/^sb2\.dev\./);
    // A new ciphertext: re-sealed, not only re-wrapped (a fresh data key: secret-box.test.ts).
    expect(resealed.split('.')[3]).not.toBe(row.order_submission_secret!.split('.')[3]);
    expect(
      await client.request(subjects.stores.submissionSecrets, { storeId }, distribution()),
    ).toEqual({
      secrets: [first],
    });
  });
});

describe('stores.v1.order-context', () => {
  it('gives ordering the store’s owner and where to submit its orders, never a secret', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    const { store } = await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(partnerId),
    );
    const context = await client.request(subjects.stores.orderContext, { storeId }, distribution());
    expect(context).toMatchObject({
      store: { storeId, name: 'Chicago Burgers' },
      availability: { storeId },
      ownerPartnerId: partnerId,
      submission: { url: 'https://partner.example/orders' },
    });
    expect(JSON.stringify(context)).not.toContain(store.orderSubmissionSecret!.slice(6));
  });

  it('has no submission while the store has no orderSubmissionUrl', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile({ orderSubmissionUrl: null }) },
      commerce(partnerId),
    );
    const context = await client.request(subjects.stores.orderContext, { storeId }, distribution());
    expect(context).toMatchObject({ ownerPartnerId: partnerId, submission: null });
  });

  it('answers FORBIDDEN to a commerce partner, its owner included', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(partnerId),
    );
    await expectAppError(
      client.request(subjects.stores.orderContext, { storeId }, commerce(partnerId)),
      'FORBIDDEN',
    );
  });
});

describe('store status', () => {
  it('pauses at the injected clock and reads online once the clock passes resumeAt', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(partnerId),
    );

    clockNow = new Date('2026-11-22T12:00:00.000Z');
    const resumeAt = '2026-11-22T13:00:00.000Z';
    const paused = await client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'paused', reason: 'too_busy', resumeAt } },
      commerce(partnerId),
    );
    expect(paused).toEqual({
      status: 'paused',
      reason: 'too_busy',
      pausedAt: clockNow.toISOString(),
      resumeAt,
      extraPrepMinutes: null,
      pausedBy: 'partner',
    });

    clockNow = new Date('2026-11-22T12:59:59.000Z');
    expect(
      await client.request(subjects.stores.getStatus, { storeId }, commerce(partnerId)),
    ).toEqual(paused);

    clockNow = new Date('2026-11-22T13:00:01.000Z');
    const later = await client.request(subjects.stores.getStatus, { storeId }, commerce(partnerId));
    expect(later).toEqual({
      status: 'online',
      reason: null,
      pausedAt: null,
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: null,
    });
    const store = await client.request(subjects.stores.get, { storeId }, commerce(partnerId));
    expect(store.status).toBe('online');

    // Derived, not written: the row still holds the pause.
    const row = await db
      .selectFrom('stores')
      .selectAll()
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('paused');
    expect(row.resume_at?.toISOString()).toBe(resumeAt);
  });

  it('refuses a resumeAt before the clock, and goes online on request', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(partnerId),
    );
    clockNow = new Date('2026-11-22T12:00:00.000Z');
    const error = await expectAppError(
      client.request(
        subjects.stores.setStatus,
        {
          storeId,
          change: { status: 'paused', reason: 'other', resumeAt: '2026-11-22T11:00:00.000Z' },
        },
        commerce(partnerId),
      ),
      'REQUEST_INVALID',
    );
    expect(error.errors).toEqual([expect.objectContaining({ pointer: '/resumeAt' })]);

    await client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'paused', reason: 'other' } },
      commerce(partnerId),
    );
    clockNow = new Date('2030-01-01T00:00:00.000Z');
    expect(
      (await client.request(subjects.stores.getStatus, { storeId }, commerce(partnerId))).status,
    ).toBe('paused');
    const online = await client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'online' } },
      commerce(partnerId),
    );
    expect(online).toEqual({
      status: 'online',
      reason: null,
      pausedAt: null,
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: null,
    });
  });

  it('answers STORE_NOT_FOUND for another partner’s store', async () => {
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(randomUUID()),
    );
    await expectAppError(
      client.request(
        subjects.stores.setStatus,
        { storeId, change: { status: 'paused', reason: 'other' } },
        commerce(randomUUID()),
      ),
      'STORE_NOT_FOUND',
    );
    await expectAppError(
      client.request(subjects.stores.getStatus, { storeId }, commerce(randomUUID())),
      'STORE_NOT_FOUND',
    );
  });
});

describe('catalog.v1.activated consumer', () => {
  /** Publish an activation event as the catalog's outbox does (its id is its message id). */
  async function activated(storeId: string, version: number, catalogSetId: string) {
    const event = {
      id: eventIdOf({ type: 'store-catalog', id: storeId, version }),
      type: 'catalog.v1.activated',
      occurredAt: new Date().toISOString(),
      version,
      data: {
        storeId,
        catalogSetId,
        versionId: randomUUID(),
        etag: '"x"',
        activatedAt: new Date().toISOString(),
      },
    };
    await env.nc
      .jetstream()
      .publish(`${env.prefix}.${events.catalogActivated.subject}`, JSON.stringify(event), {
        msgID: event.id,
      });
  }

  const catalogOf = (storeId: string) =>
    db
      .selectFrom('stores')
      .select(['catalog_set_id', 'catalog_version'])
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();

  it('applies an activation only over an older version of the store’s catalog', async () => {
    const partnerId = randomUUID();
    const storeId = randomUUID();
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile() },
      commerce(partnerId),
    );
    const [v1, v2, v3] = [randomUUID(), randomUUID(), randomUUID()];
    await activated(storeId, 2, v2);
    await expect.poll(() => catalogOf(storeId)).toEqual({ catalog_set_id: v2, catalog_version: 2 });
    // A late, older event changes nothing; a newer one applies.
    await activated(storeId, 1, v1);
    await activated(storeId, 3, v3);
    await expect.poll(() => catalogOf(storeId)).toEqual({ catalog_set_id: v3, catalog_version: 3 });
  });

  it('dead-letters an event that is not a catalog.v1.activated event', async () => {
    const jsm = await env.nc.jetstreamManager();
    await env.nc
      .jetstream()
      .publish(`${env.prefix}.${events.catalogActivated.subject}`, JSON.stringify({ id: 'x' }));
    const letters = deadLetterStream(env.prefix);
    await expect
      .poll(async () => (await jsm.streams.info(letters).catch(() => undefined))?.state.messages)
      .toBe(1);
    const letter = await jsm.streams.getMessage(letters, {
      last_by_subj: deadLetterSubject(env.prefix, 'stores-catalog-activated'),
    });
    expect(letter.header.get(deadLetterHeaders.reason)).toBe('not a catalog.v1.activated event');
  });
});
