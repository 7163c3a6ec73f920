import type { PartnerKind, PartnerMode, PaymentType, RateLimitBucket } from '@pcp/contracts';
import type { ColumnType, Generated, JSONColumnType, Selectable } from 'kysely';
import type { RequestLogTable } from './request-log.table.js';

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

export type PartnerRow = Selectable<PartnerTable>;

export interface GatewayDatabase {
  partners: PartnerTable;
  api_keys: ApiKeyTable;
  request_log: RequestLogTable;
}
