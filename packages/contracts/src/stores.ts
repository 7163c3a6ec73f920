import { z } from 'zod';
import { availability } from './availability.js';
import { dateTime, fulfillmentType, guid, moneyAmount } from './common.js';
import { currencyExponent, isKnownCurrency, toScaledInteger } from './money.js';
import { pausedBy } from './store-operations.js';
import {
  commerceStoreExample,
  marketfrontStoreExample,
  storeProfileExample,
  storeStatusExamples,
} from './examples.js';

/** Digits a tax rate may carry: 0.0875 is stored as 87,500 parts per million. */
export const TAX_RATE_DIGITS = 6;

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/**
 * An ISO 4217 code with a minor unit in ISO's table, e.g. USD (one check, so one issue per
 * bad code).
 */
export const currencyCode = z.string().refine(isKnownCurrency, 'Unknown ISO 4217 currency');

export const storeAddress = z.object({
  address1: z.string().trim().min(1).max(200),
  address2: z.string().max(200).nullable().optional(),
  city: z.string().trim().min(1).max(100),
  state: z.string().trim().min(1).max(100),
  postalCode: z.string().trim().min(1).max(20),
  country: z.string().regex(/^[A-Z]{2}$/, 'Expected an ISO 3166-1 alpha-2 code such as US'),
  latitude: z.number().min(-90).max(90),
  longitude: z.number().min(-180).max(180),
});
export type StoreAddress = z.infer<typeof storeAddress>;

/**
 * A resolved, geocoded address as answers carry it: one flat object, the shape of a store's
 * address (docs/guide/stores.md#store-profile) and of an order's delivery address.
 */
export const resolvedAddress = storeAddress.extend({ address2: z.string().nullable() });
export type ResolvedAddress = z.infer<typeof resolvedAddress>;

export const deliverySettings = z.object({
  /**
   * At most 50 km (docs/guide/stores.md#store-profile), so one store cannot widen every delivery
   * search.
   */
  radiusMeters: z.number().int().min(1).max(50_000),
  fee: moneyAmount,
  minimumOrder: moneyAmount,
  etaMinutes: z.number().int().min(1).max(1440),
});

export const pickupSettings = z.object({
  etaMinutes: z.number().int().min(1).max(1440),
});

const storeProfileFields = z.object({
  name: z.string().trim().min(1).max(200),
  phone: z
    .string()
    .regex(/^\+[1-9]\d{6,14}$/, 'Expected an E.164 phone number such as +15551234567'),
  timezone: z.string().refine(isTimeZone, 'Unknown IANA time zone'),
  /** Not in the contract's example: fees are money, so the store names its ISO 4217 currency. */
  currency: currencyCode.optional(),
  /** Coordinates may be left out: the service geocodes the postal code. */
  address: storeAddress
    .extend({
      latitude: storeAddress.shape.latitude.optional(),
      longitude: storeAddress.shape.longitude.optional(),
    })
    .refine((address) => (address.latitude === undefined) === (address.longitude === undefined), {
      message: 'Give both latitude and longitude, or neither',
      path: ['latitude'],
    }),
  fulfillmentTypes: z.array(fulfillmentType).min(1).max(2),
  availability: availability.nullable(),
  delivery: deliverySettings.nullable().optional(),
  pickup: pickupSettings.nullable().optional(),
  taxRate: z.number().min(0).max(1),
  minimumOrder: moneyAmount.optional(),
  orderSubmissionUrl: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .nullable()
    .optional(),
  /**
   * How long a placed order may stay pending before the platform cancels it
   * (docs/guide/orders.md#acceptance-window); 600 when left out.
   */
  acceptanceWindowSeconds: z.number().int().min(60).max(3_600).optional(),
});

/** The acceptance window of a profile that does not set one. */
export const DEFAULT_ACCEPTANCE_WINDOW_SECONDS = 600;

