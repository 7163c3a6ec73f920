import { authInvalidationSubject } from '@pcp/contracts';
import { createDatabase } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createKey, createPartner, listPartners } from '../../src/admin/partner-admin.js';
import type { GatewayService } from '../../src/app.js';
import { createLoneGateway } from '../support/lone-gateway.js';
import { GATEWAY_SCHEMA } from '../../src/db/migrations/index.js';
import type { GatewayDatabase } from '../../src/db/partner.table.js';
import { insertRequests } from '../../src/db/request-log.repository.js';

const OLD = '2026-11-01';
const NEW = '2026-12-01';

const cli = fileURLToPath(new URL('../../dist/admin/cli.js', import.meta.url));

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<GatewayDatabase>({
    url: env.databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: 'test',
  });
  // A gateway alone (no services behind it: an authenticated request gets 503) that caches
  // keys for a minute, so only the admin command's announcement can make it forget them.
  gateway = createLoneGateway(env, db, { AUTH_CACHE_TTL_MS: '60000' });
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

/** The admin command as an operator runs it, on this file's database and subject prefix. */
function admin(args: string[], stdin = '') {
  const child = spawn(process.execPath, [cli, ...args], {
    env: {
      ...process.env,
      DATABASE_URL: env.databaseUrl,
      NATS_URL: inject('servers').natsUrl,
      NATS_SUBJECT_PREFIX: env.prefix,
      LOG_LEVEL: 'silent',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end(stdin);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
}

async function keyRevoked(partnerId: string, keyId: string) {
  const listed = (await listPartners(db)).find((entry) => entry.partnerId === partnerId);
  return listed?.keys.find((key) => key.keyId === keyId)?.revokedAt instanceof Date;
}

/** The next invalidation announced to the gateways (subscribed before the command runs). */
async function nextAnnouncement() {
  const subscription = env.nc.subscribe(authInvalidationSubject(env.prefix), { max: 1 });
  await env.nc.flush();
  const received = (async () => {
    for await (const msg of subscription) return msg.json<{ partnerId?: string; keyId?: string }>();
    throw new Error('subscription closed');
  })();
  return { received };
}

describe('npm run admin -- revoke-key', () => {
  it('refuses a whole key as an argument, without echoing it, and revokes nothing', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Argv' });
    const secret = partner.apiKey.slice(-43);
    for (const args of [
      ['--key', partner.apiKey],
      ['--key-id', partner.apiKey],
      [partner.apiKey],
    ]) {
      const run = await admin(['revoke-key', ...args]);
      expect(run.code).not.toBe(0);
      expect(run.stdout + run.stderr).not.toContain(secret);
    }
    expect(await keyRevoked(partner.partnerId, partner.keyId)).toBe(false);
  });

  it('revokes by the key id that list-partners shows, announcing it to every gateway', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'By id' });
    const announcement = await nextAnnouncement();
    const run = await admin(['revoke-key', '--key-id', partner.keyId]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      keyId: partner.keyId,
      partnerId: partner.partnerId,
    });
    expect(await announcement.received).toEqual({
      partnerId: partner.partnerId,
      keyId: partner.keyId,
    });
    expect(await keyRevoked(partner.partnerId, partner.keyId)).toBe(true);
  });

  it('reads a whole key from stdin with --key-stdin', async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'By stdin' });
    const run = await admin(['revoke-key', '--key-stdin'], `${partner.apiKey}\n`);
    expect(run.code, run.stderr).toBe(0);
    expect(await keyRevoked(partner.partnerId, partner.keyId)).toBe(true);
    const garbage = await admin(['revoke-key', '--key-stdin'], 'not a key\n');
    expect(garbage.code).not.toBe(0);
    expect(garbage.stderr).toMatch(/not a key id/);
  });
});

