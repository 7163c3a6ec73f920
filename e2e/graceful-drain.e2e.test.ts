import { createPartner } from '@pcp/gateway/admin';
import { GATEWAY_SCHEMA, type GatewayDatabase } from '@pcp/gateway';
import { createProcessorSimulator, type ProcessorSimulator } from '@pcp/processor-simulator';
import { createDatabase } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { launchProcess, stopProcesses, type ObservedProcess } from '@pcp/testing/service-process';
import { startCatalogHost } from './catalog-host.js';
import { ingestCatalog } from './ingest.js';
import { sodaOrder } from './orders.js';

/**
 * Issue 15: SIGTERM to one of two replicas of each service while a mixed load runs fails no
 * request. Every service and the gateway run twice, each as its own process. The load
 * generator is the load balancer: it polls each gateway's `/health/ready` like an endpoints
 * controller and sends each request to the next gateway that answered 200, over keep-alive
 * connections. One replica of each service gets SIGTERM in turn; the test counts the
 * requests of each phase (sent / ok / failed), checks that the replica exited 0 with every
 * shutdown step done in time, and that the survivor went on serving that service's routes.
 */

const SERVICES = ['gateway', 'stores', 'catalog', 'ordering', 'payments'] as const;
type Service = (typeof SERVICES)[number];

/** How long a gateway keeps serving, unready, after SIGTERM: many readiness polls. */
const UNREADY_DELAY_MS = 3_000;
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** Concurrent partner journeys. */
const CONCURRENCY = 4;
/** Successful requests through a service's survivor that end its phase. */
const SURVIVOR_REQUESTS = 20;

let env: TestEnvironment;
let gatewayDb: Kysely<GatewayDatabase>;
let processor: ProcessorSimulator;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
const replicas = new Map<Service, ObservedProcess[]>();
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  gatewayDb = createDatabase<GatewayDatabase>({
    url: env.databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: 'test-drain',
  });
  processor = createProcessorSimulator();
  const processorUrl = await processor.listen();
  host = await startCatalogHost();
  const extraEnv: Record<Service, Record<string, string>> = {
    gateway: {
      RATE_LIMIT_READS_PER_MIN: '1000000',
      RATE_LIMIT_WRITES_PER_MIN: '1000000',
      RATE_LIMIT_DISCOVERY_PER_MIN: '1000000',
      SHUTDOWN_UNREADY_DELAY_MS: String(UNREADY_DELAY_MS),
    },
    stores: {},
    catalog: { CATALOG_FETCH_ALLOW_HTTP: 'true', CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32' },
    ordering: {},
    payments: { PAYMENT_PROCESSOR_URL: processorUrl, SANDBOX_PROCESSOR_URL: processorUrl },
  };
  const launched = SERVICES.flatMap((service) =>
    [0, 1].map(() => {
      const { child, started } = launchProcess(service, env, {
        SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
        ...extraEnv[service],
      });
      children.push(child);
      return started.then((replica) => {
        replicas.set(service, [...(replicas.get(service) ?? []), replica]);
      });
    }),
  );
  // Two replicas creating the same streams and consumers at once is part of the test.
  const failed = (await Promise.allSettled(launched)).find(
    (outcome) => outcome.status === 'rejected',
  );
  if (failed) throw failed.reason;
}, 300_000);

afterAll(async () => {
  await stopProcesses(children);
  await host?.close();
  await processor?.close();
  await gatewayDb?.destroy();
  await env?.cleanup();
});

interface Answer {
  status: number;
  text: string;
}

/** One gateway behind the test's balancer, with its own keep-alive connections. */
interface Backend {
  readonly process: ObservedProcess;
  readonly url: URL;
  readonly agent: Agent;
  ready: boolean;
}

/**
 * The balancer: readiness polled like an endpoints controller (a gateway that fails the poll
 * or does not answer it gets no new request), round robin over the ready ones.
 */
