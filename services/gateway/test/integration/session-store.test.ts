import { createDatabase } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createPartner, revokeKey } from '../../src/admin/partner-admin.js';
import { createAuthenticator } from '../../src/auth/authenticator.js';
import { createSessionStore, type SessionStoreOptions } from '../../src/auth/session-store.js';
import { GATEWAY_SCHEMA } from '../../src/db/migrations/index.js';
import { findActiveKey, revokeApiKey, updateSuspension } from '../../src/db/partner.repository.js';
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

const HOUR = 3_600_000;

/** A store on the real table with a clock the test moves, and the sessions it announced ended. */
function storeAt(start: number, options: Partial<SessionStoreOptions> = {}) {
  const clock = { now: start };
  const announced: string[] = [];
  const authenticator = createAuthenticator({
    findKey: (keyId) => findActiveKey(db, keyId),
    ttlMs: 0,
    maxKeys: 10,
    maxUnknownKeys: 10,
  });
  const store = createSessionStore({
    db,
    authenticator,
    idleMs: HOUR,
    maxAgeMs: 12 * HOUR,
    perTenant: 20,
    cacheTtlMs: 0,
    cacheMax: 10,
    announceEnded: (ids) => announced.push(...ids),
    now: () => clock.now,
    ...options,
  });
  return { store, clock, authenticator, announced };
}

async function signedIn(store: ReturnType<typeof storeAt>['store']) {
  const partner = await createPartner(db, { kind: 'commerce', name: 'Console' });
  const principal = await createAuthenticator({
    findKey: (keyId) => findActiveKey(db, keyId),
    ttlMs: 0,
    maxKeys: 1,
    maxUnknownKeys: 1,
  }).authenticate(partner.apiKey);
  return { partner, principal: principal!, ...(await store.create(principal!)) };
}

const lastSeen = async (partnerId: string) =>
  (
    await db
      .selectFrom('console_sessions')
      .select('last_seen_at')
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow()
  ).last_seen_at.getTime();

describe('console sessions', () => {
  it('record their use at most once a minute, and end after an idle hour', async () => {
    const start = Date.parse('2026-11-27T08:00:00Z');
    const { store, clock } = storeAt(start);
    const { partner, token } = await signedIn(store);
    for (const at of [1_000, 30_000, 59_000]) {
      clock.now = start + at;
      expect(await store.resolve(token)).not.toBeNull();
      expect(await lastSeen(partner.partnerId)).toBe(start);
    }
    clock.now = start + 61_000;
    expect((await store.resolve(token))?.principal).toMatchObject({ via: 'session' });
    expect(await lastSeen(partner.partnerId)).toBe(start + 61_000);
    // An hour without a request from there: ended, and its row deleted.
    clock.now = start + 61_000 + HOUR;
    expect(await store.resolve(token)).toBeNull();
    expect(
      await db.selectFrom('console_sessions').where('partner_id', '=', partner.partnerId).execute(),
    ).toEqual([]);
  });

  it('end twelve hours after sign-in, however used', async () => {
    const start = Date.parse('2026-11-27T08:00:00Z');
    const { store, clock } = storeAt(start);
    const { token, session } = await signedIn(store);
    expect(session.expiresAt).toBe('2026-11-27T20:00:00.000Z');
    for (clock.now = start; clock.now < start + 12 * HOUR; clock.now += HOUR / 2) {
      expect(await store.resolve(token)).not.toBeNull();
    }
    expect(await store.resolve(token)).toBeNull();
  });

  it('keep to the cap per tenant, ending the oldest and announcing it', async () => {
    const start = Date.now();
    const { store, clock, announced } = storeAt(start, { perTenant: 2 });
    const first = await signedIn(store);
    clock.now += 1;
    const second = await store.create(first.principal);
    clock.now += 1;
    const third = await store.create(first.principal);
    expect(await store.resolve(first.token)).toBeNull();
    expect(await store.resolve(second.token)).not.toBeNull();
    expect(await store.resolve(third.token)).not.toBeNull();
    expect(announced).toHaveLength(1);
  });

  it('end with their key or their partner, even while their row stays', async () => {
    const { store } = storeAt(Date.now());
    // The key revoked and the partner suspended as the repository does it, without the
    // admin commands' deletion of the sessions: each use checks the key.
    const revoked = await signedIn(store);
    await revokeApiKey(db, revoked.partner.keyId);
    expect(await store.resolve(revoked.token)).toBeNull();
    const suspended = await signedIn(store);
    await updateSuspension(db, suspended.partner.partnerId, new Date());
    expect(await store.resolve(suspended.token)).toBeNull();
    await updateSuspension(db, suspended.partner.partnerId, null);
    expect(await store.resolve(suspended.token)).not.toBeNull();
    // The admin commands delete them.
    await revokeKey(db, suspended.partner.keyId);
    expect(
      await db
        .selectFrom('console_sessions')
        .where('partner_id', '=', suspended.partner.partnerId)
        .execute(),
    ).toEqual([]);
  });

  it('refuse tokens they never issued', async () => {
    const { store } = storeAt(Date.now());
    const { token } = await signedIn(store);
    for (const made of ['', 'x', 'A'.repeat(43), `${token}x`, token.toUpperCase()]) {
      expect(await store.resolve(made)).toBeNull();
    }
  });
});
