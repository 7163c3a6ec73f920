import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // One endpoint per distribution partner (docs/guide/webhooks.md), with its signing secret and,
  // for a day after a rotation, the previous one (deliveries carry both signatures meanwhile).
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('partner_id', 'uuid', (col) => col.primaryKey())
    .addColumn('url', 'text', (col) => col.notNull())
    .addColumn('events', sql`text[]`, (col) => col.notNull())
    .addColumn('secret', 'text', (col) => col.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'timestamptz')
    .addColumn('disabled_at', 'timestamptz')
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  // One row per order event (unique per order and version): the dispatchers' work queue and
  // the partner's delivery log. Events nobody subscribed to are `skipped` rows, so every
  // order's versions stay contiguous and a later one can tell its predecessor was seen.
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('delivery_id', 'uuid', (col) => col.primaryKey())
    .addColumn('event_id', 'uuid', (col) => col.notNull().unique())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('order_id', 'uuid', (col) => col.notNull())
    .addColumn('version', 'integer', (col) => col.notNull())
    .addColumn('event_type', 'text', (col) => col.notNull())
    // text: every try and resend sends these very bytes (the signature is over them).
    .addColumn('payload', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'timestamptz')
    .addColumn('last_attempt_at', 'timestamptz')
    .addColumn('last_response_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('occurred_at', 'timestamptz', (col) => col.notNull())
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('webhook_deliveries_order_version_key', ['order_id', 'version'])
    // Room in each page, so a lease (no indexed column changes) is a HOT update.
    .modifyEnd(sql`with (fillfactor = 70)`)
    .execute();
  // The dispatchers' scan: open deliveries by when they are due (a version waiting for an
  // earlier one of its order has no time yet).
  await db.schema
    .createIndex('webhook_deliveries_due_idx')
    .on('webhook_deliveries')
    .columns(['next_attempt_at'])
    .where(sql.ref('status'), 'in', sql`('pending', 'failed')`)
    .execute();
  // The in-order rule's probe: an order's open versions.
  await db.schema
    .createIndex('webhook_deliveries_open_idx')
    .on('webhook_deliveries')
    .columns(['order_id', 'version'])
    .where(sql.ref('status'), 'in', sql`('pending', 'failed')`)
    .execute();
  // A partner's open deliveries, for the per-partner cap of the claim. (Measured slower: a
  // partial index of leased rows only, which made every lease rewrite the row's index
  // entries, and leases in a table of their own, two more writes per try.)
  await db.schema
    .createIndex('webhook_deliveries_partner_open_idx')
    .on('webhook_deliveries')
    .column('partner_id')
    .where(sql.ref('status'), 'in', sql`('pending', 'failed')`)
    .execute();
  // Versions waiting for an earlier one, for the sweep that wakes any a race left waiting.
  await db.schema
    .createIndex('webhook_deliveries_waiting_idx')
    .on('webhook_deliveries')
    .column('order_id')
    .where(sql<boolean>`status = 'pending' and next_attempt_at is null`)
    .execute();
  // Every delivery's row is updated a few times within seconds: vacuum it early, or the
  // partial indexes fill with dead entries the dispatchers' scans wade through.
  await sql`alter table webhook_deliveries set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)`.execute(
    db,
  );
  // The partner's delivery log, newest first (status is filtered on the way: it changes on
  // every try, and an index holding it would be rewritten each time).
  await db.schema
    .createIndex('webhook_deliveries_partner_idx')
    .on('webhook_deliveries')
    .columns(['partner_id', 'created_at', 'delivery_id'])
    .execute();
  // The retention prune, oldest first.
  await db.schema
    .createIndex('webhook_deliveries_created_idx')
    .on('webhook_deliveries')
    .column('created_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhook_endpoints').execute();
}
