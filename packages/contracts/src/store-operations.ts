import { z } from 'zod';
import { availability, END_OF_DAY, localTime } from './availability.js';
import { dateTime, guid } from './common.js';
import { exampleIds } from './examples.js';

/**
 * Store operations a kitchen runs day to day (docs/guide/stores.md): special hours by date,
 * item availability overrides and the store events distribution partners subscribe to.
 */

/** A calendar date `YYYY-MM-DD` (read in the store's time zone). */
export const localDate = z
  .string()
  .regex(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/, 'Expected a date YYYY-MM-DD')
  .refine((value) => {
    const date = new Date(`${value}T00:00:00Z`);
    return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
  }, 'Not a calendar date');

/** Most special days one store keeps (a year and a leap day). */
export const MAX_SPECIAL_DAYS = 366;
/** Most opening windows on one special day. */
export const MAX_SPECIAL_DAY_WINDOWS = 6;

/** One opening window of a special day: `end` after `start`, or 00:00:00 for end of day. */
export const specialDayWindow = z
  .strictObject({ start: localTime, end: localTime })
  .refine((window) => window.end === END_OF_DAY || window.start < window.end, {
    message: 'end must be after start (use 00:00:00 for end of day)',
    path: ['end'],
  });
export type SpecialDayWindow = z.infer<typeof specialDayWindow>;

/**
 * A date whose hours replace the weekly hours: closed all day, or open in its own windows
 * (which must not overlap).
 */
export const specialDay = z.union([
  z.strictObject({ date: localDate, closed: z.literal(true) }),
  z.strictObject({
    date: localDate,
    windows: z.array(specialDayWindow).min(1).max(MAX_SPECIAL_DAY_WINDOWS),
  }),
]);
export type SpecialDay = z.infer<typeof specialDay>;

const secondsOf = (time: string) => {
  const [h = 0, m = 0, s = 0] = time.split(':').map(Number);
  return h * 3_600 + m * 60 + s;
};
const windowEnd = (time: string) => (time === END_OF_DAY ? 86_400 : secondsOf(time));

/** Special days as stored and read: each date once, windows not overlapping. */
export const specialDays = z
  .array(specialDay)
  .max(MAX_SPECIAL_DAYS)
  .superRefine((days, ctx) => {
    const seen = new Set<string>();
    days.forEach((day, index) => {
      if (seen.has(day.date)) {
        ctx.addIssue({ code: 'custom', message: 'Each date once', path: [index, 'date'] });
      }
      seen.add(day.date);
      if (!('windows' in day)) return;
      const sorted = day.windows
        .map((window, at) => ({ at, start: secondsOf(window.start), end: windowEnd(window.end) }))
        .sort((a, b) => a.start - b.start);
      for (let i = 1; i < sorted.length; i++) {
        if (sorted[i]!.start < sorted[i - 1]!.end) {
          ctx.addIssue({
            code: 'custom',
            message: 'Windows of one day must not overlap',
            path: [index, 'windows', sorted[i]!.at, 'start'],
          });
        }
      }
    });
  });

/** Body of `PUT /v1/commerce/stores/{storeId}/special-hours`, and what `GET` reads. */
export const specialHours = z.strictObject({ days: specialDays }).meta({
  examples: [
    {
      days: [
        { date: '2026-12-24', windows: [{ start: '08:00:00', end: '14:00:00' }] },
        { date: '2026-12-25', closed: true },
      ],
    },
  ],
});
export type SpecialHours = z.infer<typeof specialHours>;

/** Most overrides one call sets or clears. */
export const MAX_ITEM_AVAILABILITY_CHANGES = 1_000;
/** Most item ids one deny (a cancel of a pending order) makes unavailable. */
export const MAX_DENIED_ITEMS = 100;

/**
 * One override: `available: false` hides the item from carts and orders until `until` (null:
 * until cleared); `available: true` clears the item's override.
 */
export const itemAvailabilityChange = z.strictObject({
  itemId: guid,
  available: z.boolean(),
  until: dateTime.nullable().optional(),
});
export type ItemAvailabilityChange = z.infer<typeof itemAvailabilityChange>;

