import type { Migration } from 'kysely';
import * as createAddresses from './2026-11-26T0200-create-addresses.js';
import * as createOrders from './2026-11-27T0100-create-orders.js';
import * as createWebhooks from './2026-11-28T0100-create-webhooks.js';
import * as deliveryOrigin from './2026-11-29T0100-delivery-origin.js';
import * as placeSaga from './2026-12-01T0100-place-saga.js';
import * as flatOrderAddress from './2026-12-01T0200-flat-order-address.js';
import * as sealWebhookSecrets from './2026-12-02T0100-seal-webhook-secrets.js';
import * as acceptance from './2026-12-03T0100-acceptance.js';
import * as storeEventDeliveries from './2026-12-03T0200-store-event-deliveries.js';
import * as modesDataEndpointMode from './2026-12-20T0110-modes-data-endpoint-mode.js';
import * as orderMode from './2026-12-20T0200-modes-money-order-mode.js';
import * as fixturesKitchen from './2026-12-20T0300-fixtures-kitchen.js';
import * as streamWebhookStreamLog from './2026-12-20T0500-stream-webhook-stream-log.js';
import * as webhookPartnerDue from './2026-12-21T0400-webhook-partner-due.js';
import * as orderTimeline from './2026-12-22T0200-order-timeline.js';
import * as deniedItems from './2026-12-23T0100-denied-items.js';
import * as orderRefunds from './2026-12-24T0100-order-refunds.js';
import * as orderStoreDeleted from './2026-12-25T0100-order-store-deleted.js';
import * as bindWebhookSecrets from './2026-12-25T0300-bind-webhook-secrets.js';
import * as placeAttemptRawHash from './2026-12-26T0200-place-attempt-raw-hash.js';
import * as webhookCurrentTry from './2026-12-31T0100-webhook-current-try.js';
import * as webhookEndpointApiVersion from './2027-01-03T0100-webhook-endpoint-api-version.js';

/** Migrations of the `ordering` schema. */
export const orderingMigrations: Record<string, Migration> = {
  '2026-11-26T0200-create-addresses': createAddresses,
  '2026-11-27T0100-create-orders': createOrders,
  '2026-11-28T0100-create-webhooks': createWebhooks,
  '2026-11-29T0100-delivery-origin': deliveryOrigin,
  '2026-12-01T0100-place-saga': placeSaga,
  '2026-12-01T0200-flat-order-address': flatOrderAddress,
  '2026-12-02T0100-seal-webhook-secrets': sealWebhookSecrets,
  '2026-12-03T0100-acceptance': acceptance,
  '2026-12-03T0200-store-event-deliveries': storeEventDeliveries,
  '2026-12-20T0110-modes-data-endpoint-mode': modesDataEndpointMode,
  '2026-12-20T0200-modes-money-order-mode': orderMode,
  '2026-12-20T0300-fixtures-kitchen': fixturesKitchen,
  '2026-12-20T0500-stream-webhook-stream-log': streamWebhookStreamLog,
  '2026-12-21T0400-webhook-partner-due': webhookPartnerDue,
  '2026-12-22T0200-order-timeline': orderTimeline,
  '2026-12-23T0100-denied-items': deniedItems,
  '2026-12-24T0100-order-refunds': orderRefunds,
  '2026-12-25T0100-order-store-deleted': orderStoreDeleted,
  '2026-12-25T0300-bind-webhook-secrets': bindWebhookSecrets,
  '2026-12-26T0200-place-attempt-raw-hash': placeAttemptRawHash,
  '2026-12-31T0100-webhook-current-try': webhookCurrentTry,
  '2027-01-03T0100-webhook-endpoint-api-version': webhookEndpointApiVersion,
};

export const ORDERING_SCHEMA = 'ordering';
