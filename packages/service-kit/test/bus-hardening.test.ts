import {
  addCartItemInput,
  bytesReply,
  defineSubject,
  guid,
  type SubjectDefinition,
} from '@pcp/contracts';
import { connect, type NatsConnection } from 'nats';
import { randomBytes, randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { z } from 'zod';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { AppError } from '../src/app-error.js';
import { createBusClient, type BusClient } from '../src/bus-client.js';
import { handle, handleBytes, serveSubjects } from '../src/subject-server.js';
import type { RequestContext } from '../src/context.js';
import { capturingLogger } from '@pcp/testing/capturing-logger';

const lineSelection = z.object({
  lines: z.array(z.object({ itemId: guid, quantity: z.number().int() })).max(1_000),
});
const manyProblems = defineSubject(
  'ordering',
  'v1.test-many-problems',
  lineSelection,
  z.object({}),
);
const throwsAnything = defineSubject(
  'ordering',
  'v1.test-throws',
  z.object({ kind: z.enum(['undefined', 'string', 'null', 'bigint-result']) }),
  z.object({}),
);
const large = defineSubject(
  'ordering',
  'v1.test-large',
  z.object({ bytes: z.number().int().min(0) }),
  z.object({ text: z.string() }),
);
const largeBytes = defineSubject(
  'ordering',
  'v1.test-large-bytes',
  z.object({ bytes: z.number().int().min(0) }),
  bytesReply,
);
const echoText = defineSubject(
  'ordering',
  'v1.test-echo-text',
  z.object({ id: guid, note: z.string(), tags: z.record(z.string(), z.string()).optional() }),
  z.object({ id: z.string(), note: z.string() }),
);
const cartAdd = defineSubject('ordering', 'v1.test-cart-add', addCartItemInput, z.object({}));
const held = defineSubject('ordering', 'v1.test-held', z.object({}), z.object({ ok: z.boolean() }));
const largeContext = defineSubject(
  'ordering',
  'v1.test-large-context',
  z.object({ bytes: z.number().int().min(0) }),
  z.object({ text: z.string() }),
);
const notBytes = defineSubject(
  'ordering',
  'v1.test-not-bytes',
  z.object({ kind: z.enum(['null', 'string']) }),
  bytesReply,
);
const notJson = defineSubject('ordering', 'v1.test-not-json', z.object({}), z.object({}));
const garbled = defineSubject('ordering', 'v1.test-garbled', z.object({}), bytesReply);

let env: TestEnvironment;
let client: BusClient;
const served = capturingLogger();
const blobs = new Map<number, Buffer>();
const contexts = new Map<string, RequestContext>();
let releaseHeld: () => void = () => undefined;

const ctx = () => ({ requestId: randomUUID() });

beforeAll(async () => {
  env = await createTestEnvironment();
  await serveSubjects(
    env.nc,
    {
      service: 'ordering',
      version: '0.0.1',
      prefix: env.prefix,
      timeoutMs: 5_000,
      logger: served.logger,
    },
    [
      handle(manyProblems, async ({ lines }) => {
        throw new AppError('CART_INVALID', `The cart has ${lines.length * 12} problems`, {
          errors: lines.flatMap((_, index) =>
            Array.from({ length: 12 }, (_unused, n) => ({
              code: 'ITEM_UNAVAILABLE',
              message: `problem ${n}`,
              pointer: `/lines/${index}`,
            })),
          ),
        });
      }),
      handle(throwsAnything, async ({ kind }) => {
        switch (kind) {
          case 'undefined':
            // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test
            throw undefined;
          case 'string':
            // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test
            throw 'a bare string';
          case 'null':
            // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test
            throw null;
          case 'bigint-result':
            // JSON.stringify throws on a BigInt: the reply itself cannot be built.
            return { size: 10n } as unknown as Record<string, never>;
        }
      }),
      handle(large, async ({ bytes }) => ({ text: 'x'.repeat(bytes) })),
      handleBytes(largeBytes, async ({ bytes }) => {
        const blob = randomBytes(bytes);
        blobs.set(bytes, blob);
        return blob;
      }),
      handle(echoText, async ({ id, note }) => ({ id, note })),
      handle(cartAdd, async () => ({})),
      handle(largeContext, async ({ bytes }, context) => {
        contexts.set(context.requestId, context);
        return { text: 'x'.repeat(bytes) };
      }),
      // Results that cannot be sent, typed away as a bug would be.
      handleBytes(notBytes, async ({ kind }) =>
        kind === 'null' ? (null as unknown as Uint8Array) : (kind as unknown as Uint8Array),
      ),
      handle(notJson, async () => (() => 'a function') as unknown as Record<string, never>),
    ],
  );
  client = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
});

afterAll(async () => {
  releaseHeld();
  await env?.cleanup();
});

describe('errors[] is bounded in the bus itself', () => {
  it('sends at most 100 element errors and says how many more there were', async () => {
    const lines = Array.from({ length: 1_000 }, () => ({ itemId: randomUUID(), quantity: 1 }));
    const error = await expectAppError(
      client.request(manyProblems, { lines }, ctx()),
      'CART_INVALID',
    );
    expect(error.errors).toHaveLength(100);
    expect(error.errorsOmitted).toBe(11_900);
    expect(error.message).toBe('The cart has 12000 problems');
  });

  it('caps the validation problems of a hostile body (12,000 zod issues) the same way', async () => {
    // 1,000 empty lines, each missing itemId and quantity.
    const body = Buffer.from(JSON.stringify({ lines: Array.from({ length: 1_000 }, () => ({})) }));
    const error = await expectAppError(
      client.requestRaw(manyProblems, body, ctx()),
      'REQUEST_INVALID',
    );
    expect(error.errors).toHaveLength(100);
    expect(error.errorsOmitted).toBe(1_900);
    expect(error.message).toBe('The request has 2000 invalid fields');
  });
});

describe('validation cost is bounded by the size of the input', () => {
  it('reports only the first problem of a large invalid body (a million zod issues otherwise)', async () => {
    // 1 MB of empty modifier lines: fully validated, each would report 3 missing fields.
    const modifierGroups = Array.from({ length: 320 }, () => ({
      modifierGroupId: randomUUID(),
      lineItems: Array.from({ length: 1_000 }, () => ({})),
    }));
    const body = Buffer.from(
      JSON.stringify({
        item: { itemId: randomUUID(), lineItemId: randomUUID(), quantity: 1, modifierGroups },
      }),
    );
    expect(body.length).toBeGreaterThan(900_000);
    const error = await expectAppError(client.requestRaw(cartAdd, body, ctx()), 'REQUEST_INVALID');
    expect(error.message).toBe('The request is invalid; the first problem found is listed');
    expect(error.errors).toEqual([
      expect.objectContaining({ pointer: '/item/modifierGroups/0/lineItems/0/itemId' }),
    ]);
  });
});

describe('no request can make a service fail', () => {
  it.each(['undefined', 'string', 'null', 'bigint-result'] as const)(
    'answers a handler that throws %s (or returns what cannot be sent) with INTERNAL',
    async (kind) => {
      const error = await expectAppError(
        client.request(throwsAnything, { kind }, ctx()),
        'INTERNAL',
      );
      expect(error.message).toBe('Internal error');
    },
  );

  it('answers INTERNAL at once when a reply cannot be sent, and logs why', async () => {
    // A connection told the server's max payload is 8 MB sends a 3 MB reply as one message:
    // the client library refuses to publish it, as it would any reply it cannot send.
    const liar = await connect({ servers: inject('servers').natsUrl, name: 'bus-test-liar' });
    const misinformed = new Proxy(liar, {
      get(target, property) {
        if (property === 'info') return { ...target.info, max_payload: 8 * 1024 * 1024 };
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const prefix = `${env.prefix}_liar`;
    const logged = capturingLogger();
    await serveSubjects(
      misinformed,
      { service: 'ordering', version: '0.0.1', prefix, timeoutMs: 5_000, logger: logged.logger },
      [handle(large, async ({ bytes }) => ({ text: 'x'.repeat(bytes) }))],
    );
    await liar.flush();
    try {
      const liarClient = createBusClient(env.nc, { prefix, timeoutMs: 5_000, logger: env.logger });
      // INTERNAL, not UPSTREAM_TIMEOUT: the failure was answered, not left to time out.
      await expectAppError(liarClient.request(large, { bytes: 3_000_000 }, ctx()), 'INTERNAL');
      expect(logged.lines.map((line) => line.msg)).toContain('reply could not be sent');
      // And it still serves the next request.
      await expect(liarClient.request(large, { bytes: 10 }, ctx())).resolves.toEqual({
        text: 'x'.repeat(10),
      });
    } finally {
      await liar.close();
    }
  });

  /**
   * A request held in its handler on a service with a connection of its own, so the test can
   * drain or close that connection while the handler runs.
   */
  async function heldOnOwnConnection(name: string, timeoutMs: number) {
    const connection: NatsConnection = await connect({
      servers: inject('servers').natsUrl,
      name: `bus-test-${name}`,
    });
    const prefix = `${env.prefix}_${name}`;
    const logged = capturingLogger();
    let handlerStarted!: () => void;
    const started = new Promise<void>((resolve) => (handlerStarted = resolve));
    const released = new Promise<void>((resolve) => (releaseHeld = resolve));
    await serveSubjects(
      connection,
      { service: 'ordering', version: '0.0.1', prefix, timeoutMs: 5_000, logger: logged.logger },
      [
        handle(held, async () => {
          handlerStarted();
          await released;
          return { ok: true };
        }),
      ],
    );
    await connection.flush();
    const heldClient = createBusClient(env.nc, { prefix, timeoutMs, logger: env.logger });
    const request = heldClient.request(held, {}, ctx());
    await started;
    return { connection, logged, request, release: () => releaseHeld() };
  }

  it('survives its connection closing while a handler runs', async () => {
    const { connection, logged, request, release } = await heldOnOwnConnection('closing', 1_000);
    await connection.close();
    release();
    await expectAppError(request, 'UPSTREAM_TIMEOUT');
    // The failed send was caught and logged; an unhandled rejection would fail this file.
    await expect
      .poll(() => logged.lines.map((line) => line.msg))
      .toContain('reply could not be sent');
  });

  it('still answers a request whose handler finishes while its connection drains', async () => {
    const { connection, logged, request, release } = await heldOnOwnConnection('draining', 2_000);
    // SIGTERM's drain: subscriptions end first, replies still go out until the close.
    const drained = connection.drain();
    expect(connection.isDraining()).toBe(true);
    release();
    await expect(request).resolves.toEqual({ ok: true });
    await drained;
    expect(logged.lines.map((line) => line.msg)).not.toContain('reply could not be sent');
  });

  it('logs a reply whose handler finishes after its connection drained, and rejects nothing', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { connection, logged, request, release } = await heldOnOwnConnection('drained', 1_000);
      // SIGTERM's drain ends before the handler does: its reply has no connection left.
      await connection.drain();
      release();
      await expectAppError(request, 'UPSTREAM_TIMEOUT');
      await expect
        .poll(() => logged.lines.map((line) => line.msg))
        .toContain('reply could not be sent');
      expect(unhandled).toEqual([]);
    } finally {
      releaseHeld();
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it.each([
    ['a bytes handler returns null', notBytes, { kind: 'null' }, 'the handler returned no bytes'],
    [
      'a bytes handler returns a string',
      notBytes,
      { kind: 'string' },
      'the handler returned no bytes',
    ],
    [
      'a JSON handler returns a function',
      notJson,
      {},
      'the handler returned nothing JSON can carry',
    ],
  ] as const)(
    'answers INTERNAL when %s, and logs the subject',
    async (_case, subject, input, message) => {
      const definition = subject as SubjectDefinition<z.ZodType, z.ZodType>;
      await expectAppError(client.requestRaw(definition, input, ctx()), 'INTERNAL');
      expect(served.lines).toContainEqual(
        expect.objectContaining({
          msg: 'handler failed',
          subject: `${env.prefix}.${subject.name}`,
          err: expect.objectContaining({ message }),
        }),
      );
    },
  );
});

describe('replies larger than one NATS message', () => {
  it.each([0, 1_000, 1024 * 1024, 3 * 1024 * 1024 + 17])(
    'carry a %i-character JSON result intact',
    async (bytes) => {
      const reply = await client.request(large, { bytes }, ctx());
      expect(reply.text.length).toBe(bytes);
    },
  );

  it.each([1, 1024 * 1024 - 1, 5 * 1024 * 1024 + 3])('carry %i bytes intact', async (bytes) => {
    const reply = await client.requestRaw(largeBytes, { bytes }, ctx());
    expect(reply.equals(blobs.get(bytes)!)).toBe(true);
  });

  it('refuse a request larger than the NATS max payload with PAYLOAD_TOO_LARGE', async () => {
    const oversized = { bytes: 1, padding: 'x'.repeat(1_100_000) } as { bytes: number };
    await expectAppError(client.requestRaw(large, oversized, ctx()), 'PAYLOAD_TOO_LARGE');
  });

  it('carry the caller’s whole context to the handler, trace headers included', async () => {
    const context: RequestContext = {
      requestId: randomUUID(),
      partnerId: randomUUID(),
      partnerKind: 'commerce',
      endUserId: 'user-9',
      paymentTypes: ['CARD', 'PAY_AT_STORE'],
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: 'pcp=1',
    };
    const reply = await client.request(largeContext, { bytes: 2_500_000 }, context);
    expect(reply.text.length).toBe(2_500_000);
    expect(contexts.get(context.requestId)).toEqual(context);
  });

  it('fail a reply whose header block cannot be decoded as INTERNAL, and keep reading', async () => {
    const prefix = `${env.prefix}_garbled`;
    const url = new URL(inject('servers').natsUrl.replace(/^nats:/, 'http:'));
    const socket = new Socket();
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(Number(url.port), url.hostname, resolve);
    });
    socket.write('CONNECT {"verbose":false,"headers":true}\r\n');
    // A space is not allowed in a header name: nats.js throws when the headers are read.
    const headerBlock = 'NATS/1.0\r\nBad Key: value\r\n\r\n';
    const responder = env.nc.subscribe(`${prefix}.${garbled.name}`, {
      callback: (_error, msg) =>
        socket.write(
          `HPUB ${msg.reply} ${headerBlock.length} ${headerBlock.length}\r\n${headerBlock}\r\n`,
        ),
    });
    await env.nc.flush();
    // A connection of its own: were its reader to stop, only this test would lose it.
    const own = await connect({ servers: inject('servers').natsUrl, name: 'bus-test-garbled' });
    try {
      const logged = capturingLogger();
      const garbledClient = createBusClient(own, {
        prefix,
        timeoutMs: 2_000,
        logger: logged.logger,
      });
      // INTERNAL at once, not UPSTREAM_TIMEOUT: the reply came, it was unreadable.
      await expectAppError(garbledClient.requestRaw(garbled, {}, ctx()), 'INTERNAL');
      expect(logged.lines.map((line) => line.msg)).toContain('reply could not be read');
      const next = createBusClient(own, {
        prefix: env.prefix,
        timeoutMs: 2_000,
        logger: env.logger,
      });
      await expect(next.request(large, { bytes: 10 }, ctx())).resolves.toEqual({
        text: 'x'.repeat(10),
      });
    } finally {
      responder.unsubscribe();
      socket.destroy();
      await own.close();
    }
  });

  it('refuse a reply larger than the caller accepts as INTERNAL', async () => {
    const small = createBusClient(env.nc, {
      prefix: env.prefix,
      timeoutMs: 5_000,
      logger: env.logger,
      maxReplyBytes: 2 * 1024 * 1024,
    });
    await expectAppError(
      small.requestRaw(largeBytes, { bytes: 5 * 1024 * 1024 }, ctx()),
      'INTERNAL',
    );
  });
});

describe('rules every contract shares', () => {
  it('refuses a NUL character in any string, value or key, at its pointer', async () => {
    const error = await expectAppError(
      client.request(
        echoText,
        { id: randomUUID(), note: 'fine', tags: { ok: 'a\u0000b', 'bad\u0000key': 'c' } },
        ctx(),
      ),
      'REQUEST_INVALID',
    );
    expect(error.errors).toEqual([
      expect.objectContaining({ code: 'INVALID_CHARACTER', pointer: '/tags/ok' }),
      expect.objectContaining({ code: 'INVALID_CHARACTER', pointer: '/tags/bad\u0000key' }),
    ]);
  });

  it('compares GUIDs case-insensitively: a handler sees them in lower case', async () => {
    const id = randomUUID();
    const reply = await client.request(echoText, { id: id.toUpperCase(), note: 'n' }, ctx());
    expect(reply.id).toBe(id);
  });
});
