import type { ApiVersion } from './api-versions.js';

/**
 * When something was deprecated and, once decided, when it goes: each an ISO 8601 date
 * (`2027-03-01`, midnight UTC) or date-time with its offset.
 */
export interface DeprecationDates {
  /** From when it is deprecated: the `Deprecation` header (RFC 9745). */
  readonly since: string;
  /** When it stops answering: the `Sunset` header (RFC 8594), absent until decided. */
  readonly sunset?: string;
}

/** A deprecated operation: linked to its changelog entry, in some versions or all of them. */
export interface OperationDeprecation extends DeprecationDates {
  /**
   * The heading in docs/guide/changelog.md that announces it, as its anchor
   * (`2027-03-01`): the `Link: <…>; rel="deprecation"` target.
   */
  readonly changelogAnchor: string;
  /** Only requests in these versions are told; every version when absent. */
  readonly versions?: readonly ApiVersion[];
}

/**
 * What is deprecated (docs/guide/versioning.md#deprecation): versions, linked to their
 * changelog entry, and operations by operationId.
 */
export interface ApiDeprecations {
  readonly versions: Readonly<Partial<Record<ApiVersion, DeprecationDates>>>;
  readonly operations: Readonly<Record<string, OperationDeprecation>>;
}

/**
 * The deprecation marks, beside the change registry (api-versions.ts): the gateway answers a
 * request in a deprecated version, or of a deprecated operation, with `Deprecation`, `Sunset`
 * and `Link` headers. Nothing is deprecated yet.
 */
export const API_DEPRECATIONS: ApiDeprecations = { versions: {}, operations: {} };