describe('npm run admin -- set-payment-types', () => {
  it('replaces the types, announces the change, and refuses an unknown type', async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Types' });
    const refused = await admin([
      'set-payment-types',
      '--partner',
      partner.partnerId,
      '--payment-types',
      'CARD,CASH',
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/unknown payment type CASH/);
    const announcement = await nextAnnouncement();
    const run = await admin([
      'set-payment-types',
      '--partner',
      partner.partnerId,
      '--payment-types',
      'PAY_AT_STORE',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(await announcement.received).toEqual({ partnerId: partner.partnerId });
    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed?.paymentTypes).toEqual(['PAY_AT_STORE']);
  });
});

describe('npm run admin -- suspend-partner / resume-partner', () => {
  /** The status of one request with the key, after the admin command's announcement arrived. */
  async function statusWith(apiKey: string) {
    // The gateway subscribes on env.nc: a round trip on it delivers what the command published.
    await env.nc.flush();
    const response = await fetch(`${gateway.url()}/v1/commerce/stores`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    await response.arrayBuffer();
    return response.status;
  }

  it('refuses every key of a suspended partner at once, on a gateway that had them cached, until it is resumed', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Suspended' });
    const second = await createKey(db, partner.partnerId);
    const bystander = await createPartner(db, { kind: 'commerce', name: 'Bystander' });
    // Authenticated (and cached): the route's service is down, hence 503.
    for (const key of [partner.apiKey, second.apiKey, bystander.apiKey]) {
      expect(await statusWith(key)).toBe(503);
    }

    const suspended = await admin(['suspend-partner', '--partner', partner.partnerId]);
    expect(suspended.code, suspended.stderr).toBe(0);
    expect(await statusWith(partner.apiKey)).toBe(401);
    expect(await statusWith(second.apiKey)).toBe(401);
    expect(await statusWith(bystander.apiKey)).toBe(503);
    const listed = (await listPartners(db)).find((entry) => entry.partnerId === partner.partnerId);
    expect(listed?.suspendedAt).toBeInstanceOf(Date);

    const resumed = await admin(['resume-partner', '--partner', partner.partnerId]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await statusWith(partner.apiKey)).toBe(503);
    expect(await statusWith(second.apiKey)).toBe(503);

    const unknown = await admin(['suspend-partner', '--partner', randomUUID()]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/no partner/);
  });
});

describe('npm run admin -- set-api-version', () => {
  const pinOn = async (apiKey: string) => {
    await env.nc.flush();
    const response = await fetch(`${gateway.url()}/v1/marketfront/api-version`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    return ((await response.json()) as { apiVersion: string }).apiVersion;
  };

  it('moves a pin back or forward, prints what changed, and the gateway that cached the key sees it', async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Set by operator' });
    expect(await pinOn(partner.apiKey)).toBe('2026-12-01');
    const announcement = await nextAnnouncement();
    const run = await admin([
      'set-api-version',
      '--partner',
      partner.partnerId,
      '--version',
      '2026-11-01',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toEqual({
      partnerId: partner.partnerId,
      previousVersion: '2026-12-01',
      version: '2026-11-01',
      changed: true,
    });
    expect(await announcement.received).toEqual({ partnerId: partner.partnerId });
    expect(await pinOn(partner.apiKey)).toBe('2026-11-01');

    const refused = await admin([
      'set-api-version',
      '--partner',
      partner.partnerId,
      '--version',
      '2026-10-01',
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--version must be one of 2026-11-01, 2026-12-01/);
    const missing = await admin(['set-api-version', '--partner', partner.partnerId]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--version is required/);
    expect(await pinOn(partner.apiKey)).toBe('2026-11-01');
  });
});

describe('npm run admin -- api-version-usage', () => {
  it('prints each partner’s requests per version from the request log, and refuses bad options', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Still old' });
    await insertRequests(
      db,
      [OLD, OLD, NEW].map((version) => ({
        tenant_id: partner.partnerId,
        at: new Date(),
        method: 'GET',
        path: '/v1/commerce/keys',
        status: 200,
        error_code: null,
        request_id: randomUUID(),
        client_request_id: null,
        idempotency_key: null,
        latency_ms: 1,
        key_id: partner.keyId,
        api_version: version,
      })),
      50_000,
      1_000,
    );
    const run = await admin(['api-version-usage', '--version', OLD, '--since', '2026-01-01']);
    expect(run.code, run.stderr).toBe(0);
    const usage = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
      since: string;
      version: string;
      partners: { partnerId: string; requests: number; versions: { version: string }[] }[];
      partnersOmitted: number;
    };
    expect(usage).toMatchObject({ since: '2026-01-01T00:00:00.000Z', version: OLD });
    expect(usage.partners).toContainEqual(
      expect.objectContaining({
        partnerId: partner.partnerId,
        name: 'Still old',
        apiVersion: NEW,
        requests: 2,
        versions: [{ version: OLD, requests: 2, lastAt: expect.any(String) }],
      }),
    );

    for (const [args, message] of [
      [['--version', '2026-10-01'], /--version must be one of 2026-11-01, 2026-12-01/],
      [['--since', 'last week'], /--since must be an ISO 8601 date/],
      [['--since', '9'.repeat(50_000)], /--since must be an ISO 8601 date/],
      [['--partner'], /unknown option or argument/],
    ] as const) {
      const refused = await admin(['api-version-usage', ...args]);
      expect(refused.code, args.join(' ')).not.toBe(0);
      expect(refused.stderr).toMatch(message);
      expect(refused.stdout).toBe('');
    }
  });
});
