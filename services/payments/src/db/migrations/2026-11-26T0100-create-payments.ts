import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // The processor holds the card; a row keeps only what partners may see and the token.
  await db.schema
    .createTable('cards')
    .addColumn('payment_id', 'uuid', (col) => col.primaryKey())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('end_user_id', 'text', (col) => col.notNull())
    // Cleared when the card is deleted: nothing can be charged to it after that.
    .addColumn('processor_token', 'text')
    .addColumn('fingerprint', 'text', (col) => col.notNull())
    .addColumn('brand', 'text', (col) => col.notNull())
    .addColumn('last4', 'char(4)', (col) => col.notNull())
    .addColumn('exp_month', 'smallint', (col) => col.notNull())
    .addColumn('exp_year', 'smallint', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  // One live card per (partner, end user, card): vaulting it again keeps its paymentId.
  await db.schema
    .createIndex('cards_owner_fingerprint_key')
    .on('cards')
    .columns(['partner_id', 'end_user_id', 'fingerprint'])
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('cards_owner_idx')
    .on('cards')
    .columns(['partner_id', 'end_user_id', 'created_at'])
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('charges')
    .addColumn('charge_id', 'uuid', (col) => col.primaryKey())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('end_user_id', 'text', (col) => col.notNull())
    .addColumn('payment_id', 'uuid', (col) => col.notNull().references('cards.payment_id'))
    .addColumn('idempotency_key', 'text', (col) => col.notNull())
    .addColumn('amount', 'bigint', (col) => col.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'char(3)', (col) => col.notNull())
    .addColumn('status', 'text', (col) =>
      col
        .notNull()
        .check(
          sql`status in ('authorizing', 'authorized', 'declined', 'captured', 'voided', 'partially_refunded', 'refunded')`,
        ),
    )
    // Which processor idempotency key the next authorization call uses: a final "try
    // again" answer (processing_error) moves to the next; an unknown outcome keeps it.
    .addColumn('processor_attempt', 'integer', (col) => col.notNull().defaultTo(1))
    .addColumn('processor_authorization_id', 'text')
    .addColumn('decline_code', 'text')
    .addColumn('captured_amount', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('refunded_amount', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('charges_idempotency_key', [
      'partner_id',
      'end_user_id',
      'idempotency_key',
    ])
    .addCheckConstraint(
      'charges_amounts_consistent',
      sql`captured_amount <= amount and refunded_amount <= captured_amount`,
    )
    .execute();
  await db.schema.createIndex('charges_payment_idx').on('charges').column('payment_id').execute();

  await db.schema
    .createTable('refunds')
    .addColumn('refund_id', 'uuid', (col) => col.primaryKey())
    .addColumn('charge_id', 'uuid', (col) => col.notNull().references('charges.charge_id'))
    .addColumn('idempotency_key', 'text', (col) => col.notNull())
    .addColumn('amount', 'bigint', (col) => col.notNull().check(sql`amount > 0`))
    .addColumn('status', 'text', (col) =>
      col.notNull().check(sql`status in ('pending', 'succeeded')`),
    )
    .addColumn('processor_refund_id', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('refunds_idempotency_key', ['charge_id', 'idempotency_key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('refunds').execute();
  await db.schema.dropTable('charges').execute();
  await db.schema.dropTable('cards').execute();
}
