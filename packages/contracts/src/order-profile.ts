import { z } from 'zod';
import { isWithinHours, nextHoursOpening, type OpeningHours } from './availability.js';
import { dateTime, guid } from './common.js';
import { specialDay } from './store-operations.js';
import {
  marketfrontStore,
  storeStatusValue,
  type Coordinates,
  type MarketfrontStore,
  type OrderContext,
  type StoreAvailability,
} from './stores.js';

/**
 * Reply of `stores.v1.order-profile`: a store as it stands, with no instant in it, so ordering
 * can keep it and derive the order context at any instant (`orderContextAt`), exactly as
 * `stores.v1.order-context` would. Internal to the platform; never a secret.
 */
export const orderProfile = z.object({
  /** The marketfront view without what depends on the instant. */
  store: marketfrontStore.omit({
    status: true,
    extraPrepMinutes: true,
    isOpenNow: true,
    nextOpenAt: true,
  }),
  /** The status as stored: a spell past its `resumeAt` is over (derived, no job). */
  status: z.object({
    status: storeStatusValue,
    resumeAt: dateTime.nullable(),
    extraPrepMinutes: z.number().int().nullable(),
  }),
  specialDays: z.array(specialDay),
  ownerPartnerId: guid,
  itemAvailabilityVersion: z.number().int().nonnegative(),
  submission: z.object({ url: z.string() }).nullable(),
});
export type OrderProfile = z.infer<typeof orderProfile>;

/** What a store's marketfront view at any instant is derived from (`marketfrontStoreAt`). */
export type StoreStanding = Pick<OrderProfile, 'store' | 'status' | 'specialDays'>;

/** What `storeAvailabilityAt` reads of a store. */
export interface AvailabilityInputs {
  readonly storeId: string;
  readonly status: 'online' | 'paused' | 'busy';
  readonly resumeAt: Date | null;
  readonly hours: OpeningHours;
  readonly timezone: string;
}

/**
 * Takes orders at `instant`: online or busy, or paused until a `resumeAt` that has come
 * (derived, no job). A busy spell past its `resumeAt` is online, so takes orders too.
 */
export function takesOrdersAt(store: AvailabilityInputs, instant: Date): boolean {
  return store.status !== 'paused' || (store.resumeAt !== null && store.resumeAt <= instant);
}

/**
 * Whether the store takes orders at `instant` (not paused, and inside its hours, special days
 * included, in its own time zone) and, when not, the next instant it will
 * (docs/guide/stores.md#special-hours). A pause without `resumeAt` lasts until the partner
 * ends it, so it never reopens on its own.
 */
export function storeAvailabilityAt(store: AvailabilityInputs, instant: Date): StoreAvailability {
  const online = takesOrdersAt(store, instant);
  const open = online && isWithinHours(store.hours, store.timezone, instant);
  let nextOpenAt: Date | null = null;
  if (!open) {
    const from = online ? instant : store.resumeAt;
    nextOpenAt = from ? nextHoursOpening(store.hours, store.timezone, from) : null;
  }
  return {
    storeId: store.storeId,
    at: instant.toISOString(),
    open,
    closedReason: open ? null : online ? 'outside_hours' : 'paused',
    nextOpenAt: nextOpenAt?.toISOString() ?? null,
    timezone: store.timezone,
  };
}

function availabilityInputs(profile: StoreStanding): AvailabilityInputs {
  const { resumeAt } = profile.status;
  return {
    storeId: profile.store.storeId,
    status: profile.status.status,
    resumeAt: resumeAt === null ? null : new Date(resumeAt),
    hours: { windows: profile.store.availability, specialDays: profile.specialDays },
    timezone: profile.store.timezone,
  };
}

/** The marketfront view of the store at `now`, given its availability then. */
function marketfrontStoreWith(
  profile: StoreStanding,
  now: Date,
  availability: StoreAvailability,
): MarketfrontStore {
  const { status, resumeAt, extraPrepMinutes } = profile.status;
  const spellOver = resumeAt !== null && new Date(resumeAt).getTime() <= now.getTime();
  const current = spellOver ? 'online' : status;
  return {
    ...profile.store,
    status: current,
    extraPrepMinutes: current === 'busy' ? extraPrepMinutes : null,
    isOpenNow: availability.open,
    nextOpenAt: availability.nextOpenAt,
  };
}

/** The store as distribution partners see it at `now`. */
export function marketfrontStoreAt(profile: StoreStanding, now: Date): MarketfrontStore {
  return marketfrontStoreWith(profile, now, storeAvailabilityAt(availabilityInputs(profile), now));
}

/**
 * The reply of `stores.v1.order-context` for the store at `now`, asked about `at`: what stores
 * answers and what ordering derives from a kept profile, by one function.
 */
export function orderContextAt(profile: OrderProfile, now: Date, at: Date): OrderContext {
  const inputs = availabilityInputs(profile);
  const nowAvailability = storeAvailabilityAt(inputs, now);
  return {
    store: marketfrontStoreWith(profile, now, nowAvailability),
    availability:
      at.getTime() === now.getTime() ? nowAvailability : storeAvailabilityAt(inputs, at),
    ownerPartnerId: profile.ownerPartnerId,
    itemAvailabilityVersion: profile.itemAvailabilityVersion,
    submission: profile.submission,
  };
}

/** Mean Earth radius (IUGG), the sphere the distances are measured on. */
export const EARTH_RADIUS_METERS = 6_371_008.8;

const radians = (degrees: number) => (degrees * Math.PI) / 180;

/** Great-circle (haversine) distance in meters. */
export function distanceMeters(a: Coordinates, b: Coordinates): number {
  const h =
    Math.sin(radians(b.latitude - a.latitude) / 2) ** 2 +
    Math.cos(radians(a.latitude)) *
      Math.cos(radians(b.latitude)) *
      Math.sin(radians(b.longitude - a.longitude) / 2) ** 2;
  return 2 * EARTH_RADIUS_METERS * Math.asin(Math.min(1, Math.sqrt(h)));
}

/**
 * Whether a store delivers to `point`: it offers DELIVERY_BY_MERCHANT and the point lies
 * within its radius (whole meters), with the distance and the radius it was held to.
 */
export function deliveryReach(
  store: Pick<MarketfrontStore, 'fulfillmentTypes' | 'address' | 'delivery'>,
  point: Coordinates,
): { deliverable: boolean; distanceMeters: number; radiusMeters: number | null } {
  const distance = Math.round(distanceMeters(point, store.address));
  const radius = store.fulfillmentTypes.includes('DELIVERY_BY_MERCHANT')
    ? (store.delivery?.radiusMeters ?? null)
    : null;
  return {
    deliverable: radius !== null && distance <= radius,
    distanceMeters: distance,
    radiusMeters: radius,
  };
}
