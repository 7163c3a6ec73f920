import {
  createPlatformClient,
  createWebhookVerifier,
  ingestCatalog,
  placeOrder,
  type PlatformClient,
} from '@pcp/client';
import {
  events,
  jetStreamConsumers,
  natsAuthorization,
  natsInboxPrefix,
  natsMigratorUser,
  natsOperatorUser,
  natsStreams,
  natsPasswordEnv,
  natsUsers,
  subjects,
  type NatsAccountUser,
  type NatsUser,
} from '@pcp/contracts';
import type { OrderingDatabase } from '@pcp/ordering';
import type { StoresDatabase } from '@pcp/stores';
import {
  AppError,
  baseEnvSchema,
  connectNats,
  createBusClient,
  deadLetterCommands,
  deadLetterHeaders,
  deadLetterSubject,
  drainNats,
  loadConfig,
  parseAdminCall,
} from '@pcp/service-kit';
import { connect, headers as createHeaders, type NatsConnection } from 'nats';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { newBuyer, sodaOrder } from './orders.js';
import { openSse } from './sse.js';
import {
  orderEventEnvelope,
  startWebhookReceiver,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * The platform on a NATS server that enforces the permissions of nats-permissions.ts (the
 * module deploy/nats/values.yaml is rendered from), each service connected as its own user:
 * a flow through every service works without one permission violation, and what the
 * permissions exist for is refused (reading another service's subjects or replies,
 * requests from other than the gateway and the named callers, events of another service,
 * another service's JetStream objects, no or wrong credentials).
 */

type Violation = { operation: string; subject: string };

/**
 * The nats-server binary the set-up runs too. Where there is none (a laptop whose servers are
 * containers), this file is skipped: it needs a server of its own with its own configuration.
 * In CI (CI set) it fails instead: .ci/run installs one.
 */
const natsServer = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin']
  .map((dir) => join(dir, 'nats-server'))
  .find((path) => existsSync(path));
if (!natsServer && process.env.CI) {
  throw new Error('nats-server is missing in CI: .ci/run installs it');
}

interface AuthNats {
  readonly url: string;
  readonly passwords: Record<NatsAccountUser, string>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A nats-server with JetStream and the `authorization` block for `prefix`, each password a
 * variable the server reads from its environment, as in the Helm chart's configuration.
 */
async function startAuthNats(prefix: string): Promise<AuthNats> {
  const dir = await mkdtemp(join(tmpdir(), 'pcp-nats-auth-'));
  const port = await freePort();
  const authorization = natsAuthorization(prefix, (user) => `$${natsPasswordEnv(user)}`);
  const config = JSON.stringify(
    { listen: `127.0.0.1:${port}`, jetstream: { store_dir: join(dir, 'js') }, authorization },
    null,
    2,
  ).replace(/"(\$NATS_PW_[A-Z]+)"/g, '$1');
  await writeFile(join(dir, 'nats.conf'), config);
  const users = authorization.users.map(({ user }) => user);
  const passwords = Object.fromEntries(
    // The server parses a variable's value as configuration: letters and digits, from a letter.
    users.map((user) => [user, `pw${randomBytes(18).toString('hex')}`]),
  ) as Record<NatsAccountUser, string>;
  const server: ChildProcess = spawn(natsServer!, ['-c', join(dir, 'nats.conf')], {
    env: {
      ...process.env,
      ...Object.fromEntries(users.map((user) => [natsPasswordEnv(user), passwords[user]])),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  server.stderr?.on(
    'data',
    (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)),
  );
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `nats://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    try {
      const nc = await connect({ servers: url, user: 'gateway', pass: passwords.gateway });
      await nc.close();
      break;
    } catch (error) {
      if (attempt > 100 || server.exitCode !== null) {
        server.kill();
        throw new Error(`nats-server did not start: ${String(error)}\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    url,
    passwords,
    async stop() {
      if (server.exitCode === null) {
        server.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Permission violations the server reported to `nc`, as they come. */
function watchViolations(nc: NatsConnection): Violation[] {
  const seen: Violation[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.permissionContext) seen.push({ ...status.permissionContext });
    }
  })();
  return seen;
}

let env: TestEnvironment;
let nats: AuthNats;
let platform: TestPlatform;
const connections = new Map<NatsUser, NatsConnection>();
const serviceViolations = new Map<NatsUser, Violation[]>();
const probes: NatsConnection[] = [];
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let receiver: WebhookReceiver;

beforeAll(async () => {
  if (!natsServer) return;
  env = await createTestEnvironment();
  nats = await startAuthNats(env.prefix);
  for (const user of natsUsers) {
    const nc = await connectNats({
      url: nats.url,
      name: `${user}-${env.prefix}`,
      logger: env.logger,
      credentials: { user, password: nats.passwords[user] },
    });
    connections.set(user, nc);
    serviceViolations.set(user, watchViolations(nc));
  }
  // The migration step's part: the topology, as the migrator (no service may create it).
  const migrator = await connectNats({
    url: nats.url,
    name: `migrator-${env.prefix}`,
    logger: env.logger,
    credentials: { user: natsMigratorUser, password: nats.passwords[natsMigratorUser] },
  });
  probes.push(migrator);
  platform = await startPlatform(env, {
    connections: Object.fromEntries(connections),
    migrator,
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '100',
      ORDERING_PAYMENTS_TIMEOUT_MS: '4000',
    },
  });
  host = await startCatalogHost();
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await host?.close();
  await platform?.stop();
  await Promise.all([...connections.values(), ...probes].map((nc) => drainNats(nc, 2_000)));
  await nats?.stop();
  await env?.cleanup();
});

/** A fresh connection as `user`, with the violations the server reports to it. */
async function probe(user: NatsAccountUser) {
  const nc = await connectNats({
    url: nats.url,
    name: `probe-${user}`,
    logger: env.logger,
    credentials: { user, password: nats.passwords[user] },
  });
  probes.push(nc);
  return { nc, violations: watchViolations(nc) };
}

/** Resolves once the server refused `operation` on `subject` to this connection. */
async function expectRefused(
  connection: { nc: NatsConnection; violations: Violation[] },
  operation: 'publish' | 'subscription',
  subject: string,
) {
  await connection.nc.flush();
  await expect
    .poll(() => connection.violations, { timeout: 2_000, interval: 20 })
    .toContainEqual({ operation, subject });
}

describe.skipIf(!natsServer)('the platform under per-service NATS users', () => {
  it('runs a store, a catalog ingest, a paid order and its webhooks without a violation', async () => {
    const commercePartner = await platform.newPartner('commerce');
    const distribution = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
    const commerce = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: commercePartner.apiKey,
    });
    const market: PlatformClient = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: distribution.apiKey,
    });

    // stores
    const storeId = randomUUID();
    const created = await commerce.PUT('/v1/commerce/stores/{storeId}', {
      params: { path: { storeId } },
      body: storeProfile({
        orderSubmissionUrl: undefined,
        availability: alwaysOpen,
      }),
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);

    // catalog: notify (catalog → stores), the run on the ingest stream, the activation
    // event taken by stores' durable consumer
    const catalog = cartTestCatalog(storeId);
    const ingest = await ingestCatalog(commerce, {
      storeId,
      callbackUrl: host.serveJson(`/${randomUUID()}.json`, catalog.document),
      timeoutMs: 30_000,
    });
    expect(ingest.errors).toEqual([]);
    expect(ingest.status).toBe('succeeded');
    await expect
      .poll(async () => {
        const store = await commerce.GET('/v1/commerce/stores/{storeId}', {
          params: { path: { storeId } },
        });
        return store.data?.catalogSetId;
      })
      .toBe(catalog.ids.catalogSetId);

    // ordering's webhooks, payments' vault, and place (ordering → stores, catalog, payments)
    const hook = await market.PUT('/v1/marketfront/webhooks', {
      body: {
        url: receiver.url,
        events: ['order.created', 'order.status_changed', 'order.cancelled'],
      },
    });
    expect(hook.response.status, JSON.stringify(hook.error)).toBe(201);
    const verify = createWebhookVerifier(hook.data!.secret!);
    const buyer = await newBuyer(market, '4242424242424242');
    // validate asks payments whether the card is the end user's (ordering → payments)
    const validated = await market.POST('/v1/marketfront/orders/validate', {
      body: sodaOrder(catalog.ids, storeId, buyer.paymentId),
      headers: { 'x-end-user-id': buyer.endUser },
    });
    expect(validated.data?.isValid, JSON.stringify(validated.data?.errors)).toBe(true);
    const storeStream = await openSse(
      new URL(`/v1/commerce/stores/${storeId}/events`, platform.baseUrl),
      { authorization: `Bearer ${commercePartner.apiKey}` },
    );
    const marketStream = await openSse(new URL('/v1/marketfront/events', platform.baseUrl), {
      authorization: `Bearer ${distribution.apiKey}`,
    });
    const placed = await placeOrder(market, {
      body: sodaOrder(catalog.ids, storeId, buyer.paymentId),
      endUserId: buyer.endUser,
    });
    const orderId = placed.order.orderId;
    expect(placed.order).toMatchObject({
      status: 'pending',
      payment: { paymentId: buyer.paymentId },
    });

    // a status change by the store, and both events delivered as signed webhooks, and on the
    // live streams opened before the order (the gateway's ordered consumers, ordering's
    // attempt notices)
    const confirmed = await commerce.POST('/v1/commerce/orders/{orderId}/status', {
      params: { path: { orderId } },
      body: { status: 'confirmed' },
    });
    expect(confirmed.response.status, JSON.stringify(confirmed.error)).toBe(200);
    const delivered = await receiver.waitFor(
      2,
      (request) => request.payload?.data?.orderId === orderId,
    );
    const kinds = delivered.map((request) => {
      verify.verify(request.body, request.headers);
      return request.payload.type as string;
    });
    expect(kinds.sort()).toEqual(['order.created', 'order.status_changed']);
    const live = ['order.created', 'order.status_changed'];
    expect((await storeStream.waitFor(2)).map((event) => event.event)).toEqual(live);
    await expect
      .poll(() => marketStream.events.map((event) => event.event))
      .toEqual(expect.arrayContaining([...live, 'webhook.delivery_attempted']));
    storeStream.drop();
    marketStream.drop();

    for (const user of natsUsers) expect(serviceViolations.get(user), user).toEqual([]);
  }, 60_000);
});

describe.skipIf(!natsServer)('what the permissions refuse', () => {
  it('lets a service subscribe to no other service’s subjects or replies', async () => {
    const stores = await probe('stores');
    for (const subject of [
      `${env.prefix}.${subjects.ordering.place.name}`,
      `${env.prefix}.ordering.>`,
      `${env.prefix}.payments.>`,
      `${env.prefix}.events.>`,
      `${natsInboxPrefix('gateway')}.>`,
      '_INBOX.>',
      '>',
    ]) {
      stores.nc.subscribe(subject);
      await expectRefused(stores, 'subscription', subject);
    }
  });

  it('lets a service call another only where it is a named caller', async () => {
    const ctx = { requestId: randomUUID() };
    // ordering is a named caller of payments' charges, not of its cards
    const ordering = await probe('ordering');
    const vault = `${env.prefix}.${subjects.payments.vaultCard.name}`;
    ordering.nc.publish(vault, '{}');
    await expectRefused(ordering, 'publish', vault);
    // stores calls nobody: not payments, not ordering
    const stores = await probe('stores');
    const bus = createBusClient(stores.nc, {
      prefix: env.prefix,
      timeoutMs: 500,
      logger: env.logger,
    });
    await expect(
      bus.requestRaw(subjects.payments.authorize, new TextEncoder().encode('{}'), ctx),
    ).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await expectRefused(stores, 'publish', `${env.prefix}.${subjects.payments.authorize.name}`);
    // and no service calls its own subjects, so none can bypass the gateway through itself
    const payments = await probe('payments');
    const listCards = `${env.prefix}.${subjects.payments.listCards.name}`;
    payments.nc.publish(listCards, '{}');
    await expectRefused(payments, 'publish', listCards);
  });

  it('lets no service but ordering reach a store’s signing secret, catalog included', async () => {
    const owner = await platform.newPartner('commerce');
    const storeId = randomUUID();
    const put = await createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: owner.apiKey,
    }).PUT('/v1/commerce/stores/{storeId}', {
      params: { path: { storeId } },
      body: storeProfile(),
    });
    const secret = put.data!.orderSubmissionSecret!;
    expect(secret).toMatch(/^whsec_/);
    const asOwner = {
      requestId: randomUUID(),
      partnerId: owner.partnerId,
      partnerKind: 'commerce' as const,
    };
    const busOf = (nc: NatsConnection) =>
      createBusClient(nc, { prefix: env.prefix, timeoutMs: 1_000, logger: env.logger });

    // Catalog may read the store as its owner would, and the reply holds no secret.
    const catalog = await probe('catalog');
    const store = await busOf(catalog.nc).requestRaw(
      subjects.stores.get,
      new TextEncoder().encode(JSON.stringify({ storeId })),
      asOwner,
    );
    const text = new TextDecoder().decode(store);
    expect(text).toContain(storeId);
    expect(text).not.toContain(secret.slice('whsec_'.length));
    expect(text).not.toContain('whsec_');
    // The subjects that carry secrets or submission targets are not catalog's to call.
    const catalogBus = busOf(catalog.nc);
    await expect(
      catalogBus.request(subjects.stores.submissionSecrets, { storeId }, asOwner),
    ).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await expect(
      catalogBus.request(subjects.stores.orderContext, { storeId }, asOwner),
    ).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    for (const subject of [subjects.stores.submissionSecrets, subjects.stores.orderContext]) {
      await expectRefused(catalog, 'publish', `${env.prefix}.${subject.name}`);
    }
    // Nor the gateway's (no partner request reaches it); ordering's submitter gets it.
    const gateway = await probe('gateway');
    await expect(
      busOf(gateway.nc).request(subjects.stores.submissionSecrets, { storeId }, asOwner),
    ).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await expectRefused(
      gateway,
      'publish',
      `${env.prefix}.${subjects.stores.submissionSecrets.name}`,
    );
    const ordering = await probe('ordering');
    expect(
      await busOf(ordering.nc).request(subjects.stores.submissionSecrets, { storeId }, asOwner),
    ).toEqual({ secrets: [secret] });
  });

  it('lets only the gateway send ordering a request that claims a partner', async () => {
    const ctx = {
      requestId: randomUUID(),
      partnerId: randomUUID(),
      partnerKind: 'distribution' as const,
      endUserId: 'someone',
    };
    const request = (nc: NatsConnection) =>
      createBusClient(nc, { prefix: env.prefix, timeoutMs: 1_000, logger: env.logger }).request(
        subjects.ordering.getOrder,
        { orderId: randomUUID() },
        ctx,
      );
    // The gateway's request reaches ordering, which answers (no such order for that partner).
    const gateway = await probe('gateway');
    await expect(request(gateway.nc)).rejects.toMatchObject({ code: 'ORDER_NOT_FOUND' });
    for (const user of ['stores', 'catalog', 'payments', 'ordering'] as const) {
      const other = await probe(user);
      const outcome = await request(other.nc).catch((error: unknown) => error);
      expect(outcome, user).toBeInstanceOf(AppError);
      expect(outcome, user).toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
      await expectRefused(other, 'publish', `${env.prefix}.${subjects.ordering.getOrder.name}`);
    }
  });

  it('lets a service publish only its own events, and touch only its own JetStream objects', async () => {
    const activated = `${env.prefix}.${events.catalogActivated.subject}`;
    const statusChanged = `${env.prefix}.${events.orderStatusChanged.subject}`;
    const ordering = await probe('ordering');
    ordering.nc.publish(activated, '{}');
    await expectRefused(ordering, 'publish', activated);
    const stores = await probe('stores');
    for (const subject of [
      statusChanged,
      activated,
      `$JS.API.STREAM.DELETE.${env.prefix}_events`,
      `$JS.API.STREAM.PURGE.${env.prefix}_events`,
      `$JS.API.CONSUMER.DELETE.${env.prefix}_events.ordering-webhook-deliveries`,
      `$JS.API.CONSUMER.MSG.NEXT.${env.prefix}_events.ordering-webhook-deliveries`,
      `$JS.API.STREAM.CREATE.${env.prefix}_catalog_ingest`,
    ]) {
      stores.nc.publish(subject, '{}');
      await expectRefused(stores, 'publish', subject);
    }
    // the gateway's JetStream is its live streams' consumers: none of the services' durables,
    // no other event, no stream changes
    const gateway = await probe('gateway');
    for (const subject of [
      '$JS.API.INFO',
      `$JS.API.STREAM.DELETE.${env.prefix}_events`,
      `$JS.API.CONSUMER.DELETE.${env.prefix}_events.ordering-webhook-deliveries`,
      `$JS.API.CONSUMER.MSG.NEXT.${env.prefix}_events.ordering-webhook-deliveries`,
      `$JS.API.CONSUMER.CREATE.${env.prefix}_events.ordering-webhook-deliveries.${statusChanged}`,
      `$JS.API.CONSUMER.CREATE.${env.prefix}_events.mine.${activated}`,
      `$JS.API.CONSUMER.CREATE.${env.prefix}_events`,
    ]) {
      gateway.nc.publish(subject, '{}');
      await expectRefused(gateway, 'publish', subject);
    }
  });

  it('lets ordering’s admin command list and republish its dead letters, and stores delete none', async () => {
    const ordering = await probe('ordering');
    const statusChanged = `${env.prefix}.${events.orderStatusChanged.subject}`;
    const headers = createHeaders();
    headers.set(deadLetterHeaders.subject, statusChanged);
    headers.set(deadLetterHeaders.stream, `${env.prefix}_events`);
    headers.set(deadLetterHeaders.reason, 'test');
    // An event of a partner without an endpoint: recorded as skipped when it comes back.
    const event = orderEventEnvelope({
      partnerId: randomUUID(),
      orderId: randomUUID(),
      storeId: randomUUID(),
      version: 1,
    });
    await ordering.nc
      .jetstream()
      .publish(
        deadLetterSubject(env.prefix, 'ordering-webhook-deliveries'),
        JSON.stringify(event),
        {
          headers,
        },
      );
    const admin = async (...argv: string[]) => {
      const { command, args } = parseAdminCall(deadLetterCommands<OrderingDatabase>(), argv);
      return command.run({
        db: platform.orderingDb,
        nc: ordering.nc,
        js: ordering.nc.jetstream(),
        jsm: await ordering.nc.jetstreamManager(),
        logger: env.logger,
        config: loadConfig(baseEnvSchema, {}),
        prefix: env.prefix,
        args,
      });
    };
    expect(
      await admin('dead-letters-list', '--consumer', 'ordering-webhook-deliveries'),
    ).toMatchObject({ total: 1 });
    expect(
      await admin('dead-letters-republish', '--consumer', 'ordering-webhook-deliveries', '--all'),
    ).toMatchObject({ remaining: 0, republished: [{ subject: statusChanged }] });
    await ordering.nc.flush();
    expect(ordering.violations).toEqual([]);

    // Payments has no JetStream at all: it deletes no dead letter.
    const payments = await probe('payments');
    const remove = `$JS.API.STREAM.MSG.DELETE.${env.prefix}_dead_letters`;
    payments.nc.publish(remove, '{}');
    await expectRefused(payments, 'publish', remove);
  });

  it('lets stores’ admin command republish the store-event recorder’s dead letters', async () => {
    const stores = await probe('stores');
    const storeChanged = `${env.prefix}.${events.storeChanged.subject}`;
    const headers = createHeaders();
    headers.set(deadLetterHeaders.subject, storeChanged);
    headers.set(deadLetterHeaders.stream, `${env.prefix}_events`);
    headers.set(deadLetterHeaders.reason, 'test');
    const event = {
      id: randomUUID(),
      type: 'stores.v1.store-changed',
      occurredAt: new Date().toISOString(),
      version: 1,
      data: {
        event: 'catalog.activated',
        storeId: randomUUID(),
        catalogSetId: randomUUID(),
        etag: '"v1"',
        activatedAt: new Date().toISOString(),
      },
    };
    const durable = 'ordering-store-webhook-deliveries';
    // Written as the recorder dead-letters it (ordering may publish its own dead letters).
    const ordering = await probe('ordering');
    await ordering.nc
      .jetstream()
      .publish(deadLetterSubject(env.prefix, durable), JSON.stringify(event), { headers });
    const admin = async (...argv: string[]) => {
      const { command, args } = parseAdminCall(deadLetterCommands<StoresDatabase>(), argv);
      return command.run({
        db: platform.storesDb,
        nc: stores.nc,
        js: stores.nc.jetstream(),
        jsm: await stores.nc.jetstreamManager(),
        logger: env.logger,
        config: loadConfig(baseEnvSchema, {}),
        prefix: env.prefix,
        args,
      });
    };
    expect(await admin('dead-letters-list', '--consumer', durable)).toMatchObject({ total: 1 });
    expect(await admin('dead-letters-republish', '--consumer', durable, '--all')).toMatchObject({
      remaining: 0,
      republished: [{ subject: storeChanged }],
    });
    await stores.nc.flush();
    expect(stores.violations).toEqual([]);
    expect(ordering.violations).toEqual([]);
  });

  it('lets the operators’ user run JetStream but speak for no partner', async () => {
    const operator = await probe(natsOperatorUser);
    const jsm = await operator.nc.jetstreamManager();
    const events = await jsm.streams.info(`${env.prefix}_events`);
    expect(events.config.subjects).toEqual([`${env.prefix}.events.>`]);
    const place = `${env.prefix}.${subjects.ordering.place.name}`;
    operator.nc.publish(place, '{}');
    await expectRefused(operator, 'publish', place);
    operator.nc.subscribe(`${env.prefix}.>`);
    await expectRefused(operator, 'subscription', `${env.prefix}.>`);
  });

  it('refuses connections without credentials or with another user’s password', async () => {
    await expect(connect({ servers: nats.url, reconnect: false })).rejects.toMatchObject({
      code: 'AUTHORIZATION_VIOLATION',
    });
    await expect(
      connect({
        servers: nats.url,
        user: 'payments',
        pass: nats.passwords.stores,
        reconnect: false,
      }),
    ).rejects.toMatchObject({ code: 'AUTHORIZATION_VIOLATION' });
  });
});