/** Rules across fields: settings per fulfillment type, money precision per currency. */
function checkStoreProfile(profile: z.infer<typeof storeProfileFields>, ctx: z.RefinementCtx) {
  const types = new Set(profile.fulfillmentTypes);
  if (types.size !== profile.fulfillmentTypes.length) {
    ctx.addIssue({
      code: 'custom',
      message: 'Duplicate fulfillment type',
      path: ['fulfillmentTypes'],
    });
  }
  if (types.has('DELIVERY_BY_MERCHANT') && !profile.delivery) {
    ctx.addIssue({
      code: 'custom',
      message: 'Required for DELIVERY_BY_MERCHANT',
      path: ['delivery'],
    });
  }
  if (types.has('PICKUP') && !profile.pickup) {
    ctx.addIssue({ code: 'custom', message: 'Required for PICKUP', path: ['pickup'] });
  }
  // zod still runs this after a continuable issue such as a malformed currency code; that
  // code has its own issue already, and precision cannot be judged without a currency.
  const currency = profile.currency ?? 'USD';
  if (!isKnownCurrency(currency)) return;
  const digits = currencyExponent(currency);
  const amounts: [string[], number | undefined][] = [
    [['minimumOrder'], profile.minimumOrder],
    [['delivery', 'fee'], profile.delivery?.fee],
    [['delivery', 'minimumOrder'], profile.delivery?.minimumOrder],
  ];
  for (const [path, amount] of amounts) {
    if (amount !== undefined && toScaledInteger(amount, digits) === null) {
      ctx.addIssue({
        code: 'custom',
        message: `More fraction digits than ${currency} allows (${digits})`,
        path,
        params: { code: 'PRECISION_EXCEEDED' },
      });
    }
  }
  if (toScaledInteger(profile.taxRate, TAX_RATE_DIGITS) === null) {
    ctx.addIssue({
      code: 'custom',
      message: `At most ${TAX_RATE_DIGITS} fraction digits`,
      path: ['taxRate'],
      params: { code: 'PRECISION_EXCEEDED' },
    });
  }
}

/**
 * Body of `PUT /v1/commerce/stores/{storeId}`: the profile a commerce partner owns.
 * Computed fields (`status`, `storeId`, timestamps, the secret's fields) are ignored
 * when sent back.
 */
export const storeProfileInput = storeProfileFields
  .superRefine(checkStoreProfile)
  .meta({ examples: [storeProfileExample] });
export type StoreProfileInput = z.infer<typeof storeProfileInput>;

export const storeStatusValue = z.enum(['online', 'paused', 'busy']);
/** Extra minutes a busy store adds to every ETA it gives (docs/guide/stores.md#busy). */
export const extraPrepMinutes = z.number().int().min(5).max(120);
export const pauseReason = z.enum([
  'operational_issues',
  'staff_shortage',
  'too_busy',
  'maintenance',
  'other',
]);

/**
 * A store's status as read (docs/guide/stores.md#store-status). A pause past its `resumeAt` reads
 * as online.
 */
export const storeStatus = z
  .object({
    status: storeStatusValue,
    reason: pauseReason.nullable(),
    /** When the pause (or busy spell) began. */
    pausedAt: dateTime.nullable(),
    /** When a pause or busy spell ends on its own; null: until the partner ends it. */
    resumeAt: dateTime.nullable(),
    /** Busy only: the minutes added to every ETA and estimatedReadyAt. */
    extraPrepMinutes: z.number().int().nullable(),
    /** Paused only: `platform` after orders were not accepted in time. */
    pausedBy: pausedBy.nullable(),
  })
  .meta({ examples: storeStatusExamples });
export type StoreStatus = z.infer<typeof storeStatus>;

