import type {
  Order,
  OrderError,
  OrderState,
  OrderStatus,
  PartnerMode,
  StoreEventKind,
  WebhookDeliveryStatus,
  WebhookEventKind,
} from '@pcp/contracts';
import type { OutboxTable } from '@pcp/service-kit';
import type { StoreTiming } from '../lifecycle/acceptance-window.js';
import type { ColumnType, JSONColumnType, Selectable } from 'kysely';

export interface AddressTable {
  address_id: string;
  partner_id: string;
  end_user_id: string;
  fingerprint: string;
  address1: string;
  address2: string | null;
  city: string;
  state: string;
  postal_code: string;
  country: string;
  latitude: number;
  longitude: number;
  created_at: ColumnType<Date, never, never>;
  deleted_at: Date | null;
}

/**
 * The recovery points of place, each written when the step before it has
 * completed; `place/place-saga.ts` says what each does and how an unknown outcome at it is
 * settled. A step only moves forward: to a later point, or to `recorded` (the final answer).
 */
export const placeSteps = [
  'started',
  'validated',
  'submitting',
  'capturing',
  'rejected',
  'recorded',
] as const;
export type PlaceStep = (typeof placeSteps)[number];

/** The parts of an order fixed when it is placed, kept as the order's `details`. */
export type OrderDetails = Pick<
  Order,
  | 'amounts'
  | 'cart'
  | 'fulfillment'
  | 'client'
  | 'customer'
  | 'paymentType'
  | 'payment'
  | 'specialInstructions'
>;

/** What the steps of place after validation need, recorded with the `validated` point. */
export interface PlaceSnapshot {
  readonly storeId: string;
  readonly storePartnerId: string;
  readonly details: OrderDetails;
  readonly totalMinor: number;
  readonly currency: string;
  readonly paymentId: string | null;
  /** Whether the store had an order-submission URL when the order was validated. */
  readonly submits?: boolean;
  /** Set once the store's URL took the order, so it starts confirmed. */
  readonly storeAccepted?: boolean;
  /** The store's acceptance window and ETA when validated (absent in older snapshots). */
  readonly timing?: StoreTiming;
}

/** One Idempotency-Key of place: its owner, its body, how far it got and its final answer. */
export interface PlaceAttemptTable {
  idempotency_key: string;
  partner_id: string;
  end_user_id: string;
  fingerprint: string;
  /**
   * SHA-256 of the first request's body bytes as they came: the same bytes again replay
   * without being parsed. Null for attempts from before it was kept, and for the sandbox's
   * own place (no bytes).
   */
  raw_hash: ColumnType<string | null, string | null | undefined, string | null>;
  /** The placing request's mode: its order's, and its charge's (payments routes by it). */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  /** New for every life of the key: the order it places and the id its charge is keyed by. */
  order_id: string;
  step: PlaceStep;
  /** What the steps after validation need: the priced order and the store's facts. */
  snapshot: JSONColumnType<PlaceSnapshot | null, string | null, string | null>;
  charge_id: string | null;
  /** The store's refusal, kept while its authorization is released. */
  store_rejection: JSONColumnType<OrderError[] | null, string | null, string | null>;
  /** The run holding the key (its replica and its own id) and until when. */
  lease_owner: string | null;
  lease_expires_at: Date | null;
  response_status: number | null;
  response_body: string | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
  /**
   * Unanswered: the deadline for the key's answer (its first use and the retention); past it
   * the attempt is settled, never resumed. Answered: the answer's own retention ends.
   */
  expires_at: Date;
  /** When the sweeper finishes an abandoned attempt the store may hold (null: not due). */
  settle_at: ColumnType<Date | null, never, Date | null>;
  /** How often the sweeper has tried to settle it (its back-off). */
  settle_tries: ColumnType<number, never, number>;
}

export interface OrderTable {
  order_id: string;
  partner_id: string;
  end_user_id: string;
  store_id: string;
  store_partner_id: string;
  /** The placing partner's mode (its tenant's): payments routes the order's money by it. */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  fulfillment_mode: 'PICKUP' | 'DELIVERY_BY_MERCHANT';
  state: OrderState;
  status: OrderStatus;
  version: number;
  /** The order's content as placed (cart, fulfillment, amounts, customer, payment). */
  details: JSONColumnType<OrderDetails, string, never>;
  /** The order's payment; a charge belongs to one order (unique). */
  charge_id: string | null;
  /** bigint, parsed to a number by the service kit's pool. */
  total_minor: ColumnType<number, number, never>;
  currency: string;
  estimated_ready_at: Date | null;
  cancel_reason: string | null;
  /** Until then a pending order may be accepted; null once it left pending (or never had one). */
  accept_by: ColumnType<Date | null, Date | null | undefined, Date | null>;
  cancelled_by: ColumnType<
    'store' | 'platform' | null,
    'store' | 'platform' | null | undefined,
    'store' | 'platform' | null
  >;
  /**
   * When its store was deleted under it (its owner's sandbox reset kept this other partner's
   * order): no store-side read or move sees it since. Null while the store is there.
   */
  store_deleted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: ColumnType<Date, Date, never>;
  updated_at: Date;
}

/** One version of an order as its change made it: the order's status history. */
export interface OrderStatusChangeTable {
  order_id: string;
  version: number;
  state: OrderState;
  status: OrderStatus;
  /** Null for version 1, and for an order's first row kept when it was placed before history. */
  previous_status: OrderStatus | null;
  estimated_ready_at: Date | null;
  cancel_reason: string | null;
  cancelled_by: 'store' | 'platform' | null;
  /** A denial's items that ran out (its `unavailableItemIds`); null on any other change. */
  unavailable_item_ids: ColumnType<string[] | null, string[] | null | undefined, never>;
  changed_at: Date;
}

