import { subjects } from '@pcp/contracts';
import {
  AppError,
  readChunks,
  visibleMode,
  type BusClient,
  type Logger,
  type RequestContext,
} from '@pcp/service-kit';
import { LRUCache } from 'lru-cache';
import type { CompiledCatalog } from './compiled-catalog.js';
import type { CatalogCompilePool } from './compile-pool.js';
import { createFairQueue } from './fair-queue.js';
import { singleFlight } from './single-flight.js';

export interface StorePricingData {
  catalog: CompiledCatalog;
  timezone: string;
}

/** How long a store's active version is trusted without an event confirming it. */
const ACTIVE_VERSION_TTL_MS = 5_000;

/** Stores whose time zone and active version are remembered (a few hundred bytes each). */
const MAX_STORES_REMEMBERED = 100_000;

/** When a partner whose compiles are all taken may try again (a 100k-item one takes ~2 s). */
const COMPILE_RETRY_AFTER_SECONDS = 2;

/** The turn of compiles prefetched on catalog.v1.activated events (no partner asked). */
const ACTIVATION_TURN = 'catalog.v1.activated';

/**
 * Compiled catalogs by version, fetched and compiled once (concurrent callers share the
 * load), kept in an LRU bounded by `maxBytes`. Which version is active comes from
 * catalog.v1.activated events; the catalog service shows an ingest as succeeded only
 * after publishing that event, and this connection receives it before any later request,
 * so a cart priced right after an activation uses the new catalog. The TTL covers an event
 * missed while disconnected. Store time zones are cached briefly.
 *
 * Compiling a version (download, then parse, check and index on a compile thread) takes a
 * slot of `compiles`, shared fairly among the partners whose carts and orders need one; a
 * partner with its whole share queued is told to retry (429 RATE_LIMITED with Retry-After).
 */
export function createCatalogCache(options: {
  bus: BusClient;
  logger: Logger;
  /** Memory budget of compiled catalogs (bytes). */
  maxBytes: number;
  pool: CatalogCompilePool;
  compiles: { concurrency: number; perPartner: number; queuedPerPartner: number };
  storeTtlMs?: number;
  activeVersionTtlMs?: number;
}) {
  const activeVersionTtlMs = options.activeVersionTtlMs ?? ACTIVE_VERSION_TTL_MS;
  const versions = new LRUCache<string, CompiledCatalog>({ maxSize: options.maxBytes });
  const timezones = new LRUCache<string, string>({
    max: MAX_STORES_REMEMBERED,
    ttl: options.storeTtlMs ?? 30_000,
  });
  const activeVersions = new LRUCache<
    string,
    { versionId: string; activatedAt: string; expiresAt: number }
  >({ max: MAX_STORES_REMEMBERED });
  const compileTurns = createFairQueue(options.compiles);

  async function fetchVersion(storeId: string, ctx: RequestContext): Promise<CompiledCatalog> {
    const described = await options.bus.request(subjects.catalog.document, { storeId }, ctx);
    const cached = versions.get(described.versionId);
    if (cached) return cached;
    // Chunks are copied into one buffer as they arrive (each is garbage at once), which the
    // compile thread then takes over without a copy.
    const bytes = new Uint8Array(described.totalBytes);
    let received = 0;
    for await (const chunk of readChunks(described.chunks, (index) =>
      options.bus.requestRaw(
        subjects.catalog.documentChunk,
        { versionId: described.versionId, index },
        ctx,
      ),
    )) {
      if (received + chunk.length > bytes.length) break;
      bytes.set(chunk, received);
      received += chunk.length;
    }
    if (received !== bytes.length) {
      options.logger.error(
        { storeId, versionId: described.versionId, received, totalBytes: bytes.length },
        'catalog document chunks do not add up to its size',
      );
      throw new AppError('INTERNAL', 'Internal error');
    }
    const compiled = await options.pool.compile(bytes, described.versionId);
    if (!compiled) {
      options.logger.error(
        { storeId, versionId: described.versionId },
        'active CatalogSet does not match its contract',
      );
      throw new AppError('INTERNAL', 'Internal error');
    }
    // A catalog over the whole budget is still returned to the carts waiting on it, but not
    // kept (lru-cache refuses an entry larger than maxSize).
    versions.set(compiled.versionId, compiled, { size: Math.max(1, compiled.bytes) });
    return compiled;
  }

  const versionLoads = singleFlight<CompiledCatalog>();
  const activeLookups = singleFlight<string>();
  const timezoneLookups = singleFlight<string>();

  function load(
    turn: string,
    storeId: string,
    versionId: string,
    ctx: RequestContext,
  ): Promise<CompiledCatalog> {
    const cached = versions.get(versionId);
    if (cached) return Promise.resolve(cached);
    return versionLoads(versionId, async () => {
      const compiling = compileTurns.run(turn, () => fetchVersion(storeId, ctx));
      if (!compiling) {
        throw new AppError(
          'RATE_LIMITED',
          'This partner already has the most catalogs compiling on this replica; retry shortly',
          { retryAfterSeconds: COMPILE_RETRY_AFTER_SECONDS },
        );
      }
      return compiling;
    });
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

  // The store lookup is also what says the request may see the store: stores answers
  // STORE_NOT_FOUND to a request of another mode (docs/guide/sandbox.md#modes). So its answer
  // is remembered per mode, and a catalog cached for one mode's requests never prices the
  // other's carts.
  function timezoneOf(storeId: string, ctx: RequestContext): Promise<string> {
    const key = `${visibleMode(ctx) ?? 'platform'}:${storeId}`;
    const hit = timezones.get(key);
    if (hit) return Promise.resolve(hit);
    return timezoneLookups(key, async () => {
      const store = await options.bus.request(subjects.stores.lookup, { storeId }, ctx);
      timezones.set(key, store.timezone);
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
        // Requests without a partner (internal callers) share one turn.
        catalog: await load(ctx.partnerId ?? '', storeId, active.value, ctx),
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
      load(ACTIVATION_TURN, storeId, versionId, { requestId }).catch((error: unknown) =>
        options.logger.warn({ err: error, storeId, versionId }, 'catalog prefetch failed'),
      );
    },
  };
}
export type CatalogCache = ReturnType<typeof createCatalogCache>;
