import { catalogLimits } from '@pcp/contracts';
import { safeFetch, type AddressAllowlist, type SafeFetchResult } from '@pcp/service-kit';

/** The operator's download settings (CATALOG_FETCH_*), the same for ingest and its dry run. */
export interface CatalogFetchSettings {
  allowHttp: boolean;
  allowlist: AddressAllowlist;
  timeoutMs: number;
  connectTimeoutMs: number;
  /** The slowest average rate tolerated after a grace; undefined: no floor. */
  minRate: { bytesPerSec: number; graceMs: number } | undefined;
}

/**
 * Download a partner's CatalogSet from its callbackUrl under the rules of
 * docs/guide/catalogs.md#download-rules: https only unless allowed, public or allow-listed
 * addresses, 3 redirects, timeouts and the 50 MB cap while streaming. Ingest and the dry run both
 * download through this, so a dry run refuses exactly what an ingest would, with the same
 * partner-safe message.
 */
export function downloadCatalogSet(
  callbackUrl: string,
  settings: CatalogFetchSettings,
  options: { signal?: AbortSignal; onProgress?: () => void } = {},
): Promise<SafeFetchResult> {
  return safeFetch(callbackUrl, {
    allowHttp: settings.allowHttp,
    allowlist: settings.allowlist,
    maxBytes: catalogLimits.maxDocumentBytes,
    maxRedirects: 3,
    urlName: 'callbackUrl',
    connectTimeoutMs: settings.connectTimeoutMs,
    totalTimeoutMs: settings.timeoutMs,
    minRate: settings.minRate,
    ...options,
  });
}
