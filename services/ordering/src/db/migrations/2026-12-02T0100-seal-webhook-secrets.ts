import { keyringFromEnv, unboundForMigrations } from '@pcp/service-kit';

// Sealed as they were then: unbound (sb1); a later migration binds them to their rows.
const { isSealed, open, seal } = unboundForMigrations;
import { sql, type Kysely } from 'kysely';

/**
 * Webhook signing secrets are stored sealed (docs/operations.md#secrets-at-rest) under
 * SECRETS_KEYS.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await convert(db, (keyring, value) => (isSealed(value) ? value : seal(keyring, value)));
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await convert(db, (keyring, value) => (isSealed(value) ? open(keyring, value) : value));
}

async function convert(
  db: Kysely<unknown>,
  change: (keyring: ReturnType<typeof keyringFromEnv>, value: string) => string,
): Promise<void> {
  const keyring = keyringFromEnv();
  const { rows } = await sql<{ partner_id: string; secret: string; previous: string | null }>`
    select partner_id, secret, previous_secret as previous from webhook_endpoints`.execute(db);
  for (const row of rows) {
    const secret = change(keyring, row.secret);
    const previous = row.previous === null ? null : change(keyring, row.previous);
    if (secret === row.secret && previous === row.previous) continue;
    await sql`update webhook_endpoints set secret = ${secret}, previous_secret = ${previous}
      where partner_id = ${row.partner_id}`.execute(db);
  }
}
