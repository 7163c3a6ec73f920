import {
  bytesReply,
  defineSubject,
  replyLengthHeader,
  replyPartsHeader,
  replyStatusHeader,
  type SubjectDefinition,
} from '@pcp/contracts';
import { headers as natsHeaders, type NatsConnection } from 'nats';
import { randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { z } from 'zod';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { createBusClient, type BusClient } from '../src/bus-client.js';
import { createSubjectService, handle, handleBytes, serveSubjects } from '../src/subject-server.js';
import type { RequestContext } from '../src/context.js';
import { capturingLogger } from '@pcp/testing/capturing-logger';

const contextEcho = defineSubject(
  'ordering',
  'v1.test-context-echo',
  z.object({ bytes: z.number().int().min(0) }),
  z.object({ context: z.record(z.string(), z.unknown()), padding: z.string() }),
);
const nothing = defineSubject('ordering', 'v1.test-nothing', z.object({}), z.object({}));
const nothingBytes = defineSubject('ordering', 'v1.test-nothing-bytes', z.object({}), bytesReply);
const parted = defineSubject('ordering', 'v1.test-parted', z.object({}), bytesReply);

let env: TestEnvironment;
let client: BusClient;
const served = capturingLogger();

const ctx = (extra: Partial<RequestContext> = {}): RequestContext => ({
  requestId: randomUUID(),
  ...extra,
});

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
      handle(contextEcho, async ({ bytes }, context) => ({
        context: { ...context },
        padding: 'x'.repeat(bytes),
      })),
      // Handlers that forget to return: typed away, as a bug would be.
      handle(nothing, async () => undefined as unknown as Record<string, never>),
      handleBytes(nothingBytes, async () => undefined as unknown as Uint8Array),
    ],
  );
  client = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 2_000, logger: env.logger });
});

afterAll(async () => {
  await env?.cleanup();
});

describe('a reply in parts', () => {
  /** A responder speaking the parts protocol by hand, to break it on purpose. */
  async function rawResponder(prefix: string, send: (reply: string, nc: NatsConnection) => void) {
    const subject = `${prefix}.${parted.name}`;
    const sub = env.nc.subscribe(subject, {
      callback: (_error, msg) => send(msg.reply!, env.nc),
    });
    await env.nc.flush();
    return sub;
  }

  function firstPart(parts: number, length: number) {
    const h = natsHeaders();
    h.set(replyStatusHeader, 'ok');
    h.set(replyPartsHeader, String(parts));
    h.set(replyLengthHeader, String(length));
    return h;
  }

  it('fails with a timeout, not a truncated body, when a part never comes', async () => {
    const prefix = `${env.prefix}_lost`;
    const part = new Uint8Array(20_000).fill(1);
    const sub = await rawResponder(prefix, (reply, nc) => {
      nc.publish(reply, part, { headers: firstPart(3, 60_000) });
      nc.publish(reply, part); // the third never comes
    });
    const lossy = createBusClient(env.nc, { prefix, timeoutMs: 500, logger: env.logger });
    await expectAppError(lossy.requestRaw(parted, {}, ctx()), 'UPSTREAM_TIMEOUT');
    sub.unsubscribe();
  });

  it('fails as INTERNAL when the parts do not add up to the announced length', async () => {
    const prefix = `${env.prefix}_short`;
    const part = new Uint8Array(20_000).fill(1);
    const sub = await rawResponder(prefix, (reply, nc) => {
      nc.publish(reply, part, { headers: firstPart(2, 50_000) });
      nc.publish(reply, part);
    });
    const checking = createBusClient(env.nc, { prefix, timeoutMs: 2_000, logger: env.logger });
    await expectAppError(checking.requestRaw(parted, {}, ctx()), 'INTERNAL');
    sub.unsubscribe();
  });

  it('waits per part, not for the whole reply: a slow reply that keeps coming arrives', async () => {
    const prefix = `${env.prefix}_slow`;
    const part = new Uint8Array(20_000).fill(2);
    const sub = await rawResponder(prefix, (reply, nc) => {
      nc.publish(reply, part, { headers: firstPart(4, 80_000) });
      // Each part within the 400 ms wait, the whole past it.
      for (let n = 1; n < 4; n++) setTimeout(() => nc.publish(reply, part), n * 250);
    });
    const patient = createBusClient(env.nc, { prefix, timeoutMs: 400, logger: env.logger });
    const reply = await patient.requestRaw(parted, {}, ctx());
    expect(reply.length).toBe(80_000);
    sub.unsubscribe();
  });
});

