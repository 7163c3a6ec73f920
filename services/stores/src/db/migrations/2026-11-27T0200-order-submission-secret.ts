import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';

/**
 * The secret order submissions to a store are signed with (Standard Webhooks, `whsec_` and
 * the base64 of 24 random bytes). Stores that already have an orderSubmissionUrl get one
 * now, and a check keeps every store with a URL signable.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('stores').addColumn('order_submission_secret', 'text').execute();
  const { rows } = await sql<{ store_id: string }>`
    select store_id from stores where order_submission_url is not null`.execute(db);
  if (rows.length > 0) {
    const storeIds = rows.map((row) => row.store_id);
    // Generated here rather than by the service's code, so this migration never changes.
    const secrets = rows.map(() => `whsec_${randomBytes(24).toString('base64')}`);
    await sql`update stores set order_submission_secret = generated.secret
      from unnest(${storeIds}::uuid[], ${secrets}::text[]) as generated (store_id, secret)
      where stores.store_id = generated.store_id`.execute(db);
  }
  await sql`alter table stores add constraint stores_order_submission_secret
    check (order_submission_url is null or order_submission_secret is not null)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('stores').dropColumn('order_submission_secret').execute();
}
