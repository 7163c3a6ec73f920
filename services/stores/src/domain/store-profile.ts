import {
  DEFAULT_ACCEPTANCE_WINDOW_SECONDS,
  fromMinorUnits,
  TAX_RATE_DIGITS,
  toMinorUnits,
  toScaledInteger,
  type CommerceStore,
  type CommerceStoreWithSecret,
  type Coordinates,
  marketfrontStoreAt,
  orderContextAt,
  type MarketfrontStore,
  type OrderContext,
  type OrderProfile,
  type StoreStanding,
  type StoreProfileInput,
  type StoreStatus,
} from '@pcp/contracts';
import { randomBytes } from 'node:crypto';
import type { MarketfrontRow } from '../db/store.repository.js';
import type { NewStoreRow, StoreRow } from '../db/store.table.js';

const DEFAULT_CURRENCY = 'USD';

/** The schema already checked precision; a null here would be a contract bug, not bad input. */
function minor(amount: number, currency: string): number {
  const value = toMinorUnits(amount, currency);
  if (value === null) throw new Error(`amount ${amount} exceeds ${currency} precision`);
  return value;
}

/** A Standard Webhooks signing secret: `whsec_` and the base64 of 24 random bytes. */
export function newOrderSubmissionSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/**
 * A validated profile → the row columns it sets (money in minor units). New stores start
 * online. With an orderSubmissionUrl the row carries `sealedSecret`, a fresh signing secret
 * used only when the store has none yet (see upsertStore).
 */
export function profileToRow(
  partnerId: string,
  storeId: string,
  profile: StoreProfileInput,
  location: Coordinates,
  sealedSecret: string,
): NewStoreRow {
  const currency = profile.currency ?? DEFAULT_CURRENCY;
  const delivery = profile.delivery ?? null;
  const taxRatePpm = toScaledInteger(profile.taxRate, TAX_RATE_DIGITS);
  if (taxRatePpm === null) throw new Error('tax rate exceeds its precision');
  return {
    store_id: storeId,
    partner_id: partnerId,
    name: profile.name,
    phone: profile.phone,
    timezone: profile.timezone,
    currency,
    address1: profile.address.address1,
    address2: profile.address.address2 ?? null,
    city: profile.address.city,
    state: profile.address.state,
    postal_code: profile.address.postalCode,
    country: profile.address.country,
    latitude: location.latitude,
    longitude: location.longitude,
    fulfillment_types: profile.fulfillmentTypes,
    availability: JSON.stringify(profile.availability ?? []),
    delivery_radius_meters: delivery?.radiusMeters ?? null,
    delivery_fee_minor: delivery ? minor(delivery.fee, currency) : null,
    delivery_minimum_order_minor: delivery ? minor(delivery.minimumOrder, currency) : null,
    delivery_eta_minutes: delivery?.etaMinutes ?? null,
    pickup_eta_minutes: profile.pickup?.etaMinutes ?? null,
    tax_rate_ppm: taxRatePpm,
    minimum_order_minor: minor(profile.minimumOrder ?? 0, currency),
    order_submission_url: profile.orderSubmissionUrl ?? null,
    order_submission_secret: profile.orderSubmissionUrl ? sealedSecret : null,
    acceptance_window_seconds: profile.acceptanceWindowSeconds ?? DEFAULT_ACCEPTANCE_WINDOW_SECONDS,
    status: 'online',
  };
}

const ONLINE: StoreStatus = {
  status: 'online',
  reason: null,
  pausedAt: null,
  resumeAt: null,
  extraPrepMinutes: null,
  pausedBy: null,
};

/**
 * The status a store has at `now`: a pause or busy spell whose `resumeAt` has passed reads
 * as online, so resuming needs no job (docs/guide/stores.md#busy).
 */
export function effectiveStatus(row: StoreRow, now: Date): StoreStatus {
  const spellOver = row.resume_at !== null && row.resume_at.getTime() <= now.getTime();
  if (row.status === 'online' || spellOver) return ONLINE;
  const spell = {
    pausedAt: row.paused_at?.toISOString() ?? null,
    resumeAt: row.resume_at?.toISOString() ?? null,
  };
  if (row.status === 'busy') {
    return {
      ...spell,
      status: 'busy',
      reason: null,
      extraPrepMinutes: row.extra_prep_minutes,
      pausedBy: null,
    };
  }
  return {
    ...spell,
    status: 'paused',
    reason: row.pause_reason as StoreStatus['reason'],
    extraPrepMinutes: null,
    pausedBy: row.paused_by ?? 'partner',
  };
}

