import { sql, type Kysely } from 'kysely';
import { headers as createHeaders, type JetStreamManager, type JsMsg } from 'nats';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  AdminError,
  AdminUsageError,
  adminUsage,
  parseAdminCall,
  type AdminCommands,
} from '../src/admin.js';
import { baseEnvSchema, loadConfig } from '../src/config.js';
import { deadLetterCommands } from '../src/dead-letter-admin.js';
import { createDatabase } from '../src/database.js';
import {
  ensureConsumer,
  startConsumer,
  type ConsumerLoop,
  type HandlerOutcome,
} from '../src/consumer.js';
import { ensureStream, streamName } from '../src/streams.js';
import { createMetrics } from '../src/metrics.js';
import { outboxCommands } from '../src/outbox-admin.js';
import {
  createOutboxRelay,
  createOutboxTable,
  insertOutboxEvent,
  type OutboxDatabase,
} from '../src/outbox.js';

/**
 * The kit's admin commands against the real servers, dispatched as `main.js admin` does
 * (parseAdminCall, then run with the service's connections): parked outbox rows handed back
 * to the relay, dead letters of a real consumer listed and republished to it.
 */

let env: TestEnvironment;
let jsm: JetStreamManager;
const databases: Kysely<OutboxDatabase>[] = [];
const loops: ConsumerLoop[] = [];
const commands: AdminCommands<OutboxDatabase> = { ...outboxCommands(), ...deadLetterCommands() };

beforeAll(async () => {
  env = await createTestEnvironment();
  jsm = await env.nc.jetstreamManager();
});

afterAll(async () => {
  for (const loop of loops) await loop.stop();
  for (const db of databases) await db.destroy();
  await env?.cleanup();
});

/** A schema of its own with an outbox table, as catalog and ordering have. */
async function newOutbox(): Promise<Kysely<OutboxDatabase>> {
  const schema = `admin_${randomUUID().slice(0, 8)}`;
  const db = createDatabase<OutboxDatabase>({
    url: env.databaseUrl,
    schema,
    applicationName: 'test',
  });
  databases.push(db);
  await db.schema.createSchema(schema).execute();
  await createOutboxTable(db as unknown as Kysely<unknown>);
  return db;
}

/** `main.js admin <argv>` in this process, with the test's connections. */
async function admin(db: Kysely<OutboxDatabase>, ...argv: string[]) {
  const { command, args } = parseAdminCall(commands, argv);
  return (await command.run({
    db,
    nc: env.nc,
    js: env.nc.jetstream(),
    jsm,
    logger: env.logger,
    config: loadConfig(baseEnvSchema, {}),
    prefix: env.prefix,
    args,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  })) as any;
}

let outboxDb: Kysely<OutboxDatabase>;
beforeAll(async () => {
  outboxDb = await newOutbox();
});

/** An event of aggregate `id` at `version`, written as a service writes one. */
const writeEvent = (db: Kysely<OutboxDatabase>, subject: string, id: string, version: number) =>
  insertOutboxEvent(db, {
    subject,
    type: 'test.v1.changed',
    aggregate: { type: 'account', id, version },
    data: { secret: `partner data of ${id}` },
  });

describe('outbox commands', () => {
  it('hand a parked row back to the relay, which publishes it once its cause is fixed', async () => {
    const db = await newOutbox();
    const subject = `${env.prefix}.late.changed`;
    const event = await writeEvent(db, subject, 'a', 1);
    const relay = createOutboxRelay({ db, js: env.nc.jetstream(), logger: env.logger });
    await relay.nudge();

    const listed = await admin(db, 'outbox-list');
    expect(listed).toMatchObject({
      parked: 1,
      pending: 0,
      events: [
        {
          eventId: event.id,
          subject,
          aggregate: { type: 'account', id: 'a', version: 1 },
          reason: 'no stream takes its subject',
        },
      ],
    });
    // Never the payload, which may hold partner data.
    expect(JSON.stringify(listed)).not.toContain('partner data');

    // The cause fixed: a stream takes the subject now.
    const stream = streamName(env.prefix, 'late');
    await ensureStream(jsm, { name: stream, subjects: [subject] });
    const { sequence } = listed.events[0];
    const released = await admin(db, 'outbox-republish', '--sequence', String(sequence));
    expect(released).toMatchObject({ released: [{ sequence, eventId: event.id }], stillParked: 0 });
    await relay.nudge();
    await relay.stop();
    const published = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    expect(published.header.get('Nats-Msg-Id')).toBe(event.id);
    expect(await admin(db, 'outbox-list')).toMatchObject({ parked: 0, pending: 0, events: [] });

    await expect(admin(db, 'outbox-republish', '--sequence', String(sequence))).rejects.toThrow(
      new AdminError(`no parked outbox row has sequence ${sequence}`),
    );
  });

  it('list a bounded page and republish every parked row with --all', async () => {
    const db = await newOutbox();
    for (let version = 1; version <= 25; version++) {
      await writeEvent(db, `${env.prefix}.nowhere`, 'b', version);
    }
    await db
      .updateTable('outbox')
      .set({ parked_at: sql<Date>`now()` })
      .execute();
    await writeEvent(db, `${env.prefix}.nowhere`, 'b', 26);

    const byDefault = await admin(db, 'outbox-list');
    expect(byDefault).toMatchObject({ parked: 25, pending: 1 });
    expect(byDefault.events).toHaveLength(20);
    const page = await admin(db, 'outbox-list', '--limit', '3');
    expect(page.events.map((e: { aggregate: { version: number } }) => e.aggregate.version)).toEqual(
      [1, 2, 3],
    );

    const all = await admin(db, 'outbox-republish', '--all');
    expect(all.released).toHaveLength(25);
    expect(all.stillParked).toBe(0);
    expect(await admin(db, 'outbox-list')).toMatchObject({ parked: 0, pending: 26 });
  });
});

