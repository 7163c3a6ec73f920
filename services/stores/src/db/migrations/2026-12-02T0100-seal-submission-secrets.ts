import { keyringFromEnv, unboundForMigrations } from '@pcp/service-kit';

// Sealed as they were then: unbound (sb1); a later migration binds them to their rows.
const { isSealed, open, seal } = unboundForMigrations;
import { sql, type Kysely } from 'kysely';

/**
 * Order submission secrets are stored sealed (docs/operations.md#secrets-at-rest) under the keyring
 * of SECRETS_KEYS, and a rotation keeps the previous one signing for an overlap.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('stores')
    .addColumn('order_submission_previous_secret', 'text')
    .addColumn('order_submission_previous_secret_expires_at', 'timestamptz')
    .execute();
  const keyring = keyringFromEnv();
  const { rows } = await sql<{ store_id: string; secret: string }>`
    select store_id, order_submission_secret as secret from stores
    where order_submission_secret is not null`.execute(db);
  const plaintext = rows.filter((row) => !isSealed(row.secret));
  if (plaintext.length === 0) return;
  const storeIds = plaintext.map((row) => row.store_id);
  const sealed = plaintext.map((row) => seal(keyring, row.secret));
  await sql`update stores set order_submission_secret = sealed.secret
    from unnest(${storeIds}::uuid[], ${sealed}::text[]) as sealed (store_id, secret)
    where stores.store_id = sealed.store_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const keyring = keyringFromEnv();
  const { rows } = await sql<{ store_id: string; secret: string }>`
    select store_id, order_submission_secret as secret from stores
    where order_submission_secret is not null`.execute(db);
  for (const row of rows) {
    if (!isSealed(row.secret)) continue;
    await sql`update stores set order_submission_secret = ${open(keyring, row.secret)}
      where store_id = ${row.store_id}`.execute(db);
  }
  await db.schema
    .alterTable('stores')
    .dropColumn('order_submission_previous_secret')
    .dropColumn('order_submission_previous_secret_expires_at')
    .execute();
}
