import { defineSubject, healthSubject } from '@pcp/contracts';
import { connect, type NatsConnection, type ServiceIdentity } from 'nats';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { capturingLogger } from '@pcp/testing/capturing-logger';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { z } from 'zod';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { AppError } from '../src/app-error.js';
import { createBusClient, type BusClient } from '../src/bus-client.js';
import {
  createSubjectService,
  handle,
  serveSubjects,
  type ServedService,
} from '../src/subject-server.js';
import type { RequestContext } from '../src/context.js';
import { createMetrics } from '../src/metrics.js';

const echo = defineSubject(
  'stores',
  'v1.test-echo',
  z.object({ n: z.number() }),
  z.object({ n: z.number(), requestId: z.string(), partnerId: z.string().optional() }),
);
const failApp = defineSubject('stores', 'v1.test-fail-app', z.object({}), z.object({}));
const failPlain = defineSubject('stores', 'v1.test-fail-plain', z.object({}), z.object({}));
const slow = defineSubject('stores', 'v1.test-slow', z.object({}), z.object({ done: z.boolean() }));
const badReply = defineSubject(
  'stores',
  'v1.test-bad-reply',
  z.object({}),
  z.object({ n: z.number() }),
);

/** A promise with its resolve function, to hold a handler until the test lets it go. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

let env: TestEnvironment;
let served: ServedService;
let client: BusClient;
const clientMetrics = createMetrics('bus-test-client');
const seen: RequestContext[] = [];
let slowGate = gate();

const ctx = (extra: Partial<RequestContext> = {}): RequestContext => ({
  requestId: randomUUID(),
  ...extra,
});

beforeAll(async () => {
  env = await createTestEnvironment();
  served = await serveSubjects(
    env.nc,
    {
      service: 'stores',
      version: '0.0.1',
      prefix: env.prefix,
      timeoutMs: 2_000,
      logger: env.logger,
    },
    [
      handle(echo, async ({ n }, context) => {
        seen.push(context);
        return {
          n,
          requestId: context.requestId,
          ...(context.partnerId ? { partnerId: context.partnerId } : {}),
        };
      }),
      handle(failApp, async () => {
        throw new AppError('STORE_NOT_FOUND', 'No store with that id exists');
      }),
      handle(failPlain, async () => {
        throw new Error('password=hunter2 leaked from the database driver');
      }),
      handle(slow, async () => {
        await slowGate.promise;
        return { done: true };
      }),
      handle(badReply, async () => ({ n: 'not a number' }) as unknown as { n: number }),
    ],
  );
  client = createBusClient(env.nc, {
    prefix: env.prefix,
    timeoutMs: 2_000,
    logger: env.logger,
    metrics: clientMetrics,
  });
});

afterAll(async () => {
  slowGate.open();
  await served?.stop();
  await env?.cleanup();
});

describe('request/reply over NATS', () => {
  it('round-trips a request and carries the context headers to the handler', async () => {
    const partnerId = randomUUID();
    const context = ctx({ partnerId, partnerKind: 'commerce', endUserId: 'user-7' });
    const reply = await client.request(echo, { n: 42 }, context);
    expect(reply).toEqual({ n: 42, requestId: context.requestId, partnerId });
    const handlerContext = seen.find((entry) => entry.requestId === context.requestId);
    expect(handlerContext).toMatchObject({
      partnerId,
      partnerKind: 'commerce',
      endUserId: 'user-7',
    });
  });

  it('leaves absent context fields undefined', async () => {
    const context = ctx();
    const reply = await client.request(echo, { n: 1 }, context);
    expect(reply).toEqual({ n: 1, requestId: context.requestId });
    const handlerContext = seen.find((entry) => entry.requestId === context.requestId);
    expect(handlerContext?.partnerId).toBeUndefined();
    expect(handlerContext?.partnerKind).toBeUndefined();
    expect(handlerContext?.paymentTypes).toBeUndefined();
  });

  it('carries the partner’s payment types (none arrives as absent) and drops unknown ones', async () => {
    const types = async (paymentTypes: string[]) => {
      const context = ctx({ paymentTypes: paymentTypes as RequestContext['paymentTypes'] });
      await client.request(echo, { n: 2 }, context);
      return seen.find((entry) => entry.requestId === context.requestId)?.paymentTypes;
    };
    expect(await types(['CARD', 'PAY_AT_STORE'])).toEqual(['CARD', 'PAY_AT_STORE']);
    expect(await types([])).toBeUndefined();
    expect(await types(['CARD', 'BITCOIN'])).toEqual(['CARD']);
  });

  it('answers the service health subject', async () => {
    await expect(client.request(healthSubject('stores'), {}, ctx())).resolves.toEqual({
      service: 'stores',
      status: 'ok',
    });
  });

  it('answers an invalid payload with REQUEST_INVALID pointing at the field', async () => {
    const error = await expectAppError(
      client.request(echo, { n: 'seven' } as unknown as { n: number }, ctx()),
      'REQUEST_INVALID',
    );
    expect(error.errors).toEqual([
      expect.objectContaining({ code: 'INVALID_TYPE', pointer: '/n' }),
    ]);
    expect(error.info.status).toBe(400);

    const missing = await expectAppError(
      client.request(echo, {} as { n: number }, ctx()),
      'REQUEST_INVALID',
    );
    expect(missing.errors).toEqual([{ code: 'REQUIRED', message: 'Required', pointer: '/n' }]);
  });

  it('passes a handler’s AppError through with its code and detail', async () => {
    const error = await expectAppError(client.request(failApp, {}, ctx()), 'STORE_NOT_FOUND');
    expect(error.message).toBe('No store with that id exists');
    expect(error.info.status).toBe(404);
  });

  it('turns any other handler error into INTERNAL without leaking its message', async () => {
    const error = await expectAppError(client.request(failPlain, {}, ctx()), 'INTERNAL');
    expect(error.message).toBe('Internal error');
    expect(JSON.stringify(error.toServiceError())).not.toContain('hunter2');
  });

  it('answers SERVICE_UNAVAILABLE when nothing serves the subject', async () => {
    const { logger, lines } = capturingLogger('debug');
    const nobody = createBusClient(env.nc, {
      prefix: `${env.prefix}_nobody`,
      timeoutMs: 10_000,
      logger,
    });
    const error = await expectAppError(
      nobody.request(echo, { n: 1 }, ctx()),
      'SERVICE_UNAVAILABLE',
    );
    // Partners are not told which internal service failed; the log says which subject.
    expect(error.message).not.toContain('stores');
    expect(error.info.retryable).toBe(true);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'no service answers the subject',
        subject: 'stores.v1.test-echo',
        to: 'stores',
      }),
    ]);

    // A caller that expects it (a start waiting for another service) is not warned about.
    await expectAppError(
      nobody.request(echo, { n: 1 }, ctx(), { unansweredIsExpected: true }),
      'SERVICE_UNAVAILABLE',
    );
    expect(lines[1]).toMatchObject({ level: 20, subject: 'stores.v1.test-echo', to: 'stores' });
  });

  it('answers UPSTREAM_TIMEOUT when the handler is slower than the request timeout', async () => {
    slowGate = gate();
    const error = await expectAppError(
      client.request(slow, {}, ctx(), { timeoutMs: 100 }),
      'UPSTREAM_TIMEOUT',
    );
    expect(error.info.status).toBe(504);
    expect(error.message).not.toContain('stores');
    slowGate.open();
  });

  it('refuses a reply that violates the reply schema as INTERNAL', async () => {
    const error = await expectAppError(client.request(badReply, {}, ctx()), 'INTERNAL');
    expect(error.message).toBe('Internal error');
  });

  it('records request outcomes in the client metrics', async () => {
    await expectAppError(client.request(failApp, {}, ctx()), 'STORE_NOT_FOUND');
    const text = await clientMetrics.registry.getSingleMetricAsString(
      'pcp_nats_request_duration_seconds',
    );
    expect(text).toMatch(
      /_count\{[^}]*subject="stores\.v1\.test-fail-app"[^}]*outcome="STORE_NOT_FOUND"[^}]*\} [1-9]/,
    );
    expect(text).toMatch(
      /_count\{[^}]*subject="stores\.v1\.test-echo"[^}]*outcome="ok"[^}]*\} [1-9]/,
    );
  });
});

describe('serving', () => {
  let second: NatsConnection | undefined;

  afterAll(async () => {
    await second?.drain();
  });

  it('shares requests between instances in the same queue group', async () => {
    second = await connect({ servers: inject('servers').natsUrl, name: 'bus-test-second' });
    const prefix = `${env.prefix}_queue`;
    const counts: [number, number] = [0, 0];
    const instance = (index: 0 | 1) =>
      handle(echo, async ({ n }, context) => {
        counts[index] += 1;
        return { n, requestId: context.requestId };
      });
    const options = {
      service: 'stores' as const,
      version: '0.0.1',
      prefix,
      timeoutMs: 2_000,
      logger: env.logger,
    };
    const a = await serveSubjects(env.nc, options, [instance(0)]);
    const b = await serveSubjects(second, options, [instance(1)]);
    await second.flush();
    try {
      const queueClient = createBusClient(env.nc, { prefix, timeoutMs: 2_000, logger: env.logger });
      const replies = await Promise.all(
        Array.from({ length: 40 }, (_, n) => queueClient.request(echo, { n }, ctx())),
      );
      expect(replies.map((reply) => reply.n)).toEqual(Array.from({ length: 40 }, (_, n) => n));
      expect(counts[0] + counts[1]).toBe(40);
      expect(counts[0]).toBeGreaterThan(0);
      expect(counts[1]).toBeGreaterThan(0);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('registers with the NATS services API so $SRV.PING finds it by prefix', async () => {
    const responses = await env.nc.services.client().ping('stores');
    const found: ServiceIdentity[] = [];
    for await (const identity of responses) found.push(identity);
    const ours = found.filter((identity) => identity.metadata?.prefix === env.prefix);
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({ name: 'stores', version: '0.0.1' });
  });

  it('stop() waits for an in-flight request to be answered, then takes no more', async () => {
    const prefix = `${env.prefix}_stop`;
    const started = gate();
    const release = gate();
    let handlerFinished = false;
    const service = createSubjectService(
      { nc: env.nc, logger: env.logger, subjectPrefix: prefix, requestTimeoutMs: 2_000 },
      { name: 'stores', version: '0.0.1' },
      [
        handle(slow, async () => {
          started.open();
          await release.promise;
          handlerFinished = true;
          return { done: true };
        }),
      ],
    );
    await service.start();
    const stopClient = createBusClient(env.nc, { prefix, timeoutMs: 5_000, logger: env.logger });
    const inFlight = stopClient.request(slow, {}, ctx());
    await started.promise;

    let stopped = false;
    const stopping = service.stop().then(() => {
      stopped = true;
    });
    // The handler is still held, so stop() must still be waiting.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);

    release.open();
    await stopping;
    expect(handlerFinished).toBe(true);
    await expect(inFlight).resolves.toEqual({ done: true });
    await expectAppError(stopClient.request(slow, {}, ctx()), 'SERVICE_UNAVAILABLE');
  });
});
