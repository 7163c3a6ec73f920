import { defineSubject } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import { AckPolicy, type JsMsg } from 'nats';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTestEnvironment, type TestEnvironment } from '../../../test-support/environment.js';
import { expectAppError } from '../../../test-support/fixtures.js';
import { AppError } from '../src/app-error.js';
import { createBusClient, createSubjectService, handleStream, type BusClient } from '../src/bus.js';
import { createDatabase } from '../src/database.js';
import { ensureEventsStream, ensureStream, startConsumer, streamName } from '../src/jetstream.js';
import {
  createOutboxRelay,
  createOutboxTable,
  insertOutboxEvent,
  newEvent,
  type OutboxDatabase,
} from '../src/outbox.js';

const blob = defineSubject(
  'catalog',
  'v1.test-blob',
  z.object({ bytes: z.number().int(), fail: z.boolean().optional() }),
  z.object({ size: z.number() }),
);

let env: TestEnvironment;
let client: BusClient;
let db: Kysely<OutboxDatabase>;
const bodies = new Map<number, Buffer>();

beforeAll(async () => {
  env = await createTestEnvironment();
  const deps = {
    nc: env.nc,
    logger: env.logger,
    subjectPrefix: env.prefix,
    requestTimeoutMs: 5_000,
  };
  await createSubjectService(deps, { name: 'catalog', version: '0.0.0' }, [
    handleStream(blob, async ({ bytes, fail }) => {
      if (fail) throw new AppError('CATALOGSET_NOT_FOUND', 'nothing here');
      const body = randomBytes(bytes);
      bodies.set(bytes, body);
      return { result: { size: body.length }, ...(bytes > 0 ? { body } : {}) };
    }),
  ]).start();
  client = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  // A schema of this file's own in its database.
  const schema = `outbox_test_${randomBytes(3).toString('hex')}`;
  db = createDatabase<OutboxDatabase>({ url: env.databaseUrl, schema, applicationName: 'test' });
  await db.schema.createSchema(schema).execute();
  await createOutboxTable(db as unknown as Kysely<unknown>);
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

describe('streamed replies', () => {
  it.each([0, 10, 1024 * 1024 - 1, 3 * 1024 * 1024 + 17])(
    'carries a body of %i bytes intact, past the max payload',
    async (bytes) => {
      const { result, body } = await client.requestStream(
        blob,
        { bytes },
        { requestId: randomUUID() },
      );
      expect(result.size).toBe(bytes);
      expect(body.equals(bodies.get(bytes) ?? Buffer.alloc(0))).toBe(true);
    },
  );

  it('carries a typed error and no body', async () => {
    await expectAppError(
      client.requestStream(blob, { bytes: 10, fail: true }, { requestId: randomUUID() }),
      'CATALOGSET_NOT_FOUND',
    );
  });

  it('answers a request larger than the NATS max payload with PAYLOAD_TOO_LARGE', async () => {
    const oversized = { bytes: 1, padding: 'x'.repeat(1_100_000) } as { bytes: number };
    await expectAppError(
      client.requestRaw(blob, oversized, { requestId: randomUUID() }),
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('is SERVICE_UNAVAILABLE when nobody serves the subject', async () => {
    const other = createBusClient(env.nc, {
      prefix: `${env.prefix}_nobody`,
      timeoutMs: 2_000,
      logger: env.logger,
    });
    await expectAppError(
      other.requestStream(blob, { bytes: 1 }, { requestId: randomUUID() }),
      'SERVICE_UNAVAILABLE',
    );
  });
});

describe('outbox relay', () => {
  it('publishes events written in a transaction, once, in order', async () => {
    const jsm = await env.nc.jetstreamManager();
    const stream = await ensureEventsStream(jsm, env.prefix);
    const subject = `${env.prefix}.events.test.v1.happened`;
    const events = [1, 2, 3].map((n) => newEvent('test.v1.happened', { n }));
    await db.transaction().execute(async (trx) => {
      for (const event of events) await insertOutboxEvent(trx, subject, event);
    });
    // A rolled-back change leaves no event behind.
    await db
      .transaction()
      .execute(async (trx) => {
        await insertOutboxEvent(trx, subject, newEvent('test.v1.happened', { n: 99 }));
        throw new Error('roll back');
      })
      .catch(() => undefined);

    const relay = createOutboxRelay({
      db,
      js: env.nc.jetstream(),
      logger: env.logger,
      intervalMs: 60_000,
    });
    await relay.nudge();
    await relay.nudge();
    const info = await jsm.streams.info(stream);
    expect(info.state.messages).toBe(3);
    const received: unknown[] = [];
    // An ordered consumer over the whole stream: it holds only this file's events.
    const consumer = await env.nc.jetstream().consumers.get(stream);
    const batch = await consumer.fetch({ max_messages: 3, expires: 2_000 });
    for await (const msg of batch) received.push(msg.json());
    expect(received).toEqual(events);
    const unpublished = await db
      .selectFrom('outbox')
      .select('event_id')
      .where('published_at', 'is', null)
      .execute();
    expect(unpublished).toEqual([]);

    // Publishing the same event id again (a relay that died before marking) is deduplicated.
    await env.nc.jetstream().publish(subject, JSON.stringify(events[0]), { msgID: events[0]!.id });
    expect((await jsm.streams.info(stream)).state.messages).toBe(3);
    await relay.stop();
  });
});

describe('consumer loop', () => {
  it('never handles more messages at once than its concurrency, and redelivers a nak', async () => {
    const jsm = await env.nc.jetstreamManager();
    const js = env.nc.jetstream();
    const stream = streamName(env.prefix, 'consumer_test');
    const subject = `${env.prefix}.consumer.test`;
    await ensureStream(jsm, { name: stream, subjects: [subject] });
    for (let i = 0; i < 8; i++) await js.publish(subject, JSON.stringify({ i }));

    let active = 0;
    let peak = 0;
    const handled = new Map<number, number>();
    const loop = await startConsumer({
      js,
      jsm,
      stream,
      durable: 'consumer-test',
      concurrency: 2,
      logger: env.logger,
      config: { ack_policy: AckPolicy.Explicit, ack_wait: 5_000_000_000 },
      handle: async (msg: JsMsg) => {
        active += 1;
        peak = Math.max(peak, active);
        const { i } = msg.json<{ i: number }>();
        handled.set(i, (handled.get(i) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 20));
        active -= 1;
        // The first delivery of message 3 fails transiently.
        if (i === 3 && handled.get(i) === 1) msg.nak(50);
        else msg.ack();
      },
    });
    await expect.poll(() => handled.size, { timeout: 10_000 }).toBe(8);
    await expect.poll(() => handled.get(3), { timeout: 10_000 }).toBe(2);
    await loop.stop();
    expect(peak).toBeLessThanOrEqual(2);
    expect(peak).toBeGreaterThanOrEqual(1);
  });
});
