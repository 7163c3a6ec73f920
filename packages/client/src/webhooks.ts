import { Webhook } from 'standardwebhooks';
import type { Order } from './place.js';

/** An order-status webhook's body (the platform's Standard Webhooks payload). */
export interface OrderWebhookEvent {
  type: 'order.created' | 'order.status_changed' | 'order.cancelled';
  /** When the change happened (ISO-8601 UTC). */
  timestamp: string;
  data: {
    orderId: string;
    storeId: string;
    state: Order['state'];
    status: Order['status'];
    previousStatus: Order['status'] | null;
    /** The order's version: 1 for order.created, one more per change (order per order). */
    version: number;
    /** The estimate after this change: placement sets it, the store may move it. */
    estimatedReadyAt: string | null;
    /** Set on order.cancelled. */
    cancelReason: string | null;
    cancelledBy: 'store' | 'platform' | null;
  };
}

/** What every store event's `data` has: the store and its event version. */
interface StoreEventBase {
  storeId: string;
  /** The store's event version, one more per event of the store: keep the highest seen. */
  version: number;
}

/** A store's opening window on one day of the week, in its time zone (HH:mm:ss). */
export interface StoreHoursWindow {
  dayOfWeek: 'Sunday' | 'Monday' | 'Tuesday' | 'Wednesday' | 'Thursday' | 'Friday' | 'Saturday';
  start: string;
  end: string;
}

/** A date (YYYY-MM-DD, the store's time zone) closed, or open in its own windows. */
export type StoreSpecialDay =
  { date: string; closed: true } | { date: string; windows: { start: string; end: string }[] };

/**
 * A store event's webhook body (docs/guide/webhooks.md#store-events): sent to every
 * distribution partner subscribed to its kind, in order per store.
 */
export type StoreWebhookEvent =
  | {
      type: 'store.status_changed';
      timestamp: string;
      data: StoreEventBase & {
        status: 'online' | 'paused' | 'busy';
        reason: string | null;
        pausedAt: string | null;
        resumeAt: string | null;
        /** Minutes every ETA grows by while busy. */
        extraPrepMinutes: number | null;
        pausedBy: 'partner' | 'platform' | null;
      };
    }
  | {
      type: 'store.hours_changed';
      timestamp: string;
      data: StoreEventBase & {
        timezone: string;
        availability: StoreHoursWindow[];
        specialDays: StoreSpecialDay[];
      };
    }
  | {
      type: 'store.items_availability_changed';
      timestamp: string;
      data: StoreEventBase & {
        /** The overrides' version after this change. */
        itemAvailabilityVersion: number;
        /** `available: true` where an override was cleared. */
        items: { itemId: string; available: boolean; until: string | null }[];
      };
    }
  | {
      type: 'catalog.activated';
      timestamp: string;
      data: StoreEventBase & { catalogSetId: string; etag: string; activatedAt: string };
    };

/** Any webhook's body: narrow on `type`. */
export type WebhookEvent = OrderWebhookEvent | StoreWebhookEvent;

/** A webhook whose signature, timestamp or headers do not check out: answer it 4xx. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

/** Verifies the deliveries of one endpoint. */
export interface WebhookVerifier {
  /**
   * The event of a delivery whose `webhook-signature` is a valid HMAC of `rawBody` (the
   * bytes as received, before any JSON parsing) under one of the secrets, stamped within
   * five minutes of now; throws WebhookVerificationError otherwise.
   */
  verify(
    rawBody: string | Uint8Array,
    headers: Headers | Record<string, string | string[] | undefined>,
  ): WebhookEvent;
}

/** Header values as the standardwebhooks library reads them: one string per name. */
function plainHeaders(
  headers: Headers | Record<string, string | string[] | undefined>,
): Record<string, string> {
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  const plain: Record<string, string> = {};
  for (const [name, value] of entries) {
    // Signatures are space-separated: a header repeated by a proxy stays one list.
    if (value !== undefined)
      plain[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value;
  }
  return plain;
}

function isWebhookEvent(value: unknown): value is WebhookEvent {
  if (typeof value !== 'object' || value === null) return false;
  const { type, data } = value as Partial<WebhookEvent>;
  return typeof type === 'string' && typeof data === 'object' && data !== null;
}

/**
 * Verifies the platform's webhooks per Standard Webhooks with the `standardwebhooks`
 * library. `secrets` is the endpoint's `whsec_…` secret; during a rotation pass the new
 * and the previous one (the platform signs with both for a day).
 */
export function createWebhookVerifier(secrets: string | readonly string[]): WebhookVerifier {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (list.length === 0) throw new TypeError('createWebhookVerifier needs a secret');
  const webhooks = list.map((secret) => new Webhook(secret));
  const decoder = new TextDecoder();
  return {
    verify(rawBody, headers) {
      const body = typeof rawBody === 'string' ? rawBody : decoder.decode(rawBody);
      const plain = plainHeaders(headers);
      let failure: unknown;
      for (const webhook of webhooks) {
        let event: unknown;
        try {
          event = webhook.verify(body, plain);
        } catch (error) {
          failure = error;
          continue;
        }
        if (!isWebhookEvent(event)) {
          throw new WebhookVerificationError('The signed body is not a webhook event');
        }
        return event;
      }
      const reason = failure instanceof Error ? failure.message : String(failure);
      throw new WebhookVerificationError(`Webhook not verified: ${reason}`, { cause: failure });
    },
  };
}
