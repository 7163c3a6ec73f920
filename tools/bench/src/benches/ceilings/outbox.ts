// One schema's outbox relay (packages/service-kit/src/outbox.ts): each batch runs under
// pg_try_advisory_xact_lock of `<schema>.outbox`, so one relay publishes at a time whatever the
// replicas. Events/s to JetStream with N rows pending, with one relay and with two competing.
import {
  createLogger,
  createMetrics,
  createOutboxRelay,
  createOutboxTable,
  type OutboxDatabase,
  type ServiceMetrics,
} from '@pcp/service-kit';
import { events } from '@pcp/contracts';
import { sql, type Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import type { BenchPlatform } from '../../platform/bench-platform.js';
import { drive, scratchSchema, timed } from './drive.js';
import { ceilingRow } from './tally.js';

const outboxMigrations = {
  '0001-outbox': { up: (db: Kysely<unknown>) => createOutboxTable(db) },
};

/** The relay's published count so far, from its own metrics. */
async function published(metrics: ServiceMetrics): Promise<number> {
  const { values } = await metrics.outboxEvents.get();
  return values.find((value) => value.labels.outcome === 'published')?.value ?? 0;
}

/**
 * `rows` pending events of an order-status-changed size, `aggregates` orders interleaved (as
 * concurrent orders write them), each an order's next version.
 */
async function seedOutbox(db: Kysely<OutboxDatabase>, subject: string, rows: number) {
  const aggregates = Math.max(1, Math.floor(rows / 4));
  await sql`
    insert into outbox (event_id, subject, aggregate_type, aggregate_id, aggregate_version, payload)
    select id, ${subject}, 'order', 'order-' || (n % ${aggregates}), n / ${aggregates} + 1,
           jsonb_build_object('id', id, 'type', 'ordering.v1.order-status-changed', 'occurredAt', now(),
             'version', n / ${aggregates} + 1,
             'data', jsonb_build_object('orderId', gen_random_uuid(), 'storeId', gen_random_uuid(),
               'partnerId', gen_random_uuid(), 'status', 'ACCEPTED', 'previousStatus', 'CREATED',
               'note', repeat('x', 200)))
      from (select n, gen_random_uuid() as id from generate_series(0, ${rows - 1}) n) s
  `.execute(db);
}

/** Rows/s each relay count publishes until `rows` pending events are all out. */
export async function measureOutbox(
  platform: BenchPlatform,
  js: JetStreamClient,
  options: { schema: string; rows: number; relays: number[]; seconds: number },
) {
  const subject = `${platform.subjectPrefix}.${events.orderStatusChanged.subject}`;
  const logger = createLogger('bench-ceilings', 'warn');
  const rows = [];
  for (const relays of options.relays) {
    const schema = await scratchSchema<OutboxDatabase>(
      platform,
      `${options.schema}_${relays}`,
      outboxMigrations,
      // The relay's transaction holds one connection; the service's pool is larger.
      { workers: relays, connections: 10 },
    );
    try {
      await seedOutbox(schema.admin, subject, options.rows);
      const instances = schema.pools.map((db) => {
        const metrics = createMetrics('bench-ceilings');
        return { metrics, relay: createOutboxRelay({ db, js, logger, metrics }) };
      });
      let total = 0;
      // Each replica is nudged after its own commits: here, as soon as its last run ended.
      const result = await drive({
        workers: relays,
        seconds: options.seconds,
        done: () => total >= options.rows,
        op: async (worker) => {
          const { metrics, relay } = instances[worker]!;
          const before = await published(metrics);
          const { ms } = await timed(() => relay.nudge());
          const moved = (await published(metrics)) - before;
          total += moved;
          return { rows: moved, ms };
        },
      });
      await Promise.all(instances.map(({ relay }) => relay.stop()));
      rows.push(
        ceilingRow(
          `outbox relay, ${options.rows} pending, ${relays} relay(s)`,
          result.tallies,
          result.seconds,
        ),
      );
    } finally {
      await schema.close();
    }
  }
  return rows;
}