/** Body of `POST /v1/commerce/stores/{storeId}/status`. */
export const setStoreStatusInput = z
  .discriminatedUnion('status', [
    z.object({ status: z.literal('online') }),
    z.object({
      status: z.literal('paused'),
      reason: pauseReason,
      resumeAt: dateTime.nullable().optional(),
    }),
    z.object({
      status: z.literal('busy'),
      extraPrepMinutes,
      resumeAt: dateTime.nullable().optional(),
    }),
  ])
  .meta({
    examples: [
      { status: 'paused', reason: 'too_busy', resumeAt: '2026-11-22T18:35:00Z' },
      { status: 'busy', extraPrepMinutes: 20, resumeAt: '2026-11-22T20:00:00Z' },
      { status: 'online' },
    ],
  });
export type SetStoreStatusInput = z.infer<typeof setStoreStatusInput>;

const storeViewFields = {
  storeId: guid,
  name: z.string(),
  phone: z.string(),
  timezone: z.string(),
  currency: z.string(),
  address: resolvedAddress,
  fulfillmentTypes: z.array(fulfillmentType),
  availability: availability,
  delivery: deliverySettings.nullable(),
  pickup: pickupSettings.nullable(),
  taxRate: z.number(),
  minimumOrder: z.number(),
  status: storeStatusValue,
  /** Busy only: minutes added to the pickup and delivery ETAs (docs/guide/stores.md#busy). */
  extraPrepMinutes: z.number().int().nullable(),
  /** How long an order may stay pending before the platform cancels it. */
  acceptanceWindowSeconds: z.number().int(),
  /** Online or busy, and inside an availability window (special hours included) now. */
  isOpenNow: z.boolean(),
  /** Next instant it is online and inside a window; null when open now or never opening. */
  nextOpenAt: dateTime.nullable(),
  /** The active CatalogSet's id; null before the first successful ingest. */
  catalogSetId: guid.nullable(),
};

/** A store as distribution partners see it. */
export const marketfrontStore = z
  .object(storeViewFields)
  .meta({ examples: [marketfrontStoreExample] });
export type MarketfrontStore = z.infer<typeof marketfrontStore>;

/** A store as its owning commerce partner sees it: never its signing secret. */
export const commerceStore = z
  .object({
    ...storeViewFields,
    orderSubmissionUrl: z.string().nullable(),
    /** Until then order submissions also carry a signature made with the previous secret. */
    orderSubmissionPreviousSecretExpiresAt: dateTime.nullable(),
    createdAt: dateTime,
    updatedAt: dateTime,
  })
  .meta({ examples: [commerceStoreExample] });
export type CommerceStore = z.infer<typeof commerceStore>;

/**
 * The store with its order-submission signing secret: the answer of the `PUT` that created
 * the secret (the first with an orderSubmissionUrl) and of a rotation, the only times the
 * secret is shown.
 */