/** A stream and a real consumer whose handler does what `outcome` says; what it handled. */
async function failingConsumer(name: string, outcome: () => HandlerOutcome | 'throw') {
  const stream = streamName(env.prefix, name);
  const subject = `${env.prefix}.${name}.changed`;
  await ensureStream(jsm, { name: stream, subjects: [subject] });
  const metrics = createMetrics('test');
  const handled: JsMsg[] = [];
  const declaration = {
    stream,
    durable: name,
    ackWaitMs: 2_000,
    timeoutMs: 1_000,
    backoffMs: [50],
    maxDeliveries: 2,
  };
  // The migration step's part: declare the consumer.
  await ensureConsumer(jsm, declaration);
  loops.push(
    await startConsumer({
      ...declaration,
      js: env.nc.jetstream(),
      jsm,
      prefix: env.prefix,
      concurrency: 4,
      logger: env.logger,
      metrics,
      handle: (msg) => {
        const decided = outcome();
        if (decided === 'throw') return Promise.reject(new Error('the database is down'));
        if (!decided) handled.push(msg);
        return Promise.resolve(decided);
      },
    }),
  );
  const deadLettered = async () =>
    (await metrics.consumerMessages.get()).values.find(
      (value) => value.labels.outcome === 'dead_lettered',
    )?.value ?? 0;
  return { subject, handled, deadLettered };
}

