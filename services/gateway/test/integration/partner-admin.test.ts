import { createDatabase } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  AdminError,
  createKey,
  createPartner,
  keyIdOf,
  listPartners,
  revokeKey,
  setApiVersion,
  setPaymentTypes,
  setRateLimits,
} from '../../src/admin/partner-admin.js';
import { GATEWAY_SCHEMA } from '../../src/db/migrations/index.js';
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

async function expectAdminError(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => {
      throw new Error('expected an AdminError');
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AdminError);
  expect((error as Error).message).toMatch(message);
}

const partnerCount = async () =>
  Number(
    (
      await db
        .selectFrom('partners')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('createPartner', () => {
  it('refuses a bad kind, an empty or too long name and an unknown payment type, writing nothing', async () => {
    const before = await partnerCount();
    await expectAdminError(createPartner(db, { kind: 'retail', name: 'x' }), /--kind/);
    await expectAdminError(createPartner(db, { kind: 'commerce', name: '' }), /--name/);
    await expectAdminError(createPartner(db, { kind: 'commerce', name: '   ' }), /--name/);
    await expectAdminError(
      createPartner(db, { kind: 'commerce', name: 'x'.repeat(201) }),
      /--name/,
    );
    await expectAdminError(
      createPartner(db, { kind: 'distribution', name: 'x', paymentTypes: ['CARD', 'BITCOIN'] }),
      /unknown payment type BITCOIN/,
    );
    expect(await partnerCount()).toBe(before);
  });

  it('gives distribution partners CARD and PAY_AT_STORE and commerce partners none by default', async () => {
    const distribution = await createPartner(db, { kind: 'distribution', name: '  Marketfront  ' });
    const commerce = await createPartner(db, { kind: 'commerce', name: 'Burgers Inc' });
    const chosen = await createPartner(db, {
      kind: 'distribution',
      name: 'Cards only',
      paymentTypes: ['CARD'],
    });
    expect(distribution.kind).toBe('distribution');
    expect(distribution.apiKey).toMatch(/^pcp_live_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(distribution.apiKey.startsWith(`pcp_live_${distribution.keyId}_`)).toBe(true);
    expect(distribution.mode).toBe('live');
    expect(distribution.testPartnerId).not.toBe(distribution.partnerId);

    const partners = await listPartners(db);
    const byId = (id: string) => partners.find((partner) => partner.partnerId === id);
    expect(byId(distribution.partnerId)).toMatchObject({
      name: 'Marketfront',
      kind: 'distribution',
      paymentTypes: ['CARD', 'PAY_AT_STORE'],
      rateLimits: {},
    });
    expect(byId(commerce.partnerId)?.paymentTypes).toEqual([]);
    expect(byId(chosen.partnerId)?.paymentTypes).toEqual(['CARD']);

    // The key itself is never stored, only its hash.
    const stored = await db
      .selectFrom('api_keys')
      .selectAll()
      .where('key_id', '=', distribution.keyId)
      .executeTakeFirstOrThrow();
    expect(stored.key_hash).toHaveLength(32);
    expect(stored.key_hash.toString('utf8')).not.toContain(distribution.apiKey.slice(-43));
  });
});

describe('keys', () => {
  it('creates another key for a partner and refuses an unknown partner', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Rotating' });
    const second = await createKey(db, partner.partnerId);
    expect(second.partnerId).toBe(partner.partnerId);
    expect(second.keyId).not.toBe(partner.keyId);
    await expectAdminError(createKey(db, randomUUID()), /no partner/);
    await expectAdminError(createKey(db, 'not-a-guid'), /no partner not-a-guid/);
  });

  it('makes keys of either mode; a test key is printed as pcp_test_ and listed with its mode', async () => {
    const partner = await createPartner(db, {
      kind: 'distribution',
      name: 'Sandboxed',
      mode: 'test',
    });
    expect(partner.mode).toBe('test');
    expect(partner.apiKey.startsWith(`pcp_test_${partner.keyId}_`)).toBe(true);
    const live = await createKey(db, partner.partnerId, { mode: 'live' });
    expect(live.apiKey.startsWith(`pcp_live_${live.keyId}_`)).toBe(true);
    const byDefault = await createKey(db, partner.partnerId);
    expect(byDefault.mode).toBe('live');
    await expectAdminError(
      createKey(db, partner.partnerId, { mode: 'prod' }),
      /--mode must be live or test/,
    );
    await expectAdminError(
      createPartner(db, { kind: 'commerce', name: 'Bad mode', mode: 'TEST' }),
      /--mode must be live or test/,
    );

    const listed = (await listPartners(db)).find((p) => p.partnerId === partner.partnerId);
    expect(listed?.testPartnerId).toBe(partner.testPartnerId);
    expect(listed?.keys.map((key) => [key.keyId, key.mode])).toEqual([
      [partner.keyId, 'test'],
      [live.keyId, 'live'],
      [byDefault.keyId, 'live'],
    ]);
  });

  it('revokes by key id, once, and takes no whole key', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Revoker' });
    const extra = await createKey(db, partner.partnerId);

    const byId = await revokeKey(db, partner.keyId);
    expect(byId).toMatchObject({ keyId: partner.keyId, partnerId: partner.partnerId });
    expect(byId.revokedAt).toBeInstanceOf(Date);
    // A whole key is refused without being echoed; the CLI reads one only from stdin.
    const error = await revokeKey(db, extra.apiKey).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AdminError);
    expect((error as Error).message).not.toContain(extra.apiKey.slice(-43));
    expect((await revokeKey(db, keyIdOf(`${extra.apiKey}\n`))).keyId).toBe(extra.keyId);

    await expectAdminError(
      revokeKey(db, partner.keyId),
      new RegExp(`no active key ${partner.keyId}`),
    );
    await expectAdminError(revokeKey(db, extra.keyId), new RegExp(`no active key ${extra.keyId}`));
    await expectAdminError(revokeKey(db, '0000000000000000'), /no active key/);

    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed?.keys).toHaveLength(2);
    for (const key of listed?.keys ?? []) {
      expect(key.revokedAt).toBeInstanceOf(Date);
      expect(key.createdAt).toBeInstanceOf(Date);
    }
  });

  it('lists every partner with its keys, revoked ones marked', async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Lister' });
    const second = await createKey(db, partner.partnerId);
    await revokeKey(db, partner.keyId);
    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed).toMatchObject({ name: 'Lister', kind: 'distribution' });
    expect(listed?.keys.map((key) => key.keyId).sort()).toEqual(
      [partner.keyId, second.keyId].sort(),
    );
    const revoked = listed?.keys.find((key) => key.keyId === partner.keyId);
    const active = listed?.keys.find((key) => key.keyId === second.keyId);
    expect(revoked?.revokedAt).toBeInstanceOf(Date);
    expect(active?.revokedAt).toBeNull();
    expect(JSON.stringify(listed)).not.toContain(partner.apiKey);
  });
});

