import type { ApiVersion, PartnerMode, WebhookEventKind } from '@pcp/contracts';
import { rewrap, seal, type Keyring } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import type { OrderingDatabase, WebhookEndpointRow } from '../db/ordering.table.js';
import { endpointSecretBinding, streamSecretBinding } from './secret-bindings.js';

type Db = Kysely<OrderingDatabase>;

/**
 * Move every stored signing secret (endpoints' and webhook streams') to the keyring's current
 * key, so older keys can leave the keyring; with `rotateDataKey`, each under a fresh data key
 * too (docs/operations.md#secrets-at-rest). Throws (changing nothing) when a secret's key is
 * not in the keyring or a secret does not open for its row.
 */
export async function rewrapWebhookSecrets(
  db: Db,
  keyring: Keyring,
  options: { rotateDataKey: boolean },
): Promise<{ examined: number; rewrapped: number }> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('webhook_endpoints')
      .select(['partner_id', 'mode', 'secret', 'previous_secret'])
      .forUpdate()
      .execute();
    let rewrapped = 0;
    for (const row of rows) {
      const move = (value: string) => rewrap(keyring, endpointSecretBinding(row), value, options);
      const secret = move(row.secret);
      const previous = row.previous_secret === null ? null : move(row.previous_secret);
      if (secret === row.secret && previous === row.previous_secret) continue;
      await trx
        .updateTable('webhook_endpoints')
        .set({ secret, previous_secret: previous })
        .where('partner_id', '=', row.partner_id)
        .execute();
      rewrapped += 1;
    }
    // The test-mode webhook streams' secrets are sealed the same way.
    const streams = await trx
      .selectFrom('webhook_streams')
      .select(['partner_id', 'secret'])
      .forUpdate()
      .execute();
    for (const row of streams) {
      const secret = rewrap(keyring, streamSecretBinding(row.partner_id), row.secret, options);
      if (secret === row.secret) continue;
      await trx
        .updateTable('webhook_streams')
        .set({ secret })
        .where('partner_id', '=', row.partner_id)
        .execute();
      rewrapped += 1;
    }
    return { examined: rows.length + streams.length, rewrapped };
  });
}

/**
 * Register or replace a partner's endpoint (its version set anew each time); a replaced one
 * keeps its secret and is enabled.
 * `secret` is sealed. `mode` is the partner's (its tenant's), so a replacement keeps it.
 */
export async function upsertEndpoint(
  db: Db,
  partnerId: string,
  endpoint: {
    url: string;
    events: readonly WebhookEventKind[];
    apiVersion: ApiVersion;
    mode: PartnerMode;
  },
  secret: string,
): Promise<{ row: WebhookEndpointRow; created: boolean }> {
  const { created, ...row } = await db
    .insertInto('webhook_endpoints')
    .values({
      partner_id: partnerId,
      mode: endpoint.mode,
      url: endpoint.url,
      events: [...endpoint.events],
      api_version: endpoint.apiVersion,
      secret,
    })
    .onConflict((oc) =>
      oc.column('partner_id').doUpdateSet({
        url: endpoint.url,
        events: [...endpoint.events],
        api_version: endpoint.apiVersion,
        disabled_at: null,
        disabled_reason: null,
        updated_at: sql<Date>`now()`,
      }),
    )
    .returningAll()
    // xmax is 0 on a row this statement inserted, the updater's id on one it updated.
    .returning(sql<boolean>`xmax = 0`.as('created'))
    .executeTakeFirstOrThrow();
  return { row, created };
}

export function findEndpoint(db: Db, partnerId: string): Promise<WebhookEndpointRow | undefined> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .executeTakeFirst();
}

/**
 * A new secret (sealed here, for the endpoint's row); the current one keeps signing until
 * `overlapMs` from now.
 */
export function rotateSecret(
  db: Db,
  keyring: Keyring,
  partnerId: string,
  secret: string,
  overlapMs: number,
): Promise<WebhookEndpointRow | undefined> {
  return db.transaction().execute(async (trx) => {
    const endpoint = await trx
      .selectFrom('webhook_endpoints')
      .select(['partner_id', 'mode'])
      .where('partner_id', '=', partnerId)
      .forUpdate()
      .executeTakeFirst();
    if (!endpoint) return undefined;
    return trx
      .updateTable('webhook_endpoints')
      .set({
        previous_secret: sql<string>`secret`,
        previous_secret_expires_at: sql<Date>`now() + ${overlapMs} * interval '1 millisecond'`,
        secret: seal(keyring, endpointSecretBinding(endpoint), secret),
        updated_at: sql<Date>`now()`,
      })
      .where('partner_id', '=', partnerId)
      .returningAll()
      .executeTakeFirst();
  });
}

/**
 * The endpoint answered 410 Gone: it is disabled (until the partner registers it again) and
 * its open deliveries are dead, listed for the partner and resendable.
 */
export async function disableEndpoint(db: Db, partnerId: string, reason: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('webhook_endpoints')
      .set({ disabled_at: sql<Date>`now()`, disabled_reason: reason, updated_at: sql<Date>`now()` })
      .where('partner_id', '=', partnerId)
      .execute();
    await trx
      .updateTable('webhook_deliveries')
      .set({
        status: 'dead',
        last_error: reason,
        next_attempt_at: null,
        lease_owner: null,
        lease_expires_at: null,
        updated_at: sql<Date>`now()`,
      })
      .where('partner_id', '=', partnerId)
      .where('status', 'in', ['pending', 'failed'])
      .execute();
  });
}
