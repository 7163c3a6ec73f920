import { sql, type Kysely } from 'kysely';

/**
 * Money columns hold minor units of the store's currency. Their digits used to come from the
 * runtime's locale data (Node 20's ICU), which gives fewer than ISO 4217 for these codes;
 * they now come from ISO's table (docs/guide/payments.md#money), so amounts saved before are
 * rescaled to keep their value: 500 HUF saved as 500 becomes 50,000 hundredths. SLL, withdrawn from
 * ISO's table, is read with the default 2 digits where ICU gave 0.
 */
const RESCALED = sql`(values
  ('AFN', 100), ('ALL', 100), ('COP', 100), ('HUF', 100), ('IDR', 100), ('IQD', 1000),
  ('IRR', 100), ('KPW', 100), ('LAK', 100), ('LBP', 100), ('MGA', 100), ('MMK', 100),
  ('PKR', 100), ('SLL', 100), ('SOS', 100), ('SYP', 100), ('YER', 100)
) as rescaled (currency, factor)`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update stores set
      delivery_fee_minor = delivery_fee_minor * rescaled.factor,
      delivery_minimum_order_minor = delivery_minimum_order_minor * rescaled.factor,
      minimum_order_minor = minimum_order_minor * rescaled.factor
    from ${RESCALED}
    where stores.currency = rescaled.currency`.execute(db);
}

/** Back to the old scale; an amount saved since with the finer precision is truncated. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`update stores set
      delivery_fee_minor = delivery_fee_minor / rescaled.factor,
      delivery_minimum_order_minor = delivery_minimum_order_minor / rescaled.factor,
      minimum_order_minor = minimum_order_minor / rescaled.factor
    from ${RESCALED}
    where stores.currency = rescaled.currency`.execute(db);
}
