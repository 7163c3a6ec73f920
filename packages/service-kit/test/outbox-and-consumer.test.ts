import type { Kysely } from 'kysely';
import { AckPolicy, type JsMsg } from 'nats';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '../../../test-support/environment.js';
import { createDatabase } from '../src/database.js';
import { ensureEventsStream, ensureStream, startConsumer, streamName } from '../src/jetstream.js';
import {
  createOutboxRelay,
  createOutboxTable,
  insertOutboxEvent,
  newEvent,
  type OutboxDatabase,
} from '../src/outbox.js';

let env: TestEnvironment;
let db: Kysely<OutboxDatabase>;

beforeAll(async () => {
  env = await createTestEnvironment();
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