describe('dispatch never rejects', () => {
  it.each([
    ['a JSON handler', nothing],
    ['a bytes handler', nothingBytes],
  ] as const)(
    'answers INTERNAL when %s returns nothing, and logs the subject',
    async (_kind, subject) => {
      const definition = subject as SubjectDefinition<z.ZodType, z.ZodType>;
      await expectAppError(client.requestRaw(definition, {}, ctx()), 'INTERNAL');
      expect(served.lines).toContainEqual(
        expect.objectContaining({
          msg: 'handler failed',
          subject: `${env.prefix}.${subject.name}`,
          err: expect.objectContaining({ message: 'the handler returned nothing' }),
        }),
      );
    },
  );

  it('answers INTERNAL to a header block nats.js cannot decode, and serves the next request', async () => {
    const inbox = `${env.prefix}.raw-inbox`;
    const replies: { status: string | undefined; body: string }[] = [];
    const sub = env.nc.subscribe(inbox, {
      callback: (_error, msg) =>
        replies.push({
          status: msg.headers?.get(replyStatusHeader),
          body: new TextDecoder().decode(msg.data),
        }),
    });
    await env.nc.flush();
    // A space is not allowed in a header name: nats.js throws when the headers are read.
    const headerBlock = 'NATS/1.0\r\nBad Key: value\r\n\r\n';
    const payload = '{}';
    const total = Buffer.byteLength(headerBlock) + Buffer.byteLength(payload);
    const url = new URL(inject('servers').natsUrl.replace(/^nats:/, 'http:'));
    const socket = new Socket();
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(Number(url.port), url.hostname, resolve);
    });
    socket.write('CONNECT {"verbose":false,"headers":true,"no_responders":true}\r\n');
    socket.write(
      `HPUB ${env.prefix}.${nothing.name} ${inbox} ${Buffer.byteLength(headerBlock)} ${total}\r\n${headerBlock}${payload}\r\n`,
    );
    socket.write('PING\r\n');
    await expect.poll(() => replies.length).toBe(1);
    socket.destroy();
    sub.unsubscribe();
    expect(replies[0]!.status).toBe('error');
    expect(JSON.parse(replies[0]!.body)).toMatchObject({ errorCode: 'INTERNAL' });
    // The service is still there.
    const reply = await client.request(contextEcho, { bytes: 1 }, ctx());
    expect(reply.padding).toBe('x');
  });
});

describe('readiness', () => {
  it('reports a service whose endpoint subscription closed as no longer serving', async () => {
    const prefix = `${env.prefix}_unready`;
    const logged = capturingLogger();
    const service = createSubjectService(
      { nc: env.nc, logger: logged.logger, subjectPrefix: prefix, requestTimeoutMs: 2_000 },
      { name: 'ordering', version: '0.0.1' },
      [handle(nothing, async () => ({}))],
    );
    expect(service.serving()).toBe(false);
    await service.start();
    expect(service.serving()).toBe(true);
    // As if the server closed it (a permissions change, say): the subscription goes away.
    const subscriptions = (
      env.nc as unknown as {
        protocol: { subscriptions: { all(): { getSubject(): string; unsubscribe(): void }[] } };
      }
    ).protocol.subscriptions.all();
    const endpoint = subscriptions.find((sub) => sub.getSubject() === `${prefix}.${nothing.name}`);
    endpoint!.unsubscribe();
    await expect.poll(() => service.serving()).toBe(false);
    await expect
      .poll(() => logged.lines.map((line) => line.msg))
      .toContain('NATS service stopped; no longer serving its subjects');
    await service.stop();
  });

  it('reports a service stopped on purpose as not serving, without an error', async () => {
    const logged = capturingLogger();
    const service = createSubjectService(
      {
        nc: env.nc,
        logger: logged.logger,
        subjectPrefix: `${env.prefix}_stopped`,
        requestTimeoutMs: 2_000,
      },
      { name: 'ordering', version: '0.0.1' },
      [],
    );
    await service.start();
    await service.stop();
    expect(service.serving()).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(logged.lines.filter((line) => line.level === 50)).toEqual([]);
  });
});
