import { Kysely, PostgresDialect, sql } from 'kysely';
import type { JetStreamManager } from 'nats';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createDatabase } from '../src/database.js';
import { ensureStream, streamName } from '../src/streams.js';
import { createMetrics } from '../src/metrics.js';
import {
  createOutboxRelay,
  createOutboxTable,
  eventIdOf,
  insertOutboxEvent,
  type OutboxDatabase,
} from '../src/outbox.js';

/** The outbox's table and an aggregate table whose row writers lock, as a service has. */
interface TestDatabase extends OutboxDatabase {
  accounts: { account_id: string; version: number };
}

let env: TestEnvironment;
let jsm: JetStreamManager;
const schemas: Kysely<TestDatabase>[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  jsm = await env.nc.jetstreamManager();
});

afterAll(async () => {
  for (const db of schemas) await db.destroy();
  await env?.cleanup();
});

/** A schema of its own (an outbox and its relay lock) in this file's database. */
async function newSchema(): Promise<{ db: Kysely<TestDatabase>; schema: string }> {
  const schema = `outbox_${randomUUID().slice(0, 8)}`;
  const db = createDatabase<TestDatabase>({
    url: env.databaseUrl,
    schema,
    applicationName: 'test',
  });
  schemas.push(db);
  await db.schema.createSchema(schema).execute();
  await createOutboxTable(db as unknown as Kysely<unknown>);
  await db.schema
    .createTable('accounts')
    .addColumn('account_id', 'text', (col) => col.primaryKey())
    .addColumn('version', 'bigint', (col) => col.notNull())
    .execute();
  return { db, schema };
}

/** A change to an account, as a service writes one: lock, bump the version, record the event. */
async function change(trx: Kysely<TestDatabase>, subject: string, accountId: string, note: string) {
  const row = await trx
    .insertInto('accounts')
    .values({ account_id: accountId, version: 1 })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ version: sql`accounts.version + 1` }))
    .returning('version')
    .executeTakeFirstOrThrow();
  return insertOutboxEvent(trx, {
    subject,
    type: 'test.v1.changed',
    aggregate: { type: 'account', id: accountId, version: row.version },
    data: { note },
  });
}

/** Every message of a stream, in stream order. */
async function streamContents(stream: string) {
  const info = await jsm.streams.info(stream);
  const messages: { subject: string; id: string | undefined; body: Record<string, unknown> }[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && seq > 0; seq++) {
    const msg = await jsm.streams.getMessage(stream, { seq });
    messages.push({
      subject: msg.subject,
      id: msg.header?.get('Nats-Msg-Id'),
      body: msg.json<Record<string, unknown>>(),
    });
  }
  return messages;
}

async function newStream(name: string) {
  const stream = streamName(env.prefix, name);
  const subject = `${env.prefix}.${name}.changed`;
  await ensureStream(jsm, { name: stream, subjects: [subject] });
  return { stream, subject };
}

