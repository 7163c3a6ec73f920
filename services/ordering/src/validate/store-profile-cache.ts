import { partnerMode, subjects, type OrderProfile } from '@pcp/contracts';
import { visibleMode, type BusClient, type RequestContext } from '@pcp/service-kit';
import { LRUCache } from 'lru-cache';
import { singleFlight } from '../catalog/single-flight.js';

/**
 * How long a profile is trusted without an event: events drop it at once, this only bounds
 * one missed while disconnected.
 */
const PROFILE_TTL_MS = 5_000;

/** Stores whose last change this replica heard of are remembered (a number each). */
const MAX_STORES_HEARD = 100_000;

/** A profile counts twice its JSON length (UTF-16 strings) and some for the entry. */
const ENTRY_BYTES = 256;
const profileBytes = (profile: OrderProfile) => ENTRY_BYTES + 2 * JSON.stringify(profile).length;

/** Every key a store may be cached under: one per mode, and the platform's own calls'. */
const VIEWS = [...partnerMode.options, 'platform'] as const;

/**
 * Each store's order profile (`stores.v1.order-profile`) on this replica, for validate only
 * (place asks stores for the live order context): kept in an LRU bounded by `maxBytes`, at
 * most `ttlMs`, and dropped as soon as any event about the store arrives (a store event or
 * `stores.v1.profile-changed`). A lookup that was under way when an event arrived still
 * answers its callers but is not kept, since it may have read the store before the change.
 *
 * The lookup is also what says the request may see the store: stores answers STORE_NOT_FOUND
 * to a request of another mode (docs/guide/sandbox.md#modes). So a profile is kept per mode,
 * as the catalog cache keeps time zones, and one fetched for a live request never answers a
 * test request.
 */
export function createStoreProfileCache(options: {
  bus: BusClient;
  maxBytes: number;
  ttlMs?: number;
}) {
  const profiles = new LRUCache<string, OrderProfile>({
    maxSize: options.maxBytes,
    sizeCalculation: profileBytes,
    ttl: options.ttlMs ?? PROFILE_TTL_MS,
  });
  /** The count of events heard when each store last changed. */
  const changedAt = new LRUCache<string, number>({ max: MAX_STORES_HEARD });
  let heard = 0;
  const lookups = singleFlight<OrderProfile>();

  return {
    /** The store's profile as this request may see it (STORE_NOT_FOUND passes through). */
    get(storeId: string, ctx: RequestContext): Promise<OrderProfile> {
      const key = `${visibleMode(ctx) ?? 'platform'}:${storeId}`;
      const hit = profiles.get(key);
      if (hit) return Promise.resolve(hit);
      // Callers after an event never join a lookup that began before it.
      const since = changedAt.get(storeId) ?? 0;
      return lookups(`${key}:${since}`, async () => {
        const asked = heard;
        const profile = await options.bus.request(subjects.stores.orderProfile, { storeId }, ctx);
        if ((changedAt.get(storeId) ?? 0) <= asked) profiles.set(key, profile);
        return profile;
      });
    },
    /** An event about the store: its profile is read again on next use. */
    changed(storeId: string): void {
      heard += 1;
      changedAt.set(storeId, heard);
      for (const view of VIEWS) profiles.delete(`${view}:${storeId}`);
    },
  };
}
export type StoreProfileCache = ReturnType<typeof createStoreProfileCache>;