/** What the marketfront view is derived from at any instant (of the marketfront columns). */
function storeStanding(row: MarketfrontRow): StoreStanding {
  const money = (value: number) => fromMinorUnits(value, row.currency);
  const hasDelivery =
    row.delivery_radius_meters !== null &&
    row.delivery_fee_minor !== null &&
    row.delivery_minimum_order_minor !== null &&
    row.delivery_eta_minutes !== null;
  return {
    store: {
      storeId: row.store_id,
      name: row.name,
      phone: row.phone,
      timezone: row.timezone,
      currency: row.currency,
      address: {
        address1: row.address1,
        address2: row.address2,
        city: row.city,
        state: row.state,
        postalCode: row.postal_code,
        country: row.country,
        latitude: row.latitude,
        longitude: row.longitude,
      },
      fulfillmentTypes: row.fulfillment_types,
      availability: row.availability,
      delivery: hasDelivery
        ? {
            radiusMeters: row.delivery_radius_meters!,
            fee: money(row.delivery_fee_minor!),
            minimumOrder: money(row.delivery_minimum_order_minor!),
            etaMinutes: row.delivery_eta_minutes!,
          }
        : null,
      pickup: row.pickup_eta_minutes === null ? null : { etaMinutes: row.pickup_eta_minutes },
      taxRate: row.tax_rate_ppm / 10 ** TAX_RATE_DIGITS,
      minimumOrder: money(row.minimum_order_minor),
      acceptanceWindowSeconds: row.acceptance_window_seconds,
      catalogSetId: row.catalog_set_id,
    },
    status: {
      status: row.status,
      resumeAt: row.resume_at?.toISOString() ?? null,
      extraPrepMinutes: row.extra_prep_minutes,
    },
    specialDays: row.special_days,
  };
}

/**
 * The store as it stands (`stores.v1.order-profile`): everything its marketfront view and
 * order context are derived from at any instant.
 */
export function toOrderProfile(row: StoreRow): OrderProfile {
  return {
    ...storeStanding(row),
    ownerPartnerId: row.partner_id,
    itemAvailabilityVersion: row.item_availability_version,
    submission: row.order_submission_url === null ? null : { url: row.order_submission_url },
  };
}

/** A store as distribution partners see it: no partner-private fields. */
export function toMarketfrontStore(row: MarketfrontRow, now: Date): MarketfrontStore {
  return marketfrontStoreAt(storeStanding(row), now);
}

/** The end of a rotation's overlap while it lasts, else null. */
function previousSecretExpiry(row: StoreRow, now: Date): Date | null {
  const expiresAt = row.order_submission_previous_secret_expires_at;
  return row.order_submission_previous_secret !== null &&
    expiresAt !== null &&
    expiresAt.getTime() > now.getTime()
    ? expiresAt
    : null;
}

/** A store as its owner sees it: never its secret (shown only when created or rotated). */
export function toCommerceStore(row: StoreRow, now: Date): CommerceStore {
  return {
    ...toMarketfrontStore(row, now),
    orderSubmissionUrl: row.order_submission_url,
    orderSubmissionPreviousSecretExpiresAt: previousSecretExpiry(row, now)?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The store with `secret`: the plaintext just created or rotated, else null. */
export function toCommerceStoreWithSecret(
  row: StoreRow,
  now: Date,
  secret: string | null,
): CommerceStoreWithSecret {
  return { ...toCommerceStore(row, now), orderSubmissionSecret: secret };
}

/**
 * The sealed secrets that sign the store's submissions at `now`, the current first; empty
 * when it has none.
 */
export function signingSecrets(row: StoreRow, now: Date): string[] {
  if (row.order_submission_secret === null) return [];
  const previous = previousSecretExpiry(row, now) ? row.order_submission_previous_secret : null;
  return previous === null
    ? [row.order_submission_secret]
    : [row.order_submission_secret, previous];
}

/**
 * What ordering needs of a store in one round trip: the marketfront view at `now`, whether
 * it takes orders at `at`, its owner, and where to submit placed orders.
 */
export function toOrderContext(row: StoreRow, now: Date, at: Date): OrderContext {
  return orderContextAt(toOrderProfile(row), now, at);
}
