// The webhook claim (services/ordering/src/webhooks/delivery-claim.repository.ts): every dispatcher
// of every replica claims under pg_advisory_xact_lock of `<schema>.webhook-claim`, so the
// per-partner in-flight cap holds exactly. Claims/s and rows/s on a seeded table of due
// deliveries, each claim's rows settled as delivered (what frees the partners' slots), with
// one and two claimers; and one partner alone, where its in-flight cap is the limit.
import { sql, type Kysely } from 'kysely';
import { orderingMigrations } from '../../../../../services/ordering/src/db/migrations/index.js';
import type { OrderingDatabase } from '../../../../../services/ordering/src/db/ordering.table.js';
import { claimDueDeliveries } from '../../../../../services/ordering/src/webhooks/delivery-claim.repository.js';
import { settleDeliveries } from '../../../../../services/ordering/src/webhooks/delivery-settle.repository.js';
import { WEBHOOK_GAP_GRACE_MS } from '../../../../../services/ordering/src/webhooks/webhook-recording.js';
import type { BenchPlatform } from '../../platform/bench-platform.js';
import { drive, scratchSchema, timed } from './drive.js';
import { ceilingRow } from './tally.js';

/** The dispatcher's defaults (services/ordering/src/config.ts, webhook-dispatcher.ts). */
const CONCURRENCY = 64;
const STORE_CONCURRENCY = 32;
const SCAN_PER_SLOT = 8;
const PER_PARTNER = 4;
const LEASE_MS = 2 * 10_000 + 5_000;

/**
 * `partners` enabled endpoints and `rows` due order deliveries, the partners interleaved in
 * due order (a millisecond apart, as events come in).
 */
async function seedDeliveries(db: Kysely<OrderingDatabase>, partners: number, rows: number) {
  await sql`
    insert into webhook_endpoints (partner_id, url, events, secret)
    select ('00000000-0000-4000-8000-' || lpad(p::text, 12, '0'))::uuid,
           'https://partner.invalid/webhooks', array['order.status_changed'], 'sealed-secret'
      from generate_series(1, ${partners}) p
  `.execute(db);
  await sql`
    insert into webhook_deliveries
      (delivery_id, event_id, partner_id, order_id, store_id, sequence_key, version, event_type,
       payload, status, next_attempt_at, occurred_at)
    select gen_random_uuid(), gen_random_uuid(),
           ('00000000-0000-4000-8000-' || lpad((1 + n % ${partners})::text, 12, '0'))::uuid,
           order_id, gen_random_uuid(), order_id::text, 1, 'order.status_changed',
           repeat('x', 400), 'pending', now() - (${rows} - n) * interval '1 millisecond', now()
      from (select n, gen_random_uuid() as order_id from generate_series(1, ${rows}) n) s
  `.execute(db);
  // As autovacuum would after such a load: unanalyzed, the endpoints look empty and the claim
  // reads every due row instead of its scan window.
  await sql`analyze webhook_endpoints`.execute(db);
  await sql`analyze webhook_deliveries`.execute(db);
}

export async function measureWebhookClaim(
  platform: BenchPlatform,
  options: {
    schema: string;
    rows: number;
    partners: number;
    runs: { workers: number; partners?: number }[];
    seconds: number;
  },
) {
  const rows = [];
  for (const run of options.runs) {
    const partners = run.partners ?? options.partners;
    const schema = await scratchSchema<OrderingDatabase>(
      platform,
      `${options.schema}_${run.workers}_${partners}`,
      orderingMigrations,
      { workers: run.workers, connections: 10 },
    );
    try {
      await seedDeliveries(schema.admin, partners, options.rows);
      const result = await drive({
        workers: run.workers,
        seconds: options.seconds,
        op: async (worker) => {
          const db = schema.pools[worker]!;
          const { value: claimed, ms } = await timed(() =>
            claimDueDeliveries(db, {
              holder: `bench-${worker}`,
              leaseMs: LEASE_MS,
              limit: CONCURRENCY,
              storeLimit: STORE_CONCURRENCY,
              scanLimit: CONCURRENCY * SCAN_PER_SLOT,
              perPartner: PER_PARTNER,
              gapGraceMs: WEBHOOK_GAP_GRACE_MS,
            }),
          );
          // Delivered at once: no partner's HTTP, only the settle that frees the slots (one
          // statement for the claim's tries, as the dispatcher's group commit settles them).
          await settleDeliveries(
            db,
            claimed.map((delivery) => ({
              deliveryId: delivery.delivery_id,
              holder: delivery.lease_owner!,
              outcome: { kind: 'delivered', attempts: 1, status: 200, latencyMs: 0 },
            })),
          );
          return { rows: claimed.length, ms };
        },
      });
      rows.push(
        ceilingRow(
          `webhook claim, ${partners} partner(s), ${run.workers} claimer(s)`,
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