describe('setRateLimits', () => {
  it('merges classes and keeps those left out', async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Busy' });
    expect(await setRateLimits(db, partner.partnerId, { reads: 1_000 })).toEqual({
      partnerId: partner.partnerId,
      rateLimits: { reads: 1_000 },
    });
    expect((await setRateLimits(db, partner.partnerId, { writes: 50 })).rateLimits).toEqual({
      reads: 1_000,
      writes: 50,
    });
    expect(
      (await setRateLimits(db, partner.partnerId, { reads: 5, discovery: 1_000_000 })).rateLimits,
    ).toEqual({
      reads: 5,
      writes: 50,
      discovery: 1_000_000,
    });
    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed?.rateLimits).toEqual({ reads: 5, writes: 50, discovery: 1_000_000 });
  });

  it('refuses 0, fractions, out-of-range values and unknown partners without writing', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Strict' });
    await setRateLimits(db, partner.partnerId, { reads: 10 });
    for (const value of [0, -1, 1.5, Number.NaN, 1_000_001]) {
      await expectAdminError(
        setRateLimits(db, partner.partnerId, { writes: value }),
        /--writes must be a whole number/,
      );
    }
    await expectAdminError(setRateLimits(db, randomUUID(), { reads: 10 }), /no partner/);
    await expectAdminError(setRateLimits(db, 'nope', { reads: 10 }), /no partner/);
    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed?.rateLimits).toEqual({ reads: 10 });
  });
});

describe('setPaymentTypes', () => {
  it("replaces a partner's payment types, checked against the contract's types", async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Payer' });
    expect(await setPaymentTypes(db, partner.partnerId, ['PAY_AT_STORE', 'PAY_AT_STORE'])).toEqual({
      partnerId: partner.partnerId,
      paymentTypes: ['PAY_AT_STORE'],
    });
    await expectAdminError(
      setPaymentTypes(db, partner.partnerId, ['CARD', 'BITCOIN']),
      /unknown payment type BITCOIN/,
    );
    await expectAdminError(setPaymentTypes(db, randomUUID(), ['CARD']), /no partner/);
    expect(await setPaymentTypes(db, partner.partnerId, [])).toMatchObject({ paymentTypes: [] });
    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed?.paymentTypes).toEqual([]);
  });
});

describe('setApiVersion', () => {
  it("moves a partner's pin either way, saying what it was, and shows it in list-partners", async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Pinned by the operator' });
    const bystander = await createPartner(db, { kind: 'commerce', name: 'Left alone' });
    expect(partner.apiVersion).toBe('2026-12-01');
    expect(await setApiVersion(db, partner.partnerId, '2026-11-01')).toEqual({
      partnerId: partner.partnerId,
      previousVersion: '2026-12-01',
      version: '2026-11-01',
      changed: true,
    });
    expect(await setApiVersion(db, partner.partnerId, '2026-11-01')).toMatchObject({
      previousVersion: '2026-11-01',
      changed: false,
    });
    const listed = await listPartners(db);
    expect(listed.find((entry) => entry.partnerId === partner.partnerId)?.apiVersion).toBe(
      '2026-11-01',
    );
    expect(listed.find((entry) => entry.partnerId === bystander.partnerId)?.apiVersion).toBe(
      '2026-12-01',
    );
    expect(await setApiVersion(db, partner.partnerId, '2026-12-01')).toMatchObject({
      previousVersion: '2026-11-01',
      version: '2026-12-01',
    });
  });

  it('refuses a version that does not exist and an unknown partner, writing nothing', async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Not moved' });
    for (const version of ['2026-12-02', 'latest', '', `2026-12-01${'x'.repeat(10_000)}`]) {
      await expectAdminError(setApiVersion(db, partner.partnerId, version), /--version must be/);
    }
    await expectAdminError(setApiVersion(db, randomUUID(), '2026-11-01'), /no partner/);
    await expectAdminError(setApiVersion(db, 'not-a-guid', '2026-11-01'), /no partner/);
    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed?.apiVersion).toBe('2026-12-01');
  });
});
