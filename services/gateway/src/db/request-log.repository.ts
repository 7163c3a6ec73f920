import { MAX_LISTED_API_KEYS, MAX_REQUEST_ERROR_GROUPS, type PartnerMode } from '@pcp/contracts';
import { createdAtKeyOf, olderThan, pageOf, type ListKey } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import type { GatewayDatabase } from './partner.table.js';
import type { RequestLogRow } from './request-log.table.js';

type Db = Kysely<GatewayDatabase>;

/** A request as the gateway records it. */
export type RequestLogInsert = Omit<RequestLogRow, 'id'>;

/**
 * Write a batch of requests in one statement, and in the same transaction delete the oldest of
 * each of its tenants beyond `cap` (at most `maxTrimmed` each, so a lowered cap shrinks a log
 * over a few writes). The triggers' per-tenant counter tells who is over without counting, and
 * its row lock orders the writes of one tenant across replicas: no tenant's log outgrows the
 * cap. Answers how many rows the trim deleted.
 */
export async function insertRequests(
  db: Db,
  rows: readonly RequestLogInsert[],
  cap: number,
  maxTrimmed: number,
): Promise<number> {
  const column = <T>(pick: (row: RequestLogInsert) => T) => rows.map(pick);
  return db.transaction().execute(async (trx) => {
    await sql`
      insert into request_log
        (tenant_id, at, method, path, status, error_code, request_id, client_request_id,
         idempotency_key, latency_ms, key_id, api_version)
      select * from unnest(
        ${column((row) => row.tenant_id)}::uuid[], ${column((row) => row.at)}::timestamptz[],
        ${column((row) => row.method)}::text[], ${column((row) => row.path)}::text[],
        ${column((row) => row.status)}::smallint[], ${column((row) => row.error_code)}::text[],
        ${column((row) => row.request_id)}::text[], ${column((row) => row.client_request_id)}::text[],
        ${column((row) => row.idempotency_key)}::text[],
        ${column((row) => row.latency_ms)}::integer[], ${column((row) => row.key_id)}::text[],
        ${column((row) => row.api_version)}::text[])
    `.execute(trx);
    const over = await trx
      .selectFrom('request_log_tenant_rows')
      .select(['tenant_id', 'row_count'])
      .where('tenant_id', 'in', [...new Set(column((row) => row.tenant_id))])
      .where('row_count', '>', String(cap))
      .orderBy('tenant_id')
      .execute();
    let trimmed = 0;
    for (const { tenant_id: tenantId, row_count: rowCount } of over) {
      const excess = Math.min(Number(rowCount) - cap, maxTrimmed);
      const deleted = await trx
        .deleteFrom('request_log')
        .where(
          'id',
          'in',
          trx
            .selectFrom('request_log')
            .select('id')
            .where('tenant_id', '=', tenantId)
            .orderBy('at')
            .orderBy('id')
            .limit(excess),
        )
        .executeTakeFirst();
      trimmed += Number(deleted.numDeletedRows);
    }
    return trimmed;
  });
}

/** Set each key's last use, never moving it back. */
export async function touchKeys(
  db: Db,
  uses: readonly { keyId: string; at: Date }[],
): Promise<void> {
  await sql`
    update api_keys set last_used_at = used.at
    from unnest(${uses.map((use) => use.keyId)}::text[], ${uses.map((use) => use.at)}::timestamptz[])
      as used (key_id, at)
    where api_keys.key_id = used.key_id
      and (api_keys.last_used_at is null or api_keys.last_used_at < used.at)
  `.execute(db);
}

/**
 * A page of a tenant's requests, newest first (the lists' shared paging: `at` is the log's
 * created_at), and the key of its last row when more follow.
 */
export async function listRequests(
  db: Db,
  tenantId: string,
  query: { limit: number; status?: 'error' | number; errorCode?: string; apiVersion?: string },
  before: ListKey | undefined,
) {
  let select = db
    .selectFrom('request_log')
    .selectAll()
    .select(createdAtKeyOf('at').as('created_at_key'))
    .where('tenant_id', '=', tenantId);
  if (before) select = select.where(olderThan(before, 'id', 'at', 'bigint'));
  if (query.status === 'error') select = select.where('status', '>=', 400);
  else if (query.status !== undefined) select = select.where('status', '=', query.status);
  if (query.errorCode !== undefined) select = select.where('error_code', '=', query.errorCode);
  if (query.apiVersion !== undefined) select = select.where('api_version', '=', query.apiVersion);
  const rows = await select
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(query.limit + 1)
    .execute();
  return pageOf(rows, query.limit, (row) => row.id);
}

