import { events, subjects } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  loadConfig,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '../../src/app.js';

// Sealed webhook secrets are bound to their rows (docs/operations.md#secrets-at-rest): one
// copied by SQL into another partner's row (an injection, an insider) is not handed out there.

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
let ordering: ReturnType<typeof createOrderingService>;
/** A partner's webhook receiver: the requests it got. */
let receiver: Server;
let receiverUrl: string;
const received: string[] = [];

const ctx = (partnerId: string, mode: 'test' | 'live'): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'distribution',
  mode,
});

beforeAll(async () => {
  env = await createTestEnvironment();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-webhook-secret-binding',
  });
  ordering = createOrderingService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('ordering'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: 5_000,
    db,
    config: loadConfig(orderingEnvSchema, { WEBHOOK_ALLOW_HTTP: 'true' }),
  });
  await ordering.start();
  receiver = createServer((request, response) => {
    received.push(request.url ?? '');
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
  await ordering?.stop(5_000);
  await db?.destroy();
  await env?.cleanup();
});

/** A live partner's endpoint: its plaintext secret (shown once) and its stored, sealed one. */
async function liveEndpoint() {
  const victim = randomUUID();
  const put = await bus.request(
    subjects.ordering.putWebhook,
    { url: 'https://victim.example/hooks', events: ['order.created'] },
    ctx(victim, 'live'),
  );
  const { secret } = await db
    .selectFrom('webhook_endpoints')
    .select('secret')
    .where('partner_id', '=', victim)
    .executeTakeFirstOrThrow();
  return { plaintext: put.endpoint.secret!, sealed: secret };
}

const openStream = (partnerId: string) =>
  bus.request(subjects.ordering.openWebhookStream, {}, ctx(partnerId, 'test'));

describe('a sealed webhook secret copied into another row', () => {
  it("is not handed out by the test tenant's webhook stream (copied into its stream row)", async () => {
    const victim = await liveEndpoint();
    const attacker = randomUUID();
    const own = await openStream(attacker);
    expect(own.secret).toMatch(/^whsec_/);
    await sql`update ordering.webhook_streams set secret = ${victim.sealed}
      where partner_id = ${attacker}`.execute(db);

    const error = await expectAppError(openStream(attacker), 'INTERNAL');
    expect(JSON.stringify(error)).not.toContain(victim.plaintext);
    // Nothing replaced the broken secret behind the operator's back.
    const stored = await db
      .selectFrom('webhook_streams')
      .select('secret')
      .where('partner_id', '=', attacker)
      .executeTakeFirstOrThrow();
    expect(stored.secret).toBe(victim.sealed);
  });

  it("is not handed out by the test tenant's webhook stream (copied into its endpoint row)", async () => {
    const victim = await liveEndpoint();
    const attacker = randomUUID();
    await bus.request(
      subjects.ordering.putWebhook,
      { url: 'https://attacker.example/hooks', events: ['order.created'] },
      ctx(attacker, 'test'),
    );
    // Even with the row's mode forged to the victim's.
    await sql`update ordering.webhook_endpoints set secret = ${victim.sealed}, mode = 'live'
      where partner_id = ${attacker}`.execute(db);

    const error = await expectAppError(openStream(attacker), 'INTERNAL');
    expect(JSON.stringify(error)).not.toContain(victim.plaintext);
  });

  it('still opens in its own row: a rotation keeps the previous secret signing', async () => {
    const partnerId = randomUUID();
    const put = await bus.request(
      subjects.ordering.putWebhook,
      { url: 'https://tenant.example/hooks', events: ['order.created'] },
      ctx(partnerId, 'test'),
    );
    expect((await openStream(partnerId)).secret).toBe(put.endpoint.secret);
    const rotated = await bus.request(
      subjects.ordering.rotateWebhookSecret,
      {},
      ctx(partnerId, 'test'),
    );
    expect((await openStream(partnerId)).secret).toBe(rotated.secret);
  });

  it('signs no delivery: the try fails, and the endpoint gets nothing', async () => {
    const victim = await liveEndpoint();
    const attacker = randomUUID();
    await bus.request(
      subjects.ordering.putWebhook,
      { url: receiverUrl, events: ['order.created'] },
      ctx(attacker, 'live'),
    );
    await sql`update ordering.webhook_endpoints set secret = ${victim.sealed}
      where partner_id = ${attacker}`.execute(db);

    const eventId = randomUUID();
    const envelope = {
      id: eventId,
      type: 'ordering.v1.order-status-changed',
      occurredAt: new Date().toISOString(),
      version: 1,
      data: {
        event: 'order.created',
        orderId: randomUUID(),
        storeId: randomUUID(),
        partnerId: attacker,
        state: 'open',
        status: 'pending',
        previousStatus: null,
      },
    };
    await env.nc
      .jetstream()
      .publish(`${env.prefix}.${events.orderStatusChanged.subject}`, JSON.stringify(envelope), {
        msgID: eventId,
      });
    await expect
      .poll(
        async () =>
          (
            await db
              .selectFrom('webhook_deliveries')
              .select('last_error')
              .where('event_id', '=', eventId)
              .executeTakeFirst()
          )?.last_error,
        { timeout: 10_000 },
      )
      .toBe('the signing secret cannot be used');
    expect(received).toEqual([]);
  });
});
