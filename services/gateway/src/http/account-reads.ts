import type {
  ApiKeyList,
  ErrorCode,
  PartnerKind,
  RateLimitBucket,
  RateLimitUsage,
  RequestErrorGroups,
  RequestLogPage,
  RequestLogQuery,
} from '@pcp/contracts';
import { decodeCursor, encodeCursor } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { Principal } from '../auth/authenticator.js';
import { errorDocUrl } from '../docs/error-pages.js';
import type { GatewayDatabase } from '../db/partner.table.js';
import { errorGroups, listKeys, listRequests } from '../db/request-log.repository.js';
import type { RateLimiter } from './rate-limit.js';

/** What the partner's account routes read (docs/guide/requests.md): the caller's own only. */
export interface AccountReads {
  readonly requests: (principal: Principal, query: RequestLogQuery) => Promise<RequestLogPage>;
  readonly errors: (principal: Principal) => Promise<RequestErrorGroups>;
  readonly keys: (principal: Principal) => Promise<ApiKeyList>;
  readonly rateLimits: (principal: Principal) => Promise<RateLimitUsage>;
}

/** How far back `errors` groups. */
const ERROR_WINDOW_MS = 86_400_000;

/** The budgets each kind of partner's routes count against (discovery is the marketfront's). */
const bucketsOf: Record<PartnerKind, readonly RateLimitBucket[]> = {
  commerce: ['reads', 'writes'],
  distribution: ['reads', 'writes', 'discovery'],
};

/** The account reads over the gateway's database and the rate limiter's counters. */
export function createAccountReads(deps: {
  db: Kysely<GatewayDatabase>;
  rateLimiter: RateLimiter;
  docsUrl: string;
}): AccountReads {
  const { db } = deps;
  return {
    async requests(principal, query) {
      const before =
        query.before === undefined ? undefined : decodeCursor(query.before, 'before', 'bigint');
      const status =
        query.status === undefined || query.status === 'error'
          ? query.status
          : Number(query.status);
      const page = await listRequests(
        db,
        principal.partnerId,
        { limit: query.limit, status, errorCode: query.errorCode, apiVersion: query.apiVersion },
        before,
      );
      return {
        requests: page.rows.map((row) => ({
          at: row.at.toISOString(),
          method: row.method,
          path: row.path,
          status: row.status,
          ...(row.error_code === null ? {} : { errorCode: row.error_code }),
          requestId: row.request_id,
          ...(row.client_request_id === null ? {} : { clientRequestId: row.client_request_id }),
          ...(row.idempotency_key === null ? {} : { idempotencyKey: row.idempotency_key }),
          latencyMs: row.latency_ms,
          ...(row.api_version === null ? {} : { apiVersion: row.api_version }),
        })),
        ...(page.next ? { nextCursor: encodeCursor(page.next) } : {}),
      };
    },

    async errors(principal) {
      const since = new Date(Date.now() - ERROR_WINDOW_MS);
      const groups = await errorGroups(db, principal.partnerId, since);
      return {
        since: since.toISOString(),
        groups: groups.map((group) => ({
          errorCode: group.error_code,
          status: group.status,
          count: Number(group.count),
          lastAt: new Date(group.last_at).toISOString(),
          lastRequestId: group.last_request_id,
          docsUrl: errorDocUrl(deps.docsUrl, group.error_code as ErrorCode),
        })),
      };
    },

    async keys(principal) {
      const keys = await listKeys(db, principal.accountId, principal.mode);
      return {
        keys: keys.map((key) => ({
          keyId: key.key_id,
          mode: key.mode,
          createdAt: key.created_at.toISOString(),
          ...(key.last_used_at ? { lastUsedAt: key.last_used_at.toISOString() } : {}),
          ...(key.revoked_at ? { revokedAt: key.revoked_at.toISOString() } : {}),
        })),
      };
    },

    async rateLimits(principal) {
      const now = Date.now();
      const windows = await deps.rateLimiter.usage(
        principal.partnerId,
        bucketsOf[principal.kind],
        principal.rateLimits,
      );
      return {
        limits: windows.map((window) => ({
          bucket: window.rateClass,
          limitPerMinute: window.limit,
          used: window.used,
          remaining: Math.max(0, window.limit - window.used),
          resetsAt: new Date(now + window.msLeft).toISOString(),
        })),
      };
    },
  };
}
