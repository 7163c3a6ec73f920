import { sql, type Kysely } from 'kysely';

/**
 * Charges belong to an order, not to the partner's Idempotency-Key: a key used again after
 * its retention is a new place attempt with a new order id, so it can never inherit the
 * charge of the order the key placed before. The reconciler marks what it has verified.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('charges')
    // Null only on charges made before this migration (their key said which attempt).
    .addColumn('order_id', 'uuid')
    // The reconciler's last verdict, and when it last found the charge explained (it looks
    // again after any change, and at every run while it is not).
    .addColumn('ledger_class', 'text')
    .addColumn('reconciled_at', 'timestamptz')
    .execute();
  // One charge per order; a second authorization of the same order finds the first.
  await db.schema
    .createIndex('charges_order_key')
    .on('charges')
    .column('order_id')
    .unique()
    .execute();
  await db.schema.alterTable('charges').dropConstraint('charges_idempotency_key').execute();
  await db.schema.alterTable('charges').dropColumn('idempotency_key').execute();
  // The reconciler's work: charges never verified, or changed since.
  await db.schema
    .createIndex('charges_unreconciled_idx')
    .on('charges')
    .column('charge_id')
    .where(sql<boolean>`reconciled_at is null or reconciled_at < updated_at`)
    .execute();
  // Who runs the reconciler now: one replica at a time, taken over once its lease lapses.
  await db.schema
    .createTable('reconciler_lease')
    .addColumn('name', 'text', (col) => col.primaryKey())
    .addColumn('holder', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .execute();
  // The unresolved charges' gauge counts these at every scrape.
  await db.schema
    .createIndex('charges_unresolved_idx')
    .on('charges')
    .column('ledger_class')
    .where(sql<boolean>`ledger_class in ('in_flight', 'unexplained')`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('reconciler_lease').execute();
  await db.schema.dropIndex('charges_unresolved_idx').execute();
  await db.schema.dropIndex('charges_unreconciled_idx').execute();
  await db.schema
    .alterTable('charges')
    .addColumn('idempotency_key', 'text', (col) =>
      col.notNull().defaultTo(sql`gen_random_uuid()::text`),
    )
    .execute();
  await db.schema
    .alterTable('charges')
    .addUniqueConstraint('charges_idempotency_key', [
      'partner_id',
      'end_user_id',
      'idempotency_key',
    ])
    .execute();
  await db.schema.dropIndex('charges_order_key').execute();
  await db.schema
    .alterTable('charges')
    .dropColumn('reconciled_at')
    .dropColumn('order_id')
    .execute();
}
