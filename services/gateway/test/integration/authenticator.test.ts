import { API_VERSIONS, LATEST_API_VERSION } from '@pcp/contracts';
import { createDatabase, loadConfig } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  createKey,
  createPartner,
  revokeKey,
  setRateLimits,
} from '../../src/admin/partner-admin.js';
import { createAuthenticator, type AuthenticatorOptions } from '../../src/auth/authenticator.js';
import { gatewayEnvSchema } from '../../src/config.js';
import { GATEWAY_SCHEMA } from '../../src/db/migrations/index.js';
import { findActiveKey } from '../../src/db/partner.repository.js';
import type { GatewayDatabase } from '../../src/db/partner.table.js';

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;

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

/** An authenticator on the real table that counts the key lookups reaching Postgres. */
function countingAuthenticator(options: Omit<AuthenticatorOptions, 'findKey'>) {
  const counter = { lookups: 0 };
  const authenticator = createAuthenticator({
    ...options,
    findKey: (keyId) => {
      counter.lookups++;
      return findActiveKey(db, keyId);
    },
  });
  return Object.assign(authenticator, { counter });
}

/** A key of the right shape that no partner holds. */
const madeUpKey = () =>
  `pcp_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;

/** `count` made-up keys authenticated (and refused), a few at a time. */
async function flood(authenticator: ReturnType<typeof createAuthenticator>, count: number) {
  const inParallel = 20;
  for (let sent = 0; sent < count; sent += inParallel) {
    const batch = Array.from({ length: Math.min(inParallel, count - sent) }, madeUpKey);
    const results = await Promise.all(batch.map((key) => authenticator.authenticate(key)));
    expect(results.every((principal) => principal === null)).toBe(true);
  }
}

const defaults = loadConfig(gatewayEnvSchema, {});
const withDefaults = {
  ttlMs: 60_000,
  maxKeys: defaults.AUTH_CACHE_MAX_KEYS,
  maxUnknownKeys: defaults.AUTH_CACHE_MAX_UNKNOWN_KEYS,
};

describe('createAuthenticator', () => {
  it("authenticates a test key as the partner's test tenant and a live one as the partner", async () => {
    const authenticator = countingAuthenticator({ ttlMs: 60_000, maxKeys: 10, maxUnknownKeys: 10 });
    const partner = await createPartner(db, { kind: 'distribution', name: 'Two modes' });
    const test = await createKey(db, partner.partnerId, { mode: 'test' });
    expect(await authenticator.authenticate(partner.apiKey)).toMatchObject({
      partnerId: partner.partnerId,
      accountId: partner.partnerId,
      mode: 'live',
    });
    expect(await authenticator.authenticate(test.apiKey)).toMatchObject({
      partnerId: partner.testPartnerId,
      accountId: partner.partnerId,
      mode: 'test',
    });
    // The mode in the text is covered by the hash: relabelled, the key is refused.
    expect(
      await authenticator.authenticate(test.apiKey.replace('pcp_test_', 'pcp_live_')),
    ).toBeNull();
    expect(await authenticator.authenticate(test.apiKey.replace('pcp_test_', 'pcp_'))).toBeNull();

    // An admin change names the partner; both modes' cached keys are forgotten.
    await revokeKey(db, test.keyId);
    expect(authenticator.recentlyVerified(test.apiKey)).toBeDefined();
    authenticator.invalidate({ partnerId: partner.partnerId });
    expect(authenticator.recentlyVerified(test.apiKey)).toBeUndefined();
    expect(await authenticator.authenticate(test.apiKey)).toBeNull();
  });

  it("puts the partner's pin on the principal of its live and test keys, the newest for a pin it does not know", async () => {
    const authenticator = countingAuthenticator(withDefaults);
    const partner = await createPartner(db, { kind: 'commerce', name: 'Pinned' });
    const test = await createKey(db, partner.partnerId, { mode: 'test' });
    const oldest = API_VERSIONS[0];
    await db
      .updateTable('partners')
      .set({ api_version: oldest })
      .where('partner_id', '=', partner.partnerId)
      .execute();
    for (const key of [partner.apiKey, test.apiKey]) {
      expect((await authenticator.authenticate(key))?.apiVersion).toBe(oldest);
    }
    // Written by a newer release, then rolled back: this release runs its newest version.
    await db
      .updateTable('partners')
      .set({ api_version: '2099-01-01' })
      .where('partner_id', '=', partner.partnerId)
      .execute();
    authenticator.invalidate({ partnerId: partner.partnerId });
    expect((await authenticator.authenticate(test.apiKey))?.apiVersion).toBe(LATEST_API_VERSION);
  });

  it('answers the principal of an active key id for a console session, and null once revoked', async () => {
    const authenticator = countingAuthenticator(withDefaults);
    const partner = await createPartner(db, { kind: 'commerce', name: 'Console', mode: 'test' });
    expect(await authenticator.activeKey(partner.keyId)).toMatchObject({
      partnerId: partner.testPartnerId,
      keyId: partner.keyId,
      mode: 'test',
      via: 'key',
    });
    await revokeKey(db, partner.keyId);
    authenticator.invalidate({ keyId: partner.keyId });
    expect(await authenticator.activeKey(partner.keyId)).toBeNull();
    expect(await authenticator.activeKey('0000000000000000')).toBeNull();
  });

  it('authenticates a fresh key and refuses it once revoked (no cache)', async () => {
    const authenticator = countingAuthenticator({ ...withDefaults, ttlMs: 0 });
    const partner = await createPartner(db, { kind: 'distribution', name: 'Auth' });
    await setRateLimits(db, partner.partnerId, { reads: 77 });
    expect(await authenticator.authenticate(partner.apiKey)).toEqual({
      partnerId: partner.partnerId,
      accountId: partner.partnerId,
      mode: 'live',
      kind: 'distribution',
      keyId: partner.keyId,
      paymentTypes: ['CARD', 'PAY_AT_STORE'],
      rateLimits: { reads: 77 },
      via: 'key',
      apiVersion: LATEST_API_VERSION,
    });
    expect(authenticator.recentlyVerified(partner.apiKey)).toBeUndefined();

    // Right id, wrong secret; malformed keys (never looked up); unknown ids.
    const other = await createPartner(db, { kind: 'commerce', name: 'Other' });
    expect(
      await authenticator.authenticate(`pcp_live_${partner.keyId}_${other.apiKey.slice(-43)}`),
    ).toBeNull();
    const beforeMalformed = authenticator.counter.lookups;
    expect(await authenticator.authenticate('not a key')).toBeNull();
    expect(authenticator.counter.lookups).toBe(beforeMalformed);
    expect(await authenticator.authenticate(`pcp_0000000000000000_${'A'.repeat(43)}`)).toBeNull();

    await revokeKey(db, partner.keyId);
    expect(await authenticator.authenticate(partner.apiKey)).toBeNull();
    expect(await authenticator.authenticate(other.apiKey)).toMatchObject({
      partnerId: other.partnerId,
      kind: 'commerce',
    });
    // Without a cache every well-formed key is looked up.
    expect(authenticator.counter.lookups).toBe(5);
  });

  it('keeps a revoked key cached within the TTL until the partner is invalidated', async () => {
    const authenticator = countingAuthenticator(withDefaults);
    const partner = await createPartner(db, { kind: 'commerce', name: 'Cached' });
    const bystander = await createPartner(db, { kind: 'commerce', name: 'Bystander' });
    expect(await authenticator.authenticate(partner.apiKey)).toMatchObject({
      partnerId: partner.partnerId,
    });
    expect(await authenticator.authenticate(bystander.apiKey)).toMatchObject({
      partnerId: bystander.partnerId,
    });

    await revokeKey(db, partner.keyId);
    await revokeKey(db, bystander.keyId);
    // Still cached: revocation reaches this gateway only through invalidation (or the TTL).
    expect(await authenticator.authenticate(partner.apiKey)).toMatchObject({
      partnerId: partner.partnerId,
    });
    // A wrong secret is refused even from the cache.
    const wrongSecret = `pcp_${partner.keyId}_${bystander.apiKey.slice(-43)}`;
    expect(await authenticator.authenticate(wrongSecret)).toBeNull();
    expect(authenticator.recentlyVerified(wrongSecret)).toBeUndefined();
    expect(authenticator.counter.lookups).toBe(2);

    authenticator.invalidate({ partnerId: partner.partnerId });
    expect(authenticator.recentlyVerified(partner.apiKey)).toBeUndefined();
    expect(await authenticator.authenticate(partner.apiKey)).toBeNull();
    // Only that partner was forgotten.
    expect(authenticator.recentlyVerified(bystander.apiKey)?.partnerId).toBe(bystander.partnerId);
    authenticator.invalidate({ keyId: bystander.keyId });
    expect(await authenticator.authenticate(bystander.apiKey)).toBeNull();
  });

  it('does not cache a lookup that was in flight across a revocation', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Raced' });
    // The lookup reads the still-active row, then is held until the test lets it go.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let read!: () => void;
    const rowRead = new Promise<void>((resolve) => (read = resolve));
    let hold = true;
    const authenticator = createAuthenticator({
      ...withDefaults,
      findKey: async (keyId) => {
        const row = await findActiveKey(db, keyId);
        if (hold) {
          hold = false;
          read();
          await held;
        }
        return row;
      },
    });

    const inFlight = authenticator.authenticate(partner.apiKey);
    await rowRead;
    await revokeKey(db, partner.keyId);
    authenticator.invalidate({ partnerId: partner.partnerId });
    release();
    // The request that started before the revocation may still pass...
    expect((await inFlight)?.partnerId).toBe(partner.partnerId);
    // ...but the key is refused at once afterwards, not after the TTL.
    expect(authenticator.recentlyVerified(partner.apiKey)).toBeUndefined();
    expect(await authenticator.authenticate(partner.apiKey)).toBeNull();
  });

  it('looks a made-up key up once while it is remembered as unknown', async () => {
    const authenticator = countingAuthenticator(withDefaults);
    const key = madeUpKey();
    for (let n = 0; n < 5; n++) expect(await authenticator.authenticate(key)).toBeNull();
    expect(authenticator.counter.lookups).toBe(1);
  });
});

describe('the key caches under a flood of made-up keys', () => {
  it("never evict a partner's verified key: its requests stay off the database", async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Flooded' });
    const authenticator = countingAuthenticator(withDefaults);
    expect((await authenticator.authenticate(partner.apiKey))?.partnerId).toBe(partner.partnerId);
    expect(authenticator.counter.lookups).toBe(1);

    // More made-up keys than the defaults hold, each looked up once.
    const floodSize = Math.max(withDefaults.maxKeys, withDefaults.maxUnknownKeys) + 1;
    await flood(authenticator, floodSize);
    expect(authenticator.counter.lookups).toBe(1 + floodSize);

    // The partner's key is still verified from memory.
    expect(authenticator.recentlyVerified(partner.apiKey)?.partnerId).toBe(partner.partnerId);
    expect((await authenticator.authenticate(partner.apiKey))?.partnerId).toBe(partner.partnerId);
    expect(authenticator.counter.lookups).toBe(1 + floodSize);
  });

  it('hold at most their configured sizes, each evicting its own least recently used', async () => {
    const authenticator = countingAuthenticator({ ttlMs: 60_000, maxKeys: 2, maxUnknownKeys: 3 });
    const partners = await Promise.all(
      ['First', 'Second', 'Third'].map((name) => createPartner(db, { kind: 'commerce', name })),
    );
    for (const partner of partners) await authenticator.authenticate(partner.apiKey);
    // Three keys in a cache of two: the first verified is the one forgotten.
    expect(partners.map((partner) => authenticator.recentlyVerified(partner.apiKey))).toEqual([
      undefined,
      expect.objectContaining({ partnerId: partners[1]!.partnerId }),
      expect.objectContaining({ partnerId: partners[2]!.partnerId }),
    ]);

    const remembered = madeUpKey();
    await authenticator.authenticate(remembered);
    await flood(authenticator, 100);
    const lookups = authenticator.counter.lookups;
    // The flood pushed the first unknown key id out of its small cache, and nothing else.
    expect(await authenticator.authenticate(remembered)).toBeNull();
    expect(authenticator.counter.lookups).toBe(lookups + 1);
    for (const partner of partners.slice(1)) {
      expect((await authenticator.authenticate(partner.apiKey))?.partnerId).toBe(partner.partnerId);
    }
    expect(authenticator.counter.lookups).toBe(lookups + 1);
  });
});
