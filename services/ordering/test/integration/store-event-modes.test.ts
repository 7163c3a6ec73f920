import { events, subjects, type PartnerMode } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  loadConfig,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '../../src/app.js';

// A store event reaches only the webhook endpoints of its store's mode
// (docs/guide/sandbox.md#modes): published on the real JetStream as stores' outbox does,
// recorded by ordering's consumer and delivered over loopback HTTP.

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
let ordering: ReturnType<typeof createOrderingService>;
let server: Server;
/** Parsed bodies received, by the endpoint's path (its partner's mode). */
const received: Record<PartnerMode, { type: string; data: Record<string, unknown> }[]> = {
  live: [],
  test: [],
};

const distribution = (partnerId: string, mode: PartnerMode): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'distribution',
  mode,
});

/** A store's `store.status_changed` envelope as stores publishes it; no mode: as before modes. */
function statusChanged(storeId: string, mode: PartnerMode | undefined) {
  return {
    id: randomUUID(),
    type: events.storeChanged.schema.shape.type.value,
    occurredAt: new Date().toISOString(),
    version: 1,
    data: {
      event: 'store.status_changed',
      storeId,
      status: 'paused',
      reason: 'staff_shortage',
      pausedAt: null,
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: 'partner',
      ...(mode ? { mode } : {}),
    },
  };
}

async function until(done: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for deliveries');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  env = await createTestEnvironment();
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const mode: PartnerMode = request.url === '/test' ? 'test' : 'live';
      received[mode].push(JSON.parse(Buffer.concat(chunks).toString()));
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-store-event-modes',
  });
  ordering = createOrderingService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('ordering'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: 5_000,
    db,
    config: loadConfig(orderingEnvSchema, {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '100',
    }),
  });
  await ordering.start();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
});

afterAll(async () => {
  await ordering?.stop(5_000);
  await new Promise((resolve) => server?.close(resolve));
  await db?.destroy();
  await env?.cleanup();
});

describe('store events by mode', () => {
  it('go only to endpoints of their store’s mode; one without a mode is live', async () => {
    const { port } = server.address() as AddressInfo;
    const partners = { live: randomUUID(), test: randomUUID() };
    for (const mode of ['live', 'test'] as const) {
      await bus.request(
        subjects.ordering.putWebhook,
        { url: `http://127.0.0.1:${port}/${mode}`, events: ['store.status_changed'] },
        distribution(partners[mode], mode),
      );
    }
    const endpoints = await db
      .selectFrom('webhook_endpoints')
      .select(['partner_id', 'mode'])
      .orderBy('mode')
      .execute();
    expect(endpoints).toEqual([
      { partner_id: partners.live, mode: 'live' },
      { partner_id: partners.test, mode: 'test' },
    ]);

    const stores = { live: randomUUID(), test: randomUUID(), beforeModes: randomUUID() };
    const js = env.nc.jetstream();
    const subject = `${env.prefix}.${events.storeChanged.subject}`;
    for (const envelope of [
      statusChanged(stores.test, 'test'),
      statusChanged(stores.live, 'live'),
      statusChanged(stores.beforeModes, undefined),
    ]) {
      await js.publish(subject, JSON.stringify(envelope), { msgID: envelope.id });
    }

    await until(() => received.live.length === 2 && received.test.length === 1);
    const storesOf = (mode: PartnerMode) =>
      received[mode].map((payload) => payload.data.storeId).sort();
    expect(storesOf('test')).toEqual([stores.test]);
    expect(storesOf('live')).toEqual([stores.live, stores.beforeModes].sort());
    // The mode picks the endpoints; the partner is not told it.
    for (const payload of [...received.live, ...received.test]) {
      expect(payload.type).toBe('store.status_changed');
      expect(payload.data).not.toHaveProperty('mode');
    }
    const rows = await db
      .selectFrom('webhook_deliveries')
      .select(['partner_id', 'store_id'])
      .where('store_id', 'is not', null)
      .execute();
    expect(rows).toHaveLength(3);
  });
});
