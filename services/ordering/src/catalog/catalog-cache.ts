import { catalogSetDocument, subjects } from '@pcp/contracts';
import {
  AppError,
  readChunks,
  type BusClient,
  type Logger,
  type RequestContext,
} from '@pcp/service-kit';
import { LRUCache } from 'lru-cache';
import pLimit from 'p-limit';
import { compileCatalog, type CompiledCatalog } from '../domain/compiled-catalog.js';

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
 * A compiled catalog's memory, estimated from its document: measured at 1.2–2× the JSON
 * bytes for generated catalogs of 1k to 100k items (names, prices and indexes are kept;
 * descriptions and image URLs are not, so real catalogs fall below this).
 */
const COMPILED_BYTES_PER_DOCUMENT_BYTE = 2;

/** Stores whose time zone and active version are remembered (a few hundred bytes each). */
const MAX_STORES_REMEMBERED = 100_000;

/** Documents downloaded and compiled at once: each holds a parsed document transiently. */
const CONCURRENT_COMPILES = 2;

/**
 * Compiled catalogs by version, fetched and compiled once (concurrent callers share the
 * load), kept in an LRU bounded by `maxBytes`. Which version is active comes from
 * catalog.v1.activated events; the catalog service shows an ingest as succeeded only
 * after publishing that event, and this connection receives it before any later request,
 * so a cart priced right after an activation uses the new catalog. The TTL covers an event
 * missed while disconnected. Store time zones are cached briefly.
 */
export function createCatalogCache(options: {
  bus: BusClient;
  logger: Logger;
  /** Memory budget of compiled catalogs (estimated bytes). */
  maxBytes: number;
  storeTtlMs?: number;
  activeVersionTtlMs?: number;
}) {
  const activeVersionTtlMs = options.activeVersionTtlMs ?? ACTIVE_VERSION_TTL_MS;
  // A catalog over the whole budget is still compiled for the carts waiting on it, but not
  // kept (lru-cache refuses an entry larger than maxSize).
  const versions = new LRUCache<string, CompiledCatalog>({ maxSize: options.maxBytes });
  const timezones = new LRUCache<string, string>({
    max: MAX_STORES_REMEMBERED,
    ttl: options.storeTtlMs ?? 30_000,
  });
  const activeVersions = new LRUCache<
    string,
    { versionId: string; activatedAt: string; expiresAt: number }
  >({ max: MAX_STORES_REMEMBERED });
  const compileSlots = pLimit(CONCURRENT_COMPILES);

  async function fetchVersion(storeId: string, ctx: RequestContext): Promise<CompiledCatalog> {
    const described = await options.bus.request(subjects.catalog.document, { storeId }, ctx);
    const cached = versions.get(described.versionId);
    if (cached) return cached;
    const chunks: Buffer[] = [];
    for await (const chunk of readChunks(described.chunks, (index) =>
      options.bus.requestRaw(
        subjects.catalog.documentChunk,
        { versionId: described.versionId, index },
        ctx,
      ),
    )) {
      chunks.push(chunk);
    }
    const parsed = catalogSetDocument.safeParse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    if (!parsed.success) {
      options.logger.error(
        { storeId, versionId: described.versionId },
        'active CatalogSet does not match its contract',
      );
      throw new AppError('INTERNAL', 'Internal error');
    }
    const compiled = compileCatalog(parsed.data, described.versionId);
    versions.set(compiled.versionId, compiled, {
      size: Math.max(1, described.totalBytes * COMPILED_BYTES_PER_DOCUMENT_BYTE),
    });
    return compiled;
  }

  const versionLoads = singleFlight<CompiledCatalog>();
  const activeLookups = singleFlight<string>();
  const timezoneLookups = singleFlight<string>();

  function load(storeId: string, versionId: string, ctx: RequestContext): Promise<CompiledCatalog> {
    const cached = versions.get(versionId);
    if (cached) return Promise.resolve(cached);
    return versionLoads(versionId, () => compileSlots(() => fetchVersion(storeId, ctx)));
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
    if (hit) return Promise.resolve(hit);
    return timezoneLookups(storeId, async () => {
      const store = await options.bus.request(subjects.stores.lookup, { storeId }, ctx);
      timezones.set(storeId, store.timezone);
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
