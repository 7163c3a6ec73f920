import type { Migration } from 'kysely';
import * as createPartners from './2026-11-22T0000-create-partners.js';
import * as partnerSuspension from './2026-12-02T0100-partner-suspension.js';
import * as partnerModes from './2026-12-20T0000-partner-modes.js';
import * as consoleSessions from './2026-12-22T0100-console-sessions.js';
import * as requestLog from './2026-12-28T0000-request-log.js';
import * as requestLogTenantRows from './2026-12-30T0000-request-log-tenant-rows.js';
import * as clientRequestIds from './2026-12-30T0100-client-request-ids.js';
import * as requestLogApiVersions from './2026-12-31T0100-request-log-api-versions.js';
import * as partnerApiVersions from './2027-01-02T0000-partner-api-versions.js';

/**
 * Migrations of the `gateway` schema (partners and their API version pins, their API keys,
 * console sessions, the request log).
 */
export const gatewayMigrations: Record<string, Migration> = {
  '2026-11-22T0000-create-partners': createPartners,
  '2026-12-02T0100-partner-suspension': partnerSuspension,
  '2026-12-20T0000-partner-modes': partnerModes,
  '2026-12-22T0100-console-sessions': consoleSessions,
  '2026-12-28T0000-request-log': requestLog,
  '2026-12-30T0000-request-log-tenant-rows': requestLogTenantRows,
  '2026-12-30T0100-client-request-ids': clientRequestIds,
  '2026-12-31T0100-request-log-api-versions': requestLogApiVersions,
  '2027-01-02T0000-partner-api-versions': partnerApiVersions,
};

export const GATEWAY_SCHEMA = 'gateway';
