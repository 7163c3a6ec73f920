import { subjects, type ItemAvailabilityList } from '@pcp/contracts';
import type { BusClient, Logger, RequestContext } from '@pcp/service-kit';
import { LRUCache } from 'lru-cache';
import { singleFlight } from './single-flight.js';

/** A store's item availability overrides, as pricing reads them. */
export interface ItemOverrides {
  /** The overrides' version at the stores service (one more for every change). */
  readonly version: number;
  /** Until when (epoch ms) each overridden item is unavailable; Infinity until cleared. */
  readonly until: ReadonlyMap<string, number>;
}

/** Version 0: no override was ever set for the store. */
export const NO_OVERRIDES: ItemOverrides = { version: 0, until: new Map() };

/**
 * What an entry counts against the byte budget: the entry and its map, and per override the
 * map slot, its 36-character id string and the number. A map of 100,000 overrides built from
 * a lookup's ids measured under 80 bytes per override on Node 20, so this errs high.
 */
const ENTRY_BYTES = 256;
const OVERRIDE_BYTES = 128;
export const overridesBytes = (overrides: ItemOverrides) =>
  ENTRY_BYTES + OVERRIDE_BYTES * overrides.until.size;

/** Stores whose latest announced version is remembered (a number each). */
const MAX_STORES_HEARD = 100_000;

/**
 * How long carts trust an entry before asking stores again in the background: events keep it
 * current, this only heals one missed while disconnected (validate and place compare versions).
 */
const CART_RECHECK_AFTER_MS = 30_000;

/** Lookups one caller makes for a version stores has announced before giving up on it. */
const MAX_LOOKUPS_FOR_VERSION = 3;

interface Entry {
  readonly overrides: ItemOverrides;
  /** When stores last confirmed it (Date.now(); only the cart re-check reads it). */
  checkedAt: number;
}

function toOverrides(list: ItemAvailabilityList): ItemOverrides {
  const until = new Map<string, number>();
  for (const item of list.items) {
    until.set(
      item.itemId.toLowerCase(),
      item.until === null ? Infinity : new Date(item.until).getTime(),
    );
  }
  return { version: list.version, until };
}

/**
 * Each store's item availability overrides on this replica (docs/guide/carts.md#what-a-call-checks),
 * fetched from stores once and kept current by `store.items_availability_changed` events, in
 * an LRU bounded by `maxBytes`. Validate and place pass the version their order context named,
 * so they see a change at once even when its event was missed; with the versions equal they
 * make no request. Carts have no version to compare: they take the entry events keep current,
 * and ask stores again in the background when it has gone unconfirmed for a while.
 */
export function createItemAvailabilityCache(options: {
  bus: BusClient;
  logger: Logger;
  /** Memory budget of the cached overrides (bytes, by `overridesBytes`). */
  maxBytes: number;
  cartRecheckAfterMs?: number;
}) {
  const recheckAfterMs = options.cartRecheckAfterMs ?? CART_RECHECK_AFTER_MS;
  const entries = new LRUCache<string, Entry>({
    maxSize: options.maxBytes,
    sizeCalculation: (entry) => overridesBytes(entry.overrides),
  });
  /** The newest version each store's events announced, whether or not it is cached. */
  const announced = new LRUCache<string, number>({ max: MAX_STORES_HEARD });
  const lookups = singleFlight<ItemOverrides>();

  async function lookup(storeId: string, ctx: RequestContext): Promise<ItemOverrides> {
    const list = await options.bus.request(
      subjects.stores.lookupItemAvailability,
      { storeId },
      ctx,
    );
    const fetched = toOverrides(list);
    // An event's refresh and a request's may cross: never replace a newer version.
    const current = entries.peek(storeId);
    if (current && current.overrides.version > fetched.version) {
      current.checkedAt = Date.now();
      return current.overrides;
    }
    // Overrides over the whole budget still answer the callers waiting, but are not kept
    // (lru-cache refuses an entry larger than maxSize).
    entries.set(storeId, { overrides: fetched, checkedAt: Date.now() });
    return fetched;
  }

  /** Overrides at `version` or newer: a lookup in flight may predate the change, so ask again. */
  async function lookupAtLeast(
    storeId: string,
    version: number,
    ctx: RequestContext,
  ): Promise<ItemOverrides> {
    let fetched = await lookups(storeId, () => lookup(storeId, ctx));
    for (let tries = 1; fetched.version < version && tries < MAX_LOOKUPS_FOR_VERSION; tries++) {
      fetched = await lookups(storeId, () => lookup(storeId, ctx));
    }
    if (fetched.version < version) {
      options.logger.warn(
        { storeId, version, answered: fetched.version },
        'stores answered an older item availability version than it announced',
      );
      // Stores is the authority (a restored database counts again from an older version):
      // carts stop asking for a version it no longer has.
      announced.set(storeId, fetched.version);
    }
    return fetched;
  }

  const recheck = (storeId: string, ctx: RequestContext) => {
    lookups(storeId, () => lookup(storeId, ctx)).catch((error: unknown) =>
      options.logger.warn({ err: error, storeId }, 'rechecking item availability failed'),
    );
  };

  return {
    /**
     * The overrides an order sees: at least `version`, the one stores named in the order's
     * context (validate and place); no request when this replica holds it already.
     */
    forOrder(storeId: string, version: number, ctx: RequestContext): Promise<ItemOverrides> {
      const need = Math.max(version, announced.get(storeId) ?? 0);
      const entry = entries.get(storeId);
      if (entry && entry.overrides.version >= need) return Promise.resolve(entry.overrides);
      if (!entry && need === 0) return Promise.resolve(NO_OVERRIDES);
      return lookupAtLeast(storeId, need, ctx);
    },
    /** The overrides a cart helper sees: the newest this replica has heard of. */
    async forCart(storeId: string, ctx: RequestContext): Promise<ItemOverrides> {
      const need = announced.get(storeId) ?? 0;
      const entry = entries.get(storeId);
      if (entry && entry.overrides.version >= need) {
        if (Date.now() - entry.checkedAt > recheckAfterMs) recheck(storeId, ctx);
        return entry.overrides;
      }
      try {
        return await lookupAtLeast(storeId, need, ctx);
      } catch (error) {
        // A cart is a preview (validate and place check again): one stores cannot answer now
        // is priced with the overrides this replica last had, if any.
        if (!entry) throw error;
        options.logger.warn({ err: error, storeId }, 'item availability lookup failed');
        return entry.overrides;
      }
    },
    /** A store.items_availability_changed event: fetch the new version ahead of use. */
    changed(storeId: string, version: number, requestId: string): void {
      if ((announced.get(storeId) ?? -1) < version) announced.set(storeId, version);
      const entry = entries.peek(storeId);
      // A store this replica never priced is fetched when first used.
      if (!entry || entry.overrides.version >= version) return;
      lookupAtLeast(storeId, version, { requestId }).catch((error: unknown) =>
        options.logger.warn({ err: error, storeId, version }, 'item availability refresh failed'),
      );
    },
  };
}
export type ItemAvailabilityCache = ReturnType<typeof createItemAvailabilityCache>;