describe('dead-letter commands', () => {
  it('list a real consumer’s dead letter without its data, and republish it to the consumer', async () => {
    let failing = true;
    const { subject, handled, deadLettered } = await failingConsumer('letters', () =>
      failing ? 'throw' : undefined,
    );
    const headers = createHeaders();
    headers.set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    const eventId = randomUUID();
    // With a message id: JetStream drops another publish with it for two minutes.
    await env.nc.jetstream().publish(subject, JSON.stringify({ card: 'partner data' }), {
      headers,
      msgID: eventId,
    });
    await expect.poll(deadLettered, { timeout: 10_000 }).toBe(1);

    const listed = await admin(outboxDb, 'dead-letters-list', '--consumer', 'letters');
    expect(listed).toMatchObject({
      total: 1,
      nextFrom: null,
      deadLetters: [
        {
          consumer: 'letters',
          subject,
          stream: streamName(env.prefix, 'letters'),
          streamSequence: 1,
          deliveries: 2,
          reason: 'the database is down (after 2 deliveries)',
        },
      ],
    });
    expect(JSON.stringify(listed)).not.toContain('partner data');

    failing = false;
    const { sequence } = listed.deadLetters[0];
    const republished = await admin(
      outboxDb,
      'dead-letters-republish',
      '--sequence',
      `${sequence}`,
    );
    expect(republished).toMatchObject({
      remaining: 0,
      republished: [{ sequence, subject, duplicate: false, republishedTo: { sequence: 2 } }],
    });
    await expect.poll(() => handled.length, { timeout: 10_000 }).toBe(1);
    const [again] = handled;
    expect(again!.json()).toEqual({ card: 'partner data' });
    // Its own headers back, none of the dead letter's.
    expect(again!.headers?.get('traceparent')).toBe(headers.get('traceparent'));
    expect(again!.headers?.keys().filter((key) => /dead-letter/i.test(key))).toEqual([]);
    expect((await admin(outboxDb, 'dead-letters-list', '--consumer', 'letters')).total).toBe(0);

    await expect(
      admin(outboxDb, 'dead-letters-republish', '--sequence', `${sequence}`),
    ).rejects.toThrow(new AdminError(`no dead letter has sequence ${sequence}`));
  });

  it('page through a consumer’s dead letters and republish them in bounded batches', async () => {
    let poisoned = true;
    const { subject, handled, deadLettered } = await failingConsumer('poison', () =>
      poisoned ? { deadLetter: 'not an event' } : undefined,
    );
    for (let i = 0; i < 3; i++) await env.nc.jetstream().publish(subject, JSON.stringify({ i }));
    await expect.poll(deadLettered, { timeout: 10_000 }).toBe(3);

    const first = await admin(
      outboxDb,
      'dead-letters-list',
      '--consumer',
      'poison',
      '--limit',
      '2',
    );
    expect(first.total).toBe(3);
    expect(first.deadLetters).toHaveLength(2);
    expect(first.nextFrom).toBeGreaterThan(first.deadLetters[1].sequence);
    const rest = await admin(
      outboxDb,
      'dead-letters-list',
      '--consumer',
      'poison',
      '--from',
      `${first.nextFrom}`,
    );
    expect(rest.deadLetters).toHaveLength(1);
    expect(rest.nextFrom).toBeNull();
    // Every consumer's dead letters together (this file's other consumer's too).
    const every = await admin(outboxDb, 'dead-letters-list');
    expect(every.deadLetters.map((letter: { consumer: string }) => letter.consumer)).toContain(
      'poison',
    );

    poisoned = false;
    const batch = await admin(
      outboxDb,
      'dead-letters-republish',
      '--consumer',
      'poison',
      '--all',
      '--limit',
      '2',
    );
    expect(batch.republished).toHaveLength(2);
    expect(batch.remaining).toBe(1);
    const last = await admin(outboxDb, 'dead-letters-republish', '--consumer', 'poison', '--all');
    expect(last).toMatchObject({ remaining: 0, republished: [{ consumer: 'poison' }] });
    await expect
      .poll(() => handled.map((msg) => msg.json()), { timeout: 10_000 })
      .toEqual(expect.arrayContaining([{ i: 0 }, { i: 1 }, { i: 2 }]));
    expect(handled).toHaveLength(3);
  });

  it('refuse a dead letter named with another consumer', async () => {
    const { subject, deadLettered } = await failingConsumer('mismatch', () => ({
      deadLetter: 'not an event',
    }));
    await env.nc.jetstream().publish(subject, '{}');
    await expect.poll(deadLettered, { timeout: 10_000 }).toBe(1);
    const [letter] = (await admin(outboxDb, 'dead-letters-list', '--consumer', 'mismatch'))
      .deadLetters;
    await expect(
      admin(
        outboxDb,
        'dead-letters-republish',
        '--sequence',
        `${letter.sequence}`,
        '--consumer',
        'poison',
      ),
    ).rejects.toThrow(new AdminError(`no dead letter of poison has sequence ${letter.sequence}`));
  });
});

describe('the admin dispatcher', () => {
  it('refuses unknown commands and bad options before running anything', () => {
    const refusals: [string[], RegExp][] = [
      [[], /no command given/],
      [['reconcile'], /unknown command reconcile/],
      [['toString'], /unknown command toString/],
      [['outbox-list', '--verbose'], /^outbox-list: Unknown option '--verbose'$/],
      [['outbox-list', 'extra'], /^outbox-list: Unexpected argument 'extra'$/],
      [['outbox-list', '--limit'], /^outbox-list: Option '--limit <value>' argument missing$/],
      [['outbox-list', '--limit', '0'], /--limit must be a whole number from 1 to 200/],
      [['outbox-list', '--limit', '201'], /--limit must be a whole number from 1 to 200/],
      [['outbox-republish'], /give --sequence N or --all/],
      [['outbox-republish', '--sequence', 'x'], /--sequence must be a whole number/],
      [['outbox-republish', '--sequence', '1', '--all'], /give --sequence N or --all/],
      [['dead-letters-list', '--limit', '1000'], /--limit must be a whole number from 1 to 200/],
      [['dead-letters-list', '--consumer', 'a.>'], /not a durable consumer's name/],
      [['dead-letters-republish', '--all'], /give --sequence N, or --consumer DURABLE --all/],
      [
        ['dead-letters-republish', '--consumer', 'c', '--all', '--limit', '1001'],
        /--limit must be a whole number from 1 to 1000/,
      ],
    ];
    for (const [argv, message] of refusals) {
      expect(() => parseAdminCall(commands, argv), argv.join(' ')).toThrow(AdminUsageError);
      expect(() => parseAdminCall(commands, argv), argv.join(' ')).toThrow(message);
    }
  });

  it('lists every command with its options in the usage', () => {
    const usage = adminUsage('ordering', commands);
    expect(usage).toContain('node services/ordering/dist/main.js admin <command>');
    for (const line of [
      'outbox-list [--limit N]',
      'outbox-republish --sequence N | --all',
      'dead-letters-list [--consumer DURABLE] [--limit N] [--from SEQUENCE]',
      'dead-letters-republish --sequence N [--consumer DURABLE] | --consumer DURABLE --all [--limit N]',
    ]) {
      expect(usage).toContain(`\n  ${line}\n`);
    }
  });
});
