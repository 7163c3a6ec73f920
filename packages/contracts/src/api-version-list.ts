import { z } from 'zod';

// The versions themselves, apart from their change registry (api-versions.ts), so the schemas
// the change modules read (webhooks.ts) can name a version without an import cycle.

/**
 * The dated API versions (docs/guide/versioning.md), oldest first. A partner is pinned to one;
 * a request may name another with `PCP-Version`. The platform runs the newest code and
 * translates at the edge, one change module per change of each version.
 */
export const API_VERSIONS = ['2026-11-01', '2026-12-01'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

/** The version new partners are pinned to, and the one the code runs. */
export const LATEST_API_VERSION: ApiVersion = API_VERSIONS[API_VERSIONS.length - 1]!;

/** The pin of the partners that existed before versions did. */
export const FIRST_PINNED_API_VERSION: ApiVersion = '2026-12-01';

export const apiVersion = z.enum(API_VERSIONS, {
  error: `one of the API versions: ${API_VERSIONS.join(', ')}`,
});

export function isApiVersion(value: unknown): value is ApiVersion {
  return typeof value === 'string' && (API_VERSIONS as readonly string[]).includes(value);
}

/** Negative when `a` is older than `b`, 0 when equal (dates compare as text). */
export function compareApiVersions(a: ApiVersion, b: ApiVersion): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
