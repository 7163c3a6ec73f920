import type { PartnerMode } from '@pcp/contracts';
import { isSealed, keyringFromEnv, open, seal, unboundForMigrations } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { submissionSecretBinding } from '../secret-binding.js';

type StoreSecrets = {
  store_id: string;
  partner_id: string;
  mode: PartnerMode;
  secret: string | null;
  previous: string | null;
};

/**
 * Order submission secrets (current and previous) are bound to their store's row: each
 * unbound sb1 value is sealed again for its row (docs/operations.md#secrets-at-rest), after
 * which nothing but this migration's down opens sb1.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const keyring = keyringFromEnv();
  await convert(db, (row, value) =>
    unboundForMigrations.isSealed(value)
      ? seal(keyring, submissionSecretBinding(row), unboundForMigrations.open(keyring, value))
      : value,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const keyring = keyringFromEnv();
  await convert(db, (row, value) =>
    isSealed(value)
      ? unboundForMigrations.seal(keyring, open(keyring, submissionSecretBinding(row), value))
      : value,
  );
}

async function convert(
  db: Kysely<unknown>,
  change: (row: StoreSecrets, value: string) => string,
): Promise<void> {
  const { rows } = await sql<StoreSecrets>`
    select store_id, partner_id, mode, order_submission_secret as secret,
      order_submission_previous_secret as previous
    from stores
    where order_submission_secret is not null or order_submission_previous_secret is not null
    for update`.execute(db);
  for (const row of rows) {
    const secret = row.secret === null ? null : change(row, row.secret);
    const previous = row.previous === null ? null : change(row, row.previous);
    if (secret === row.secret && previous === row.previous) continue;
    await sql`update stores set order_submission_secret = ${secret},
      order_submission_previous_secret = ${previous}
      where store_id = ${row.store_id}`.execute(db);
  }
}