describe('outbox relay', () => {
  it('publishes events written in a transaction, once, in order, with ids fixed by aggregate version', async () => {
    const { db } = await newSchema();
    // The test environment applied the JetStream topology.
    const stream = streamName(env.prefix, 'events');
    const subject = `${env.prefix}.events.test.v1.changed`;
    const written = await db
      .transaction()
      .execute(async (trx) => [
        await change(trx, subject, 'a', 'first'),
        await change(trx, subject, 'a', 'second'),
        await change(trx, subject, 'b', 'first'),
      ]);
    // A rolled-back change leaves no event behind.
    await db
      .transaction()
      .execute(async (trx) => {
        await change(trx, subject, 'c', 'never');
        throw new Error('roll back');
      })
      .catch(() => undefined);

    const relay = createOutboxRelay({ db, js: env.nc.jetstream(), logger: env.logger });
    await relay.nudge();
    await relay.nudge();
    // Each aggregate's events in order (aggregates go out side by side).
    const messages = await streamContents(stream);
    const ofAccount = (id: string) =>
      messages.filter(
        (m) =>
          m.id === eventIdOf({ type: 'account', id, version: 1 }) ||
          m.id === eventIdOf({ type: 'account', id, version: 2 }),
      );
    expect(ofAccount('a').map((m) => m.body)).toEqual([written[0], written[1]]);
    expect(ofAccount('b').map((m) => m.body)).toEqual([written[2]]);
    expect(messages.map((m) => m.id).sort()).toEqual(written.map((event) => event.id).sort());
    expect(written.map((event) => event.version)).toEqual([1, 2, 1]);
    expect(written[1]!.id).toBe(eventIdOf({ type: 'account', id: 'a', version: 2 }));
    const unpublished = await db
      .selectFrom('outbox')
      .select('event_id')
      .where('published_at', 'is', null)
      .execute();
    expect(unpublished).toEqual([]);

    // Publishing the same event again (a relay that died before marking) is deduplicated.
    const again = written[0]!;
    await env.nc.jetstream().publish(subject, JSON.stringify(again), { msgID: again.id });
    expect((await jsm.streams.info(stream)).state.messages).toBe(3);
    await relay.stop();
  });

  it('refuses a second event for one version of an aggregate', async () => {
    const { db } = await newSchema();
    const subject = `${env.prefix}.events.test.v1.changed`;
    const aggregate = { type: 'account', id: 'x', version: 1 };
    await insertOutboxEvent(db, { subject, type: 't', aggregate, data: {} });
    await expect(
      insertOutboxEvent(db, { subject, type: 't', aggregate, data: {} }),
    ).rejects.toThrow(/outbox_aggregate_version_key|outbox_event_id_key/);
  });

  it('publishes in commit order when a transaction that started earlier waited on the lock', async () => {
    const { db } = await newSchema();
    const { stream, subject } = await newStream('reorder');
    await change(db, subject, 'acct', 'opened');

    // The early transaction starts first (its now() is earlier), then waits for the row the
    // late one holds; the late one commits first, so its event is the earlier version.
    let releaseLate!: () => void;
    const lateMayCommit = new Promise<void>((resolve) => (releaseLate = resolve));
    let lateLocked!: () => void;
    const lateHoldsLock = new Promise<void>((resolve) => (lateLocked = resolve));
    const early = db.transaction().execute(async (trx) => {
      await sql`select now()`.execute(trx);
      await lateHoldsLock;
      return change(trx, subject, 'acct', 'early-started');
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const late = db.transaction().execute(async (trx) => {
      const event = await change(trx, subject, 'acct', 'late-started');
      lateLocked();
      await lateMayCommit;
      return event;
    });
    await lateHoldsLock;
    await new Promise((resolve) => setTimeout(resolve, 100)); // the early one is now waiting
    releaseLate();
    const [earlyEvent, lateEvent] = await Promise.all([early, late]);
    expect(lateEvent.version).toBe(2);
    expect(earlyEvent.version).toBe(3);
    // The transaction start times say the opposite order: sorting by them would be wrong.
    const rows = await db
      .selectFrom('outbox')
      .select(['aggregate_version', 'created_at', 'sequence'])
      .orderBy('aggregate_version')
      .execute();
    expect(rows[2]!.created_at.getTime()).toBeLessThan(rows[1]!.created_at.getTime());
    expect(rows[2]!.sequence).toBeGreaterThan(rows[1]!.sequence);

    const relay = createOutboxRelay({ db, js: env.nc.jetstream(), logger: env.logger });
    await relay.nudge();
    await relay.stop();
    const versions = (await streamContents(stream)).map((m) => m.body.version);
    expect(versions).toEqual([1, 2, 3]);
  });

  it('keeps each aggregate in order with two relay replicas publishing at once', async () => {
    const { db, schema } = await newSchema();
    const { stream, subject } = await newStream('replicas');
    const aggregates = 8;
    const versions = 40;
    // Written aggregate by aggregate in turns, so every batch holds many aggregates.
    for (let version = 1; version <= versions; version++) {
      await db.transaction().execute(async (trx) => {
        for (let a = 0; a < aggregates; a++) await change(trx, subject, `acct-${a}`, `v${version}`);
      });
    }
    // A second replica: its own pool on the same schema.
    const replicaDb = createDatabase<TestDatabase>({
      url: env.databaseUrl,
      schema,
      applicationName: 'replica',
    });
    schemas.push(replicaDb);
    const relays = [db, replicaDb].map((replica) =>
      createOutboxRelay({ db: replica, js: env.nc.jetstream(), logger: env.logger }),
    );
    // Both replicas publish at once, again and again, until every row is out.
    await Promise.all(relays.map((relay) => relay.nudge()));
    await Promise.all(relays.map((relay) => relay.nudge()));
    for (const relay of relays) await relay.nudge();
    for (const relay of relays) await relay.stop();

    const messages = await streamContents(stream);
    expect(messages).toHaveLength(aggregates * versions);
    const seen = new Map<string, number>();
    const byAggregate = await db
      .selectFrom('outbox')
      .select(['event_id', 'aggregate_id', 'aggregate_version'])
      .execute();
    const aggregateOf = new Map(byAggregate.map((row) => [row.event_id, row]));
    for (const message of messages) {
      const row = aggregateOf.get(message.id!)!;
      const last = seen.get(row.aggregate_id) ?? 0;
      expect(row.aggregate_version).toBe(last + 1);
      seen.set(row.aggregate_id, row.aggregate_version);
    }
    expect([...seen.values()]).toEqual(Array.from({ length: aggregates }, () => versions));
  });

  it('parks a row that can never be published and publishes the rows around it', async () => {
    const { db } = await newSchema();
    const { stream, subject } = await newStream('poison');
    const metrics = createMetrics('test');
    await change(db, subject, 'a', 'before');
    // No stream takes this subject.
    const nowhere = await change(db, `${env.prefix}.nowhere.changed`, 'b', 'lost');
    // Larger than a NATS message may be.
    const huge = await change(db, subject, 'c', 'x'.repeat(1_200_000));
    await change(db, subject, 'a', 'after');

    const relay = createOutboxRelay({
      db,
      js: env.nc.jetstream(),
      logger: env.logger,
      metrics,
    });
    await relay.nudge();
    await relay.nudge();
    await relay.stop();

    const published = await streamContents(stream);
    expect(published.map((m) => (m.body.data as { note: string }).note)).toEqual([
      'before',
      'after',
    ]);
    const parked = await db
      .selectFrom('outbox')
      .select(['event_id', 'park_reason'])
      .where('parked_at', 'is not', null)
      .orderBy('sequence')
      .execute();
    expect(parked).toEqual([
      { event_id: nowhere.id, park_reason: 'no stream takes its subject' },
      { event_id: huge.id, park_reason: 'larger than the NATS max payload' },
    ]);
    const counted = Object.fromEntries(
      (await metrics.outboxEvents.get()).values.map((value) => [value.labels.outcome, value.value]),
    );
    expect(counted).toEqual({ published: 2, parked: 2 });
  });

  it('publishes nothing once stopped, whatever nudges it later', async () => {
    const { db } = await newSchema();
    const { stream, subject } = await newStream('stopped');
    const relay = createOutboxRelay({
      db,
      js: env.nc.jetstream(),
      logger: env.logger,
      intervalMs: 20,
    });
    relay.start();
    await relay.stop();
    await change(db, subject, 'a', 'after stop');
    await relay.nudge();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await jsm.streams.info(stream)).state.messages).toBe(0);
  });

  it('shares one batch among nudges close together, publishes the stored text, marks without the flush', async () => {
    const { db, schema } = await newSchema();
    const { stream, subject } = await newStream('coalesced');
    const statements: string[] = [];
    const pool = new pg.Pool({
      connectionString: env.databaseUrl,
      options: `-c search_path=${schema}`,
    });
    const logged = new Kysely<TestDatabase>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => {
        statements.push(event.query.sql);
      },
    });
    try {
      for (const id of ['a', 'b', 'c']) await change(db, subject, id, `note of ${id}`);
      const relay = createOutboxRelay({ db: logged, js: env.nc.jetstream(), logger: env.logger });
      await Promise.all([relay.nudge(), relay.nudge(), relay.nudge()]);
      const batches = statements.filter((text) => text.includes('pg_try_advisory_xact_lock'));
      // One batch for the three nudges.
      expect(batches).toHaveLength(1);
      expect(batches[0]).toContain(`set_config('synchronous_commit', 'off', true)`);
      const { rows } = await sql<{ event_id: string; payload: string }>`
        select event_id, payload::text as payload from outbox`.execute(db);
      const stored = new Map(rows.map((row) => [row.event_id, row.payload]));
      const info = await jsm.streams.info(stream);
      expect(info.state.messages).toBe(3);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const msg = await jsm.streams.getMessage(stream, { seq });
        // jsonb's own text (`{"id": ...`), not a re-serialization of it.
        expect(new TextDecoder().decode(msg.data)).toBe(stored.get(msg.header.get('Nats-Msg-Id')));
      }
    } finally {
      await logged.destroy();
    }
  });
});
