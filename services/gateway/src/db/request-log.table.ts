import type { Generated, Selectable } from 'kysely';

/** One authenticated request (docs/guide/requests.md): never its body, headers or query. */
export interface RequestLogTable {
  id: Generated<string>;
  /** The principal's tenant: the partner's id in live mode, its test tenant's in test mode. */
  tenant_id: string;
  at: Date;
  method: string;
  path: string;
  status: number;
  error_code: string | null;
  request_id: string;
  /** The partner's own X-Request-Id (bounded, printable), when it sent one. */
  client_request_id: string | null;
  idempotency_key: string | null;
  latency_ms: number;
  key_id: string;
  /** The API version the request was read and answered in; null before versions existed. */
  api_version: string | null;
}

export type RequestLogRow = Selectable<RequestLogTable>;

/** How many requests the log holds per tenant, kept by triggers (the cap's check). */
export interface RequestLogTenantRowsTable {
  tenant_id: string;
  /** A bigint: node-postgres reads it as a string. */
  row_count: string;
}