/**
 * Card numbers travel once, gateway → payments on the vault subject. A stream captures any
 * subject of the account, so a service that could update one (or create one) could copy them
 * off the bus; with each service's own credentials, every step of that attack is refused.
 */
describe.skipIf(!natsServer)('card data on the bus', () => {
  const vault = () => `${env.prefix}.${subjects.payments.vaultCard.name}`;
  const attackers = ['stores', 'catalog', 'ordering', 'payments', 'gateway'] as const;

  it.each(attackers)(
    'refuses %s a stream or consumer that would capture the vault subject',
    async (user) => {
      const attacker = await probe(user);
      const streams = Object.values(natsStreams).map((name) => `${env.prefix}_${name}`);
      const operatorJsm = await (await probe(natsOperatorUser)).nc.jetstreamManager();
      for (const stream of streams) {
        const live = (await operatorJsm.streams.info(stream)).config;
        const update = `$JS.API.STREAM.UPDATE.${stream}`;
        attacker.nc.publish(
          update,
          JSON.stringify({ ...live, subjects: [...live.subjects, vault()] }),
        );
        await expectRefused(attacker, 'publish', update);
      }
      const create = `$JS.API.STREAM.CREATE.${env.prefix}_loot`;
      attacker.nc.publish(
        create,
        JSON.stringify({ name: `${env.prefix}_loot`, subjects: [`${env.prefix}.payments.>`] }),
      );
      await expectRefused(attacker, 'publish', create);
      for (const { stream, durable } of jetStreamConsumers) {
        const id = `${env.prefix}_${stream}.${durable}`;
        const config = JSON.stringify({
          stream_name: `${env.prefix}_${stream}`,
          config: { durable_name: durable, filter_subject: vault(), ack_policy: 'explicit' },
        });
        for (const subject of [
          `$JS.API.CONSUMER.CREATE.${id}`,
          `$JS.API.CONSUMER.CREATE.${id}.${vault()}`,
          `$JS.API.CONSUMER.DURABLE.CREATE.${id}`,
        ]) {
          attacker.nc.publish(subject, config);
          await expectRefused(attacker, 'publish', subject);
        }
      }
      if (user !== 'payments') {
        attacker.nc.subscribe(vault());
        await expectRefused(attacker, 'subscription', vault());
      }
      // Nothing changed: no stream takes the payments subjects, every filter is as declared.
      for (const stream of streams) {
        const { config } = await operatorJsm.streams.info(stream);
        expect(config.subjects.filter((subject) => subject.includes('.payments.'))).toEqual([]);
      }
      await expect(operatorJsm.streams.info(`${env.prefix}_loot`)).rejects.toThrow(/not found/);
      for (const { stream, durable } of jetStreamConsumers) {
        const { config } = await operatorJsm.consumers.info(`${env.prefix}_${stream}`, durable);
        expect(config.filter_subject ?? '').not.toContain('payments');
      }
    },
  );

  it('still vaults a card end to end, without a violation', async () => {
    const distribution = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
    const market = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: distribution.apiKey,
    });
    const buyer = await newBuyer(market, '4242424242424242');
    expect(buyer.paymentId).toBeTruthy();
    for (const user of natsUsers) expect(serviceViolations.get(user), user).toEqual([]);
  });
});
