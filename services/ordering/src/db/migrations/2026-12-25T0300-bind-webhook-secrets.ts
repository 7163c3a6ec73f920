import { isSealed, keyringFromEnv, open, seal, unboundForMigrations } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import type { PartnerMode } from '@pcp/contracts';
import { endpointSecretBinding, streamSecretBinding } from '../../webhooks/secret-bindings.js';

/**
 * Webhook signing secrets (endpoints' current and previous ones, webhook streams') are bound to
 * their rows: each unbound sb1 value is sealed again for its row (docs/operations.md#secrets-at-rest),
 * after which nothing but this migration's down opens sb1.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const keyring = keyringFromEnv();
  await convertEndpoints(db, (row, value) =>
    unboundForMigrations.isSealed(value)
      ? seal(keyring, endpointSecretBinding(row), unboundForMigrations.open(keyring, value))
      : value,
  );
  await convertStreams(db, (partnerId, value) =>
    unboundForMigrations.isSealed(value)
      ? seal(keyring, streamSecretBinding(partnerId), unboundForMigrations.open(keyring, value))
      : value,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const keyring = keyringFromEnv();
  const unbind = (value: string, opened: () => string) =>
    isSealed(value) ? unboundForMigrations.seal(keyring, opened()) : value;
  await convertEndpoints(db, (row, value) =>
    unbind(value, () => open(keyring, endpointSecretBinding(row), value)),
  );
  await convertStreams(db, (partnerId, value) =>
    unbind(value, () => open(keyring, streamSecretBinding(partnerId), value)),
  );
}

type EndpointRow = { partner_id: string; mode: PartnerMode };

async function convertEndpoints(
  db: Kysely<unknown>,
  change: (row: EndpointRow, value: string) => string,
): Promise<void> {
  const { rows } = await sql<EndpointRow & { secret: string; previous: string | null }>`
    select partner_id, mode, secret, previous_secret as previous from webhook_endpoints
    for update`.execute(db);
  for (const row of rows) {
    const secret = change(row, row.secret);
    const previous = row.previous === null ? null : change(row, row.previous);
    if (secret === row.secret && previous === row.previous) continue;
    await sql`update webhook_endpoints set secret = ${secret}, previous_secret = ${previous}
      where partner_id = ${row.partner_id}`.execute(db);
  }
}

async function convertStreams(
  db: Kysely<unknown>,
  change: (partnerId: string, value: string) => string,
): Promise<void> {
  const { rows } = await sql<{ partner_id: string; secret: string }>`
    select partner_id, secret from webhook_streams for update`.execute(db);
  for (const row of rows) {
    const secret = change(row.partner_id, row.secret);
    if (secret === row.secret) continue;
    await sql`update webhook_streams set secret = ${secret}
      where partner_id = ${row.partner_id}`.execute(db);
  }
}