/**
 * A refund ordering owes payments' customer (a cancel's), written with its cause and asked of
 * payments by the refund sweeper until settled.
 */
export interface OrderRefundTable {
  /** Payments' idempotency key of the refund (`order-cancel-<orderId>`). */
  idempotency_key: string;
  order_id: string;
  charge_id: string;
  reason: 'cancel';
  /** Minor units; null: whatever of the capture is left to refund. */
  amount: number | null;
  state: ColumnType<'owed' | 'settled', 'owed', 'settled'>;
  tries: ColumnType<number, never, number>;
  next_try_at: ColumnType<Date, never, Date>;
  last_error: ColumnType<string | null, never, string | null>;
  raised_at: ColumnType<Date | null, never, Date | null>;
  created_at: ColumnType<Date, never, never>;
  settled_at: ColumnType<Date | null, never, Date | null>;
}

/** Per store: its run of orders not accepted in time, and the platform pause it owes. */
export interface StoreAcceptanceTimeoutTable {
  store_id: string;
  store_partner_id: string;
  consecutive: ColumnType<number, number | undefined, number>;
  pause_due_at: Date | null;
  pause_tries: ColumnType<number, number | undefined, number>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface WebhookEndpointTable {
  partner_id: string;
  /** The partner's mode: store events reach only endpoints of their store's mode. */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  url: string;
  events: string[];
  /**
   * The API version its deliveries are rendered in (a date; read with `endpointApiVersion`).
   * Rows written before versions, or by an ordering of before them, are 2026-12-01.
   */
  api_version: ColumnType<string, string | undefined, string>;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

/** `skipped`: nobody subscribed when it happened; kept so the order's versions have no gap. */
export type WebhookDeliveryState = WebhookDeliveryStatus | 'skipped';

/**
 * One event for one partner: an order event (its order's, `payload` its body) or a store
 * event (`order_id` and `payload` null: the body is its `webhook_store_events` row's).
 */
export interface WebhookDeliveryTable {
  delivery_id: string;
  event_id: string;
  partner_id: string;
  order_id: string | null;
  store_id: string;
  /** What the row is in order within: its order's id, or `store:<storeId>:<partnerId>`. */
  sequence_key: string;
  /** The order's version, or the store's event version. */
  version: number;
  event_type: WebhookEventKind;
  payload: string | null;
  status: WebhookDeliveryState;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: Date | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  last_attempt_at: Date | null;
  last_response_status: number | null;
  last_error: string | null;
  /**
   * The latest try (with `last_attempt_at`, `last_response_status`), null before the first:
   * the delivery's try count after it, its outcome, error and latency. Only the tries it
   * superseded are rows of `webhook_delivery_attempts`.
   */
  last_try_attempt: number | null;
  last_try_outcome: WebhookDeliveryAttemptTable['outcome'] | null;
  last_try_error: string | null;
  last_latency_ms: number | null;
  occurred_at: Date;
  delivered_at: Date | null;
  /** The request the event came from (`storedOrigin`), for the delivery's trace. */
  origin: string | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

/**
 * A superseded try of a delivery, of an order or a store event (not a try the partner's open
 * breaker held back); the latest try is on the delivery's row.
 */
export interface WebhookDeliveryAttemptTable {
  delivery_id: string;
  /** bigint, in the order tries were recorded. */
  attempt_id: ColumnType<string, never, never>;
  attempt: number;
  outcome: 'delivered' | 'failed' | 'dead';
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  tried_at: Date;
}

/** A store event as recorded once for every partner it goes to, and the mark of its version. */
export interface WebhookStoreEventTable {
  event_id: string;
  store_id: string;
  version: number;
  event_type: StoreEventKind;
  /** The delivered body, the same bytes for every partner and try. */
  payload: string;
  occurred_at: Date;
  origin: string | null;
  created_at: ColumnType<Date, never, never>;
}

/** A test tenant's webhook stream (docs/guide/sandbox.md#webhook-stream): its secret, sealed. */
export interface WebhookStreamTable {
  partner_id: string;
  secret: string;
  created_at: ColumnType<Date, never, never>;
}

/** One webhook event of a tenant's stream log. */
export interface WebhookStreamEventTable {
  /** A bigint: pg reads it as a string. */
  seq: ColumnType<string, never, never>;
  partner_id: string;
  webhook_id: string;
  event_type: WebhookEventKind;
  /** The body a delivery of it carries. */
  body: string;
  created_at: ColumnType<Date, never, never>;
}

export interface OrderingDatabase {
  addresses: AddressTable;
  place_attempts: PlaceAttemptTable;
  orders: OrderTable;
  order_status_changes: OrderStatusChangeTable;
  order_refunds: OrderRefundTable;
  store_acceptance_timeouts: StoreAcceptanceTimeoutTable;
  outbox: OutboxTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_delivery_attempts: WebhookDeliveryAttemptTable;
  webhook_store_events: WebhookStoreEventTable;
  webhook_streams: WebhookStreamTable;
  webhook_stream_events: WebhookStreamEventTable;
}

export type AddressRow = Selectable<AddressTable>;
export type PlaceAttemptRow = Selectable<PlaceAttemptTable>;
export type OrderRow = Selectable<OrderTable>;
export type OrderStatusChangeRow = Selectable<OrderStatusChangeTable>;
export type OrderRefundRow = Selectable<OrderRefundTable>;
export type WebhookEndpointRow = Selectable<WebhookEndpointTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;
export type WebhookDeliveryAttemptRow = Selectable<WebhookDeliveryAttemptTable>;