/** A tenant's errors since `since`, by code, the latest first. */
export function errorGroups(db: Db, tenantId: string, since: Date) {
  return db
    .selectFrom('request_log')
    .select((eb) => [
      'error_code',
      eb.fn.countAll<string>().as('count'),
      eb.fn.max('at').as('last_at'),
      sql<string>`(array_agg(request_id order by at desc, id desc))[1]`.as('last_request_id'),
      sql<number>`(array_agg(status order by at desc, id desc))[1]`.as('status'),
    ])
    .where('tenant_id', '=', tenantId)
    .where('at', '>=', since)
    .where('error_code', 'is not', null)
    .groupBy('error_code')
    .orderBy('last_at', 'desc')
    .limit(MAX_REQUEST_ERROR_GROUPS)
    .$narrowType<{ error_code: string }>()
    .execute();
}

/** Delete up to `batch` requests older than `cutoff`, whoever's; answers how many went. */
export async function deleteRequestsBefore(db: Db, cutoff: Date, batch: number): Promise<number> {
  const deleted = await db
    .deleteFrom('request_log')
    .where(
      'id',
      'in',
      db.selectFrom('request_log').select('id').where('at', '<', cutoff).limit(batch),
    )
    .executeTakeFirst();
  return Number(deleted.numDeletedRows);
}

/** A partner's keys of one mode, newest first. */
export function listKeys(db: Db, accountId: string, mode: PartnerMode) {
  return db
    .selectFrom('api_keys')
    .select(['key_id', 'mode', 'created_at', 'last_used_at', 'revoked_at'])
    .where('partner_id', '=', accountId)
    .where('mode', '=', mode)
    .orderBy('created_at', 'desc')
    .orderBy('key_id')
    .limit(MAX_LISTED_API_KEYS)
    .execute();
}

/** One partner's requests in one API version (null: logged before versions existed). */
export interface ApiVersionUsageRow {
  partner_id: string;
  name: string;
  /** The partner's pin. */
  pin: string;
  /** The partner's requests in every version counted, and how many partners were counted. */
  total: string;
  partners: string;
  api_version: string | null;
  requests: string;
  last_at: Date;
}

/**
 * How many requests each partner (its live and test tenants together) made in each API
 * version since `since` (the whole log, its retention window, when absent), in one version
 * when `version` is given: the `maxPartners` partners with the most requests, most first. The
 * log is grouped by tenant before partners are joined, so the join is of the small groups.
 */
export async function apiVersionUsage(
  db: Db,
  query: { since?: Date; version?: string; maxPartners: number },
): Promise<ApiVersionUsageRow[]> {
  const since = query.since === undefined ? sql`true` : sql`at >= ${query.since}`;
  const version = query.version === undefined ? sql`true` : sql`api_version = ${query.version}`;
  const { rows } = await sql<ApiVersionUsageRow>`
    with by_tenant as (
      select tenant_id, api_version, count(*) as requests, max(at) as last_at
      from request_log where ${since} and ${version}
      group by tenant_id, api_version
    ), usage as (
      select p.partner_id, t.api_version, sum(t.requests) as requests, max(t.last_at) as last_at
      from by_tenant t join partners p on t.tenant_id in (p.partner_id, p.test_partner_id)
      group by p.partner_id, t.api_version
    ), ranked as (
      select partner_id, sum(requests) as total, count(*) over () as partners
      from usage group by partner_id
      order by total desc, partner_id
      limit ${query.maxPartners}
    )
    select r.partner_id, p.name, p.api_version as pin, r.total::text, r.partners::text,
      u.api_version, u.requests::text, u.last_at
    from ranked r join usage u using (partner_id) join partners p using (partner_id)
    order by r.total desc, r.partner_id, u.api_version nulls first
  `.execute(db);
  return rows;
}