function createBalancer(gateways: readonly ObservedProcess[]) {
  const backends: Backend[] = gateways.map((process) => ({
    process,
    url: new URL(process.url!),
    agent: new Agent({ keepAlive: true }),
    ready: true,
  }));
  let next = 0;
  let polling = true;
  const probe = (backend: Backend) =>
    fetch(`${backend.process.opsUrl}/health/ready`, { signal: AbortSignal.timeout(1_000) }).then(
      async (response) => {
        await response.arrayBuffer();
        return response.status === 200;
      },
      () => false,
    );
  const poller = (async () => {
    while (polling) {
      await Promise.all(
        backends.map(async (backend) => {
          backend.ready = await probe(backend);
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  return {
    backends,
    /** Send one request to the next ready gateway; rejects on a network error. */
    send(
      method: string,
      path: string,
      options: { apiKey: string; body?: unknown; headers?: Record<string, string> },
    ): Promise<Answer & { backend: Backend }> {
      const ready = backends.filter((backend) => backend.ready);
      const backend = ready[next++ % Math.max(1, ready.length)];
      if (!backend) return Promise.reject(new Error('no gateway is ready'));
      const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
      return new Promise((resolve, reject) => {
        const outgoing = httpRequest(
          {
            host: backend.url.hostname,
            port: backend.url.port,
            method,
            path,
            agent: backend.agent,
            headers: {
              authorization: `Bearer ${options.apiKey}`,
              ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
              ...options.headers,
            },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () =>
              resolve({
                status: response.statusCode ?? 0,
                text: Buffer.concat(chunks).toString('utf8'),
                backend,
              }),
            );
            response.on('error', reject);
          },
        );
        outgoing.on('error', reject);
        outgoing.end(payload);
      });
    },
    async stop() {
      polling = false;
      await poller;
      for (const backend of backends) backend.agent.destroy();
    },
  };
}

interface PhaseCount {
  sent: number;
  ok: number;
  failed: number;
}

describe('SIGTERM to one of two replicas of each service under load', () => {
  it('fails no request, exits 0 in time, and the survivor keeps serving', async () => {
    const balancer = createBalancer(replicas.get('gateway')!);
    const commerce = await createPartner(gatewayDb, { kind: 'commerce', name: 'Drain Store' });
    const distribution = await createPartner(gatewayDb, {
      kind: 'distribution',
      name: 'Drain Market',
      paymentTypes: ['CARD'],
    });
    const storeId = randomUUID();
    const setUp = async (
      method: string,
      path: string,
      apiKey: string,
      body: unknown,
      headers?: Record<string, string>,
    ) => {
      const answer = await balancer.send(method, path, {
        apiKey,
        body,
        ...(headers && { headers }),
      });
      if (answer.status >= 300)
        throw new Error(`${method} ${path}: ${answer.status} ${answer.text}`);
      return JSON.parse(answer.text) as Record<string, unknown>;
    };
    await setUp(
      'PUT',
      `/v1/commerce/stores/${storeId}`,
      commerce.apiKey,
      storeProfile({ availability: alwaysOpen, orderSubmissionUrl: null }),
    );
    const catalog = cartTestCatalog(storeId);
    await ingestCatalog({
      baseUrl: replicas.get('gateway')![0]!.url!,
      apiKey: commerce.apiKey,
      storeId,
      host,
      document: catalog.document,
    });
    const buyers = await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        const endUser = `drain-${randomUUID()}`;
        const card = await setUp(
          'POST',
          '/v1/marketfront/payments/cards',
          distribution.apiKey,
          {
            cardNumber: '4242424242424242',
            expMonth: 12,
            expYear: 2035,
            cvc: '123',
            cardholderName: 'Pat Doe',
          },
          { 'x-end-user-id': endUser },
        );
        return { endUser, paymentId: String(card.paymentId) };
      }),
    );

    // The load: partner journeys touching every service, each request checked for its status.
    let phase = 'steady';
    const counts = new Map<string, PhaseCount>();
    const failures: string[] = [];
    /** Successful requests that went through each service, by the service. */
    const served = new Map<Service, number>(SERVICES.map((service) => [service, 0]));
    const count = (name: string) => {
      let entry = counts.get(name);
      if (!entry) counts.set(name, (entry = { sent: 0, ok: 0, failed: 0 }));
      return entry;
    };
    const step = async (
      services: readonly Service[],
      expected: number,
      method: string,
      path: string,
      options: { apiKey: string; body?: unknown; headers?: Record<string, string> },
    ): Promise<Record<string, unknown> | undefined> => {
      const during = phase;
      count(during).sent += 1;
      try {
        const answer = await balancer.send(method, path, options);
        if (answer.status !== expected) {
          throw new Error(`${answer.status} ${answer.text.slice(0, 300)}`);
        }
        count(during).ok += 1;
        for (const service of ['gateway' as const, ...services]) {
          served.set(service, served.get(service)! + 1);
        }
        return answer.text ? (JSON.parse(answer.text) as Record<string, unknown>) : {};
      } catch (error) {
        count(during).failed += 1;
        if (failures.length < 20) failures.push(`[${during}] ${method} ${path}: ${String(error)}`);
        return undefined;
      }
    };
    const journey = async (buyer: (typeof buyers)[number]) => {
      const reader = { apiKey: distribution.apiKey };
      await step(['stores'], 200, 'GET', `/v1/marketfront/stores/${storeId}`, reader);
      await step(['stores'], 200, 'POST', '/v1/marketfront/stores/discover', {
        ...reader,
        body: { location: { latitude: 41.8789, longitude: -87.6359 }, fulfillmentType: 'PICKUP' },
      });
      await step(['catalog'], 200, 'GET', `/v1/marketfront/stores/${storeId}/catalogset`, reader);
      await step(['catalog'], 200, 'POST', '/v1/marketfront/carts/add', {
        ...reader,
        body: {
          item: { itemId: catalog.ids.soda, lineItemId: randomUUID(), quantity: 2 },
          cart: null,
          catalogSetId: catalog.ids.catalogSetId,
          storeId,
        },
      });
      const order = sodaOrder(catalog.ids, storeId, buyer.paymentId);
      const user = { 'x-end-user-id': buyer.endUser };
      await step(
        ['ordering', 'stores', 'catalog'],
        200,
        'POST',
        '/v1/marketfront/orders/validate',
        {
          ...reader,
          body: order,
          headers: user,
        },
      );
      const placed = await step(
        ['ordering', 'payments'],
        201,
        'POST',
        '/v1/marketfront/orders/place',
        { ...reader, body: order, headers: { ...user, 'idempotency-key': randomUUID() } },
      );
      await step(['payments'], 200, 'GET', '/v1/marketfront/payments/cards', {
        ...reader,
        headers: user,
      });
      if (!placed) return;
      const orderId = String(placed.orderId);
      await step(['ordering'], 200, 'POST', `/v1/commerce/orders/${orderId}/status`, {
        apiKey: commerce.apiKey,
        body: { status: 'confirmed' },
      });
      await step(['ordering'], 200, 'GET', `/v1/marketfront/orders/${orderId}`, reader);
    };
    let running = true;
    const load = Promise.all(
      buyers.map(async (buyer) => {
        while (running) await journey(buyer);
      }),
    );

    /** Resolves once `service` served `n` more requests; by count, not by time. */
    const untilServed = async (service: Service, n: number) => {
      const target = served.get(service)! + n;
      const deadline = Date.now() + 60_000;
      while (served.get(service)! < target) {
        if (Date.now() > deadline) throw new Error(`${service} served no more requests`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };

    const stops: {
      service: Service;
      code: number | null;
      signal: NodeJS.Signals | null;
      tookMs: number;
      handledBefore: number;
      problems: readonly Record<string, unknown>[];
    }[] = [];
    try {
      for (const service of SERVICES) await untilServed(service, SURVIVOR_REQUESTS);
      for (const service of SERVICES) {
        const [victim, survivor] = replicas.get(service)!;
        // The victim takes its share of the load: killing an idle replica would prove nothing.
        const handledBefore = await handledBy(victim!, service);
        phase = service;
        const signalledAt = Date.now();
        victim!.child.kill('SIGTERM');
        const { code, signal } = await victim!.exited;
        stops.push({
          service,
          code,
          signal,
          tookMs: Date.now() - signalledAt,
          handledBefore,
          problems: victim!.problems,
        });
        replicas.set(service, [survivor!]);
        await untilServed(service, SURVIVOR_REQUESTS);
        expect(survivor!.child.exitCode).toBeNull();
      }
    } finally {
      running = false;
      await load;
      await balancer.stop();
      console.info(
        [
          'phase       sent     ok failed',
          ...[...counts].map(
            ([name, { sent, ok, failed }]) =>
              `${name.padEnd(10)} ${String(sent).padStart(5)} ${String(ok).padStart(6)} ${String(failed).padStart(6)}`,
          ),
          ...stops.map(
            (stop) =>
              `${stop.service}: exit ${stop.code ?? stop.signal} after ${stop.tookMs} ms, ` +
              `had handled ${stop.handledBefore}`,
          ),
        ].join('\n'),
      );
    }

    expect(failures).toEqual([]);
    expect([...counts.keys()]).toEqual(['steady', ...SERVICES]);
    for (const [name, { sent, ok }] of counts) expect(ok, name).toBe(sent);
    for (const stop of stops) {
      expect(stop.handledBefore, stop.service).toBeGreaterThan(0);
      expect({ service: stop.service, code: stop.code }).toEqual({
        service: stop.service,
        code: 0,
      });
      const deadline = SHUTDOWN_TIMEOUT_MS + (stop.service === 'gateway' ? UNREADY_DELAY_MS : 0);
      expect(stop.tookMs, stop.service).toBeLessThan(deadline);
      // Every step finished by its mark (none cut off, none failed).
      const shutdownProblems = stop.problems.filter((line) => /^shutdown /.test(String(line.msg)));
      expect(shutdownProblems, stop.service).toEqual([]);
    }
  }, 240_000);
});

/** Requests a replica handled so far, from its own metrics. */
async function handledBy(replica: ObservedProcess, service: Service): Promise<number> {
  const metric =
    service === 'gateway'
      ? 'pcp_http_request_duration_seconds_count'
      : 'pcp_nats_handler_duration_seconds_count';
  const text = await (await fetch(`${replica.opsUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${metric}{`)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
