import { sql, type Kysely } from 'kysely';

/**
 * Velocity limits: payments' own keyed hash of each vaulted card number (the same card under
 * any end user or partner matches, and the number cannot be recovered from it), and the
 * recent vault attempts and declines counted against the limits.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // Null only on cards vaulted before this migration.
  await db.schema.alterTable('cards').addColumn('card_hash', 'text').execute();
  await db.schema
    .createTable('velocity_events')
    .addColumn('scope', 'text', (col) => col.notNull())
    .addColumn('subject', 'text', (col) => col.notNull())
    .addColumn('at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('velocity_events_subject_idx')
    .on('velocity_events')
    .columns(['scope', 'subject', 'at'])
    .execute();
  // Pruning finds the events the window has left behind, whatever their subject.
  await db.schema
    .createIndex('velocity_events_at_idx')
    .on('velocity_events')
    .column('at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('velocity_events').execute();
  await db.schema.alterTable('cards').dropColumn('card_hash').execute();
}