/** Body of `PUT /v1/commerce/stores/{storeId}/item-availability`. */
export const setItemAvailabilityInput = z
  .strictObject({
    items: z.array(itemAvailabilityChange).min(1).max(MAX_ITEM_AVAILABILITY_CHANGES),
  })
  .meta({
    examples: [
      {
        items: [
          { itemId: exampleIds.fries, available: false, until: '2026-11-23T06:00:00Z' },
          { itemId: exampleIds.burger, available: true },
        ],
      },
    ],
  });
export type SetItemAvailabilityInput = z.infer<typeof setItemAvailabilityInput>;

/** A current override: the item is unavailable until `until` (null: until cleared). */
export const itemAvailabilityOverride = z.object({
  itemId: guid,
  available: z.literal(false),
  until: dateTime.nullable(),
});
export type ItemAvailabilityOverride = z.infer<typeof itemAvailabilityOverride>;

/**
 * A store's current overrides; `version` grows by one with every change (a reader that has
 * seen this version has seen every override in it).
 */
export const itemAvailabilityList = z
  .object({
    items: z.array(itemAvailabilityOverride),
    version: z.number().int().nonnegative(),
  })
  .meta({
    examples: [
      {
        items: [{ itemId: exampleIds.fries, available: false, until: '2026-11-23T06:00:00Z' }],
        version: 4,
      },
    ],
  });
export type ItemAvailabilityList = z.infer<typeof itemAvailabilityList>;

/** The store events a webhook endpoint may subscribe to (docs/guide/webhooks.md). */
export const storeEventKind = z.enum([
  'store.status_changed',
  'store.hours_changed',
  'store.items_availability_changed',
  'catalog.activated',
]);
export type StoreEventKind = z.infer<typeof storeEventKind>;

/** Who set a pause: the store's partner, or the platform (orders not accepted in time). */
export const pausedBy = z.enum(['partner', 'platform']);

/** `store.status_changed`: the store's status as `GET …/status` reads it. */
export const storeStatusChangedData = z.object({
  storeId: guid,
  status: z.enum(['online', 'paused', 'busy']),
  reason: z.string().nullable(),
  pausedAt: dateTime.nullable(),
  resumeAt: dateTime.nullable(),
  extraPrepMinutes: z.number().int().nullable(),
  pausedBy: pausedBy.nullable(),
});

/** `store.hours_changed`: the weekly hours and the special days from today on. */
export const storeHoursChangedData = z.object({
  storeId: guid,
  timezone: z.string(),
  availability: availability,
  specialDays: specialDays,
});

/** `store.items_availability_changed`: the items one change touched. */
export const storeItemsAvailabilityChangedData = z.object({
  storeId: guid,
  /** The overrides' version after this change (`GET …/item-availability`). */
  itemAvailabilityVersion: z.number().int().nonnegative(),
  /** `available: true` where an override was cleared (or dropped with its item). */
  items: z
    .array(z.object({ itemId: guid, available: z.boolean(), until: dateTime.nullable() }))
    .max(MAX_ITEM_AVAILABILITY_CHANGES),
});

/** `catalog.activated`: the store's new active CatalogSet. */
export const storeCatalogActivatedData = z.object({
  storeId: guid,
  catalogSetId: guid,
  etag: z.string(),
  activatedAt: dateTime,
});

/**
 * What each store event says, without its `version` (the event envelope's: one more for each
 * event of the store, so a receiver applies an event only over an older version).
 */
export const storeEventData = z.discriminatedUnion('event', [
  storeStatusChangedData.extend({ event: z.literal('store.status_changed') }),
  storeHoursChangedData.extend({ event: z.literal('store.hours_changed') }),
  storeItemsAvailabilityChangedData.extend({
    event: z.literal('store.items_availability_changed'),
  }),
  storeCatalogActivatedData.extend({ event: z.literal('catalog.activated') }),
]);
export type StoreEventData = z.infer<typeof storeEventData>;
