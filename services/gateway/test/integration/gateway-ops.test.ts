import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createPartner } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';
import { createRedisClient } from '../../src/redis-client.js';

const FAILURES_PER_MINUTE = 5;

/** A TCP relay to Redis that the test can cut, as a network partition would. */
async function startRelay(target: URL) {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined).on('close', () => sockets.delete(socket));
    return socket;
  };
  const server = createServer((client) => {
    const upstream = track(connect(Number(target.port || 6379), target.hostname));
    track(client).pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    /** Refuse new connections and drop the open ones. */
    async cut() {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let relay: Awaited<ReturnType<typeof startRelay>>;
let redis: ReturnType<typeof createRedisClient>;
let gateway: GatewayService;
let partner: { partnerId: string; apiKey: string };

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  relay = await startRelay(new URL(inject('servers').redisUrl));
  redis = createRedisClient(relay.url, env.logger);
  await redis.connect();
  // The gateway alone: none of the services behind it runs under this prefix.
  gateway = createLoneGateway(
    env,
    db,
    {
      NATS_REQUEST_TIMEOUT_MS: '2000',
      AUTH_FAILURES_PER_MIN_PER_IP: String(FAILURES_PER_MINUTE),
    },
    redis,
  );
  await gateway.start();
  partner = await createPartner(db, { kind: 'commerce', name: 'Ops' });
});

afterAll(async () => {
  await gateway?.stop();
  redis?.destroy();
  await db?.destroy();
  await env?.cleanup();
});

const get = async (url: string, apiKey?: string) => {
  const response = await fetch(
    url,
    apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : {},
  );
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    rateLimitRemaining: response.headers.get('x-ratelimit-remaining'),
    text: await response.text(),
  };
};
const madeUpKey = () =>
  `pcp_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;

describe('the ops port', () => {
  it('serves readiness and metrics, which the public port does not', async () => {
    const ready = await get(`${gateway.opsUrl()}/health/ready`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({
      status: 'ok',
      checks: { nats: true, database: true, accepting: true },
    });
    expect((await get(`${gateway.url()}/health/live`)).status).toBe(200);
    const metrics = await get(`${gateway.opsUrl()}/metrics`);
    expect(metrics.text).toContain('pcp_gateway_key_lookups_total');

    for (const path of ['/health/ready', '/metrics']) {
      const hidden = await get(`${gateway.url()}${path}`);
      expect(hidden.status).toBe(404);
      expect(hidden.type).toContain('application/problem+json');
      expect(JSON.parse(hidden.text)).toMatchObject({ errorCode: 'NOT_FOUND' });
    }
  });

  it('stays ready while the services behind it are down: only their routes answer 503', async () => {
    const route = await get(`${gateway.url()}/v1/commerce/stores`, partner.apiKey);
    expect(route.status).toBe(503);
    expect(JSON.parse(route.text)).toMatchObject({ errorCode: 'SERVICE_UNAVAILABLE' });
    expect((await get(`${gateway.opsUrl()}/health/ready`)).status).toBe(200);
  });
});

describe('without Redis', () => {
  it('stays ready and keeps limiting failed authentications in memory, without waiting', async () => {
    await relay.cut();
    for (let n = 0; n < FAILURES_PER_MINUTE; n++) {
      const started = Date.now();
      expect((await get(`${gateway.url()}/v1/commerce/stores`, madeUpKey())).status).toBe(401);
      expect(Date.now() - started).toBeLessThan(200);
    }
    const refused = await get(`${gateway.url()}/v1/commerce/stores`, madeUpKey());
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toMatchObject({ errorCode: 'RATE_LIMITED' });

    // A partner's request is counted in memory too and goes on (to a service that is down).
    const started = Date.now();
    const partnerRequest = await get(`${gateway.url()}/v1/commerce/stores`, partner.apiKey);
    expect(Date.now() - started).toBeLessThan(200);
    expect(partnerRequest.status).toBe(503);
    expect(partnerRequest.rateLimitRemaining).not.toBeNull();
    expect((await get(`${gateway.opsUrl()}/health/ready`)).status).toBe(200);
  });
});
