import { sql, type Kysely } from 'kysely';

/**
 * Place's recovery points say what is known (the submission and the capture may have been
 * sent), an abandoned attempt the store may hold is settled by the sweeper (`settle_at`),
 * an answer is kept 24 hours from when it was given, and a charge belongs to one order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // Old points: `authorized` meant "maybe submitted, maybe captured", so it resumes by
  // submitting (a resubmission is idempotent; a store without a URL has nothing to send);
  // `submitted` and `captured` resume by capturing (a capture is idempotent too).
  await sql`
    update place_attempts
       set step = case step when 'authorized' then 'submitting' else 'capturing' end
     where step in ('authorized', 'submitted', 'captured')`.execute(db);
  await db.schema
    .alterTable('place_attempts')
    .addColumn('settle_at', 'timestamptz')
    .addColumn('settle_tries', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('place_attempts')
    .addCheckConstraint(
      'place_attempts_step',
      sql`step in ('started', 'validated', 'submitting', 'capturing', 'rejected', 'recorded')`,
    )
    .execute();
  // Unfinished attempts the store may hold are settled at once; answers kept a day from then.
  await sql`
    update place_attempts set settle_at = now()
     where response_status is null and step in ('submitting', 'capturing', 'rejected')`.execute(db);
  await sql`
    update place_attempts set expires_at = greatest(expires_at, updated_at + interval '24 hours')
     where response_status is not null`.execute(db);
  await db.schema
    .createIndex('place_attempts_settle_idx')
    .on('place_attempts')
    .column('settle_at')
    .where(sql.ref('response_status'), 'is', null)
    .execute();
  await db.schema
    .createIndex('orders_charge_key')
    .on('orders')
    .column('charge_id')
    .unique()
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('orders_charge_key').execute();
  await db.schema.dropIndex('place_attempts_settle_idx').execute();
  await db.schema.alterTable('place_attempts').dropConstraint('place_attempts_step').execute();
  await db.schema
    .alterTable('place_attempts')
    .dropColumn('settle_tries')
    .dropColumn('settle_at')
    .execute();
}
