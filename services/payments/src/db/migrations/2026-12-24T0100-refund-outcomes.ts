import { sql, type Kysely } from 'kysely';

/**
 * A refund the processor refused is `failed` with the processor's code, not left pending for
 * ever (a pending one counts against what is left to refund, and blocks adopting a lost
 * answer of the charge's other refunds); asked again under its key it is sent as a new
 * processor attempt, since a refusal moved no money. And what the reconciler did to charges
 * on its own (released, or withheld when a second read of the charge's owners disagreed with
 * the first) is kept, for operators and for the fault suite, which counts each as a lapse of
 * the path that should have done it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table refunds drop constraint refunds_status_check`.execute(db);
  await sql`alter table refunds add constraint refunds_status_check
    check (status in ('pending', 'succeeded', 'failed'))`.execute(db);
  await db.schema
    .alterTable('refunds')
    .addColumn('failure_code', 'text')
    // The processor key's suffix: a failed refund asked again is a new call to the processor.
    .addColumn('processor_attempt', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('reconciler_actions')
    .addColumn('action_id', 'bigserial', (col) => col.primaryKey())
    .addColumn('charge_id', 'uuid', (col) =>
      col.notNull().references('charges.charge_id').onDelete('cascade'),
    )
    .addColumn('order_id', 'uuid')
    .addColumn('action', 'text', (col) =>
      col.notNull().check(sql`action in ('voided', 'refunded', 'withheld')`),
    )
    .addColumn('reason', 'text', (col) => col.notNull())
    .addColumn('acted_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('reconciler_actions_acted_at_idx')
    .on('reconciler_actions')
    .column('acted_at')
    .execute();
  await db.schema
    .createIndex('reconciler_actions_charge_idx')
    .on('reconciler_actions')
    .column('charge_id')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('reconciler_actions').execute();
  await db.schema
    .alterTable('refunds')
    .dropColumn('failure_code')
    .dropColumn('processor_attempt')
    .dropColumn('updated_at')
    .execute();
  await sql`delete from refunds where status = 'failed'`.execute(db);
  await sql`alter table refunds drop constraint refunds_status_check`.execute(db);
  await sql`alter table refunds add constraint refunds_status_check
    check (status in ('pending', 'succeeded'))`.execute(db);
}