export const commerceStoreWithSecret = commerceStore
  .extend({
    orderSubmissionSecret: z
      .string()
      .nullable()
      .describe(
        'Verify the Standard Webhooks signature of order submissions with this secret ' +
          '(whsec_...): shown when it is created (the first PUT with an orderSubmissionUrl) ' +
          'and when it is rotated, null otherwise.',
      ),
  })
  .meta({
    examples: [
      { ...commerceStoreExample, orderSubmissionSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    ],
  });
export type CommerceStoreWithSecret = z.infer<typeof commerceStoreWithSecret>;

export const commerceStoreList = z
  .object({
    stores: z.array(commerceStore),
    totalCount: z.number().int(),
    hasMore: z.boolean(),
  })
  .meta({ examples: [{ stores: [commerceStoreExample], totalCount: 1, hasMore: false }] });
export type CommerceStoreList = z.infer<typeof commerceStoreList>;

/** A postal address to geocode (discovery, delivery checks). */
export const postalAddress = z.object({
  address1: z.string().trim().min(1).max(200),
  address2: z.string().max(200).nullable().optional(),
  city: z.string().trim().min(1).max(100),
  state: z.string().trim().min(1).max(100),
  postalCode: z.string().trim().min(1).max(20),
  country: z.string().regex(/^[A-Z]{2}$/, 'Expected an ISO 3166-1 alpha-2 code such as US'),
});
export type PostalAddress = z.infer<typeof postalAddress>;

export const coordinates = z.object({
  latitude: z.number().min(-90).max(90),
  longitude: z.number().min(-180).max(180),
});
export type Coordinates = z.infer<typeof coordinates>;

/** Where the customer is: an address (geocoded by the service) or coordinates, used as given. */
export const customerLocation = z.union([coordinates, postalAddress]);
export type CustomerLocation = z.infer<typeof customerLocation>;

/** Body of `POST /v1/marketfront/stores/discover` (docs/guide/stores.md#store-lookup). */
export const discoverStoresInput = z
  .object({
    location: customerLocation,
    fulfillmentType: fulfillmentType,
    query: z.string().trim().min(1).max(100).optional(),
    scheduledTime: dateTime.optional(),
    limit: z.number().int().min(1).max(100).optional(),
    offset: z.number().int().min(0).max(10_000).optional(),
  })
  .meta({
    examples: [
      {
        location: {
          address1: '401 N Wabash Ave',
          city: 'Chicago',
          state: 'IL',
          postalCode: '60611',
          country: 'US',
        },
        fulfillmentType: 'DELIVERY_BY_MERCHANT',
        query: 'burger',
        limit: 20,
      },
      { location: { latitude: 41.8893, longitude: -87.6268 }, fulfillmentType: 'PICKUP' },
    ],
  });
export type DiscoverStoresInput = z.infer<typeof discoverStoresInput>;

export const discoveredStore = marketfrontStore.extend({ distanceMeters: z.number().int() });
export const discoverStoresResult = z
  .object({
    stores: z.array(discoveredStore),
    totalCount: z.number().int(),
    hasMore: z.boolean(),
  })
  .meta({
    examples: [
      {
        stores: [{ ...marketfrontStoreExample, distanceMeters: 1460 }],
        totalCount: 1,
        hasMore: false,
      },
    ],
  });
export type DiscoverStoresResult = z.infer<typeof discoverStoresResult>;

/** Whether a store takes orders at an instant (ordering's ASAP and SCHEDULED checks). */
export const storeAvailability = z.object({
  storeId: guid,
  at: dateTime,
  open: z.boolean(),
  /** Why it is closed: paused, or outside its windows. */
  closedReason: z.enum(['paused', 'outside_hours']).nullable(),
  nextOpenAt: dateTime.nullable(),
  timezone: z.string(),
});
export type StoreAvailability = z.infer<typeof storeAvailability>;

/**
 * Reply of `stores.v1.order-context`: what an order needs of its store in one round trip.
 * Internal to the platform (ordering asks it); never a secret.
 */
export const orderContext = z.object({
  /** The store as distribution partners see it. */
  store: marketfrontStore,
  /** Whether it is online and inside its windows at the asked instant. */
  availability: storeAvailability,
  /** The commerce partner that owns the store. */
  ownerPartnerId: guid,
  /**
   * The version of the store's item availability overrides (`stores.v1.item-availability.lookup`):
   * ordering refetches its copy when it holds an older one.
   */
  itemAvailabilityVersion: z.number().int().nonnegative(),
  /**
   * Where to POST placed orders (signed with the secrets of
   * `stores.v1.order-submission.secrets`); null when the store has no orderSubmissionUrl.
   */
  submission: z.object({ url: z.string() }).nullable(),
});
export type OrderContext = z.infer<typeof orderContext>;

/** A resolved, geocoded customer location. */
export const resolvedLocation = coordinates.extend({
  address: postalAddress.extend({ address2: z.string().nullable() }).nullable(),
});

/**
 * Reply of `stores.v1.order-submission.secrets` (ordering's submitter only): every secret that
 * signs a submission now, the current first, the previous one during a rotation's overlap.
 */
export const orderSubmissionSecrets = z.object({ secrets: z.array(z.string()).min(1) });
export type OrderSubmissionSecrets = z.infer<typeof orderSubmissionSecrets>;
