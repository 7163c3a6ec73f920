import type { AvailabilityWindow, FulfillmentType, PartnerMode, SpecialDay } from '@pcp/contracts';
import type { OutboxTable } from '@pcp/service-kit';
import type {
  ColumnType,
  Generated,
  Insertable,
  JSONColumnType,
  Selectable,
  Updateable,
} from 'kysely';

/** Money columns hold integer minor units of `currency`; the tax rate is parts per million. */
export interface StoreTable {
  store_id: string;
  partner_id: string;
  /**
   * Its owner's mode, set at creation and never changed: only requests of this mode see the
   * store as another partner (docs/guide/sandbox.md#modes).
   */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  name: string;
  phone: string;
  timezone: string;
  currency: string;
  address1: string;
  address2: string | null;
  city: string;
  state: string;
  postal_code: string;
  country: string;
  latitude: number;
  longitude: number;
  fulfillment_types: FulfillmentType[];
  availability: JSONColumnType<AvailabilityWindow[]>;
  delivery_radius_meters: number | null;
  delivery_fee_minor: number | null;
  delivery_minimum_order_minor: number | null;
  delivery_eta_minutes: number | null;
  pickup_eta_minutes: number | null;
  tax_rate_ppm: number;
  minimum_order_minor: number;
  order_submission_url: string | null;
  /**
   * Signs order submissions (Standard Webhooks), sealed (service-kit secret-box). Set with the
   * first orderSubmissionUrl and replaced only by a rotation; kept when the URL is removed, so
   * re-adding one keeps the owner's verification working. Never null while there is a URL (a
   * check enforces it).
   */
  order_submission_secret: string | null;
  /** The secret before the last rotation (sealed): it signs too until its expiry. */
  order_submission_previous_secret: ColumnType<string | null, never, string | null>;
  order_submission_previous_secret_expires_at: ColumnType<Date | null, never, Date | null>;
  /** Busy: takes orders, each ETA `extra_prep_minutes` longer (docs/guide/stores.md#busy). */
  status: 'online' | 'paused' | 'busy';
  pause_reason: string | null;
  /** When the pause or busy spell began. */
  paused_at: Date | null;
  /** When the pause or busy spell ends on its own (derived: no job flips the row). */
  resume_at: Date | null;
  /** Busy only (a check ties it to the status). */
  extra_prep_minutes: ColumnType<number | null, number | null | undefined, number | null>;
  /** Paused only: who paused it (a check ties it to the status). */
  paused_by: ColumnType<
    'partner' | 'platform' | null,
    'partner' | 'platform' | null | undefined,
    'partner' | 'platform' | null
  >;
  /** Dates whose hours replace the weekly ones, by date (docs/guide/stores.md#special-hours). */
  special_days: JSONColumnType<SpecialDay[], string | undefined, string>;
  /** How long a placed order may stay pending (docs/guide/stores.md#store-profile). */
  acceptance_window_seconds: number;
  catalog_set_id: ColumnType<string | null, never, string | null>;
  catalog_activated_at: ColumnType<Date | null, never, Date | null>;
  /** Aggregate version of the catalog activation applied last. */
  catalog_version: ColumnType<number | null, never, number | null>;
  /** One more with every change of the store's item availability overrides. */
  item_availability_version: ColumnType<number, never, number>;
  /** Version of the store's last store event, whatever its kind (one sequence per store). */
  event_version: ColumnType<number, never, number>;
  /** Version of the store's last `events.stores.v1.profile-changed` (its own sequence). */
  profile_version: ColumnType<number, never, number>;
  created_at: ColumnType<Date, never, never>;
  updated_at: Generated<Date>;
}

export type StoreRow = Selectable<StoreTable>;
export type NewStoreRow = Insertable<StoreTable>;
export type StoreUpdate = Updateable<StoreTable>;

/** An item of the store's active catalog that carts and orders refuse until `until`. */
export interface ItemAvailabilityOverrideTable {
  store_id: string;
  item_id: string;
  /** Null: until the partner clears it. */
  until: Date | null;
}

/** When the next fixture store event is due (docs/guide/sandbox.md#store-events); one row. */
export interface FixtureStoreEventsTable {
  id: ColumnType<number, never, never>;
  next_at: Date;
  /** Picks the store and the kind of the next event, round robin. */
  turn: ColumnType<number, never, number>;
}

/** A deleted store id's last versions, which a store created again with it continues. */
export interface DeletedStoreVersionsTable {
  store_id: string;
  event_version: number;
  profile_version: number;
  item_availability_version: number;
  deleted_at: ColumnType<Date, never, Date>;
}

export interface StoresDatabase {
  stores: StoreTable;
  deleted_store_versions: DeletedStoreVersionsTable;
  fixture_store_events: FixtureStoreEventsTable;
  item_availability_overrides: ItemAvailabilityOverrideTable;
  outbox: OutboxTable;
}
