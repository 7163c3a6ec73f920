import { catalogSetDocument, subjects } from '@pcp/contracts';
import { AppError, type BusClient, type Logger, type RequestContext } from '@pcp/service-kit';
import { compileCatalog, type CompiledCatalog } from '../domain/compiled-catalog.js';

/** A CatalogSet can be up to 50 MB; give its transfer time. */
const DOCUMENT_TIMEOUT_MS = 30_000;

export interface StorePricingData {
  catalog: CompiledCatalog;
  timezone: string;
}

/** How long a store's active version is trusted without an event confirming it. */
const ACTIVE_VERSION_TTL_MS = 5_000;

/**
 * One lookup per key at a time: callers arriving while it runs share its result, so an
 * entry expiring under load costs its service one request, not one per waiting caller.
 */
function singleFlight<T>(): (key: string, lookup: () => Promise<T>) => Promise<T> {
  const inFlight = new Map<string, Promise<T>>();
  return (key, lookup) => {
    let pending = inFlight.get(key);
    if (!pending) {
      pending = lookup().finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };
}

/**
 * Compiled catalogs by version, fetched and compiled once (concurrent callers share the
 * load). Which version is active comes from catalog.v1.activated events; the catalog
 * service shows an ingest as succeeded only after publishing that event, and this
 * connection receives it before any later request, so a cart priced right after an
 * activation uses the new catalog. The TTL covers an event missed while disconnected.
 * Store time zones are cached briefly.
 */
export function createCatalogCache(options: {
  bus: BusClient;
  logger: Logger;
  /** Bound on cached items across versions (memory). */
  maxItems?: number;
  storeTtlMs?: number;
  activeVersionTtlMs?: number;
}) {
  const maxItems = options.maxItems ?? 2_000_000;
  const storeTtlMs = options.storeTtlMs ?? 30_000;
  const activeVersionTtlMs = options.activeVersionTtlMs ?? ACTIVE_VERSION_TTL_MS;
  const versions = new Map<string, CompiledCatalog>();
  const timezones = new Map<string, { timezone: string; expiresAt: number }>();
  const activeVersions = new Map<
    string,
    { versionId: string; activatedAt: string; expiresAt: number }
  >();
  let cachedItems = 0;

  function remember(catalog: CompiledCatalog) {
    versions.set(catalog.versionId, catalog);
    cachedItems += catalog.items.size;
    for (const [versionId, old] of versions) {
      if (cachedItems <= maxItems || versions.size === 1) break;
      versions.delete(versionId);
      cachedItems -= old.items.size;
    }
  }

  async function fetchVersion(storeId: string, ctx: RequestContext): Promise<CompiledCatalog> {
    const { result, body } = await options.bus.requestStream(
      subjects.catalog.document,
      { storeId },
      ctx,
      {
        timeoutMs: DOCUMENT_TIMEOUT_MS,
      },
    );
    const cached = versions.get(result.versionId);
    if (cached) return cached;
    const parsed = catalogSetDocument.safeParse(JSON.parse(body.toString('utf8')));
    if (!parsed.success) {
      options.logger.error(
        { storeId, versionId: result.versionId },
        'active CatalogSet does not match its contract',
      );
      throw new AppError('INTERNAL', 'Internal error');
    }
    const compiled = compileCatalog(parsed.data, result.versionId);
    remember(compiled);
    return compiled;
  }

  const versionLoads = singleFlight<CompiledCatalog>();
  const activeLookups = singleFlight<string>();
  const timezoneLookups = singleFlight<string>();

  function load(storeId: string, versionId: string, ctx: RequestContext): Promise<CompiledCatalog> {
    const cached = versions.get(versionId);
    if (cached) return Promise.resolve(cached);
    return versionLoads(versionId, () => fetchVersion(storeId, ctx));
  }

  function activeVersionOf(storeId: string, ctx: RequestContext): Promise<string> {
    const known = activeVersions.get(storeId);
    if (known && known.expiresAt > Date.now()) return Promise.resolve(known.versionId);
    return activeLookups(storeId, async () => {
      const active = await options.bus.request(subjects.catalog.active, { storeId }, ctx);
      // An activation event may have arrived while the answer was on its way: keep the newer.
      const current = activeVersions.get(storeId);
      const newest = current && current.activatedAt > active.activatedAt ? current : active;
      activeVersions.set(storeId, {
        versionId: newest.versionId,
        activatedAt: newest.activatedAt,
        expiresAt: Date.now() + activeVersionTtlMs,
      });
      return newest.versionId;
    });
  }

  function timezoneOf(storeId: string, ctx: RequestContext): Promise<string> {
    const hit = timezones.get(storeId);
    if (hit && hit.expiresAt > Date.now()) return Promise.resolve(hit.timezone);
    return timezoneLookups(storeId, async () => {
      const store = await options.bus.request(subjects.stores.lookup, { storeId }, ctx);
      timezones.set(storeId, { timezone: store.timezone, expiresAt: Date.now() + storeTtlMs });
      return store.timezone;
    });
  }

  return {
    /** The store's active compiled catalog and time zone (STORE_NOT_FOUND, CATALOGSET_NOT_FOUND pass through). */
    async get(storeId: string, ctx: RequestContext): Promise<StorePricingData> {
      const [active, timezone] = await Promise.allSettled([
        activeVersionOf(storeId, ctx),
        timezoneOf(storeId, ctx),
      ]);
      // Both in parallel, but an unknown store is the error to report, not its missing catalog.
      if (timezone.status === 'rejected') throw timezone.reason;
      if (active.status === 'rejected') throw active.reason;
      return {
        catalog: await load(storeId, active.value, ctx),
        timezone: timezone.value,
      };
    },
    /** A catalog.v1.activated event: switch to the new version and compile it ahead of use. */
    activated(storeId: string, versionId: string, activatedAt: string, requestId: string): void {
      // A late event about an older activation changes nothing (ISO instants sort as text).
      const known = activeVersions.get(storeId);
      if (known && known.activatedAt > activatedAt) return;
      activeVersions.set(storeId, {
        versionId,
        activatedAt,
        expiresAt: Date.now() + activeVersionTtlMs,
      });
      load(storeId, versionId, { requestId }).catch((error: unknown) =>
        options.logger.warn({ err: error, storeId, versionId }, 'catalog prefetch failed'),
      );
    },
  };
}
export type CatalogCache = ReturnType<typeof createCatalogCache>;
