import { sql, type Kysely } from 'kysely';

const open = sql<boolean>`status in ('pending', 'failed')`;

// The claim finds due order deliveries partner by partner instead of in one queue by time, so
// a partner at its in-flight cap, or with its backlog in back-off, costs it an index probe or
// two whatever its backlog (a failing partner's 50k due rows were read on every claim, and
// being the oldest they filled its look and starved every other partner).
export async function up(db: Kysely<unknown>): Promise<void> {
  // A partner's open deliveries by when they are due: the claim steps from partner to partner
  // on it, takes the oldest few of each partner below its cap, and counts a partner's leases
  // among its rows due by now (a leased row was due when claimed; its back-off is past the
  // range). It replaces the order deliveries' queue by time and the partner-only index.
  await db.schema.dropIndex('webhook_deliveries_order_due_idx').execute();
  await db.schema.dropIndex('webhook_deliveries_partner_open_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_partner_open_idx')
    .on('webhook_deliveries')
    .columns(['partner_id', 'next_attempt_at'])
    .where(open)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_partner_open_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_partner_open_idx')
    .on('webhook_deliveries')
    .column('partner_id')
    .where(open)
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_order_due_idx')
    .on('webhook_deliveries')
    .column('next_attempt_at')
    .where(sql<boolean>`status in ('pending', 'failed') and order_id is not null`)
    .execute();
}
