import type { PartnerKind, PartnerMode, PaymentType, RateLimitBucket } from '@pcp/contracts';
import type { ColumnType, Generated, JSONColumnType, Selectable } from 'kysely';
import type { RequestLogTable, RequestLogTenantRowsTable } from './request-log.table.js';

export type RateClass = RateLimitBucket;
/** Per-partner overrides of the per-minute limits; absent classes use the defaults. */
export type RateLimitOverrides = Partial<Record<RateClass, number>>;

export interface PartnerTable {
  partner_id: Generated<string>;
  /** The partner's test tenant: what its test keys act as (docs/guide/sandbox.md#modes). */
  test_partner_id: Generated<string>;
  kind: PartnerKind;
  name: string;
  payment_types: PaymentType[];
  rate_limits: JSONColumnType<RateLimitOverrides>;
  created_at: Generated<Date>;
  /** Set while the partner is suspended: none of its keys authenticates. */
  suspended_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /**
   * The dated API version the partner is pinned to, for its live and test keys alike
   * (docs/guide/requests.md#api-version). Text: a row may name a version this code does not
   * know (written by a newer release, then rolled back).
   */
  api_version: string;
}

export interface ApiKeyTable {
  /** Public part of the key, printed in it; looked up by index. */
  key_id: string;
  partner_id: string;
  /** SHA-256 of the whole key; the key itself is never stored. */
  key_hash: Buffer;
  /** Which of the partner's tenants the key acts as; printed in the key too. */
  mode: Generated<PartnerMode>;
  created_at: Generated<Date>;
  revoked_at: Date | null;
  /** When a request last used it, written at most once a minute per key and replica. */
  last_used_at: ColumnType<Date | null, never, Date>;
}

/** A console session (docs/guide/authentication.md#console-sessions). */
export interface ConsoleSessionTable {
  /** SHA-256 of the session's random token; the token itself is only in the cookie. */
  token_hash: Buffer;
  /** The key it was made from: the session lives only while the key is active. */
  key_id: string;
  /** The partner (its live id), as admin commands name it. */
  partner_id: string;
  /** The tenant the key acts as: the partner's id, or its test tenant's. */
  tenant_id: string;
  kind: PartnerKind;
  mode: PartnerMode;
  created_at: Generated<Date>;
  /** The absolute end of the session, whatever its use. */
  expires_at: Date;
  /** The session's last request, updated at most about once a minute (the idle timeout). */
  last_seen_at: Generated<Date>;
}

export type PartnerRow = Selectable<PartnerTable>;
export type ConsoleSessionRow = Selectable<ConsoleSessionTable>;

export interface GatewayDatabase {
  partners: PartnerTable;
  api_keys: ApiKeyTable;
  console_sessions: ConsoleSessionTable;
  request_log: RequestLogTable;
  request_log_tenant_rows: RequestLogTenantRowsTable;
}
