import { z } from 'zod';
import { cartInput, pricedCart } from './cart.js';
import {
  dateTime,
  guid,
  maxProblemErrors,
  moneyAmount,
  orderError,
  paymentType,
} from './common.js';
import { postalAddress, resolvedAddress } from './stores.js';
import { MAX_DENIED_ITEMS } from './store-operations.js';
import {
  orderExample,
  orderRequestExample,
  savedAddressExample,
  savedAddressFields,
  validatedOrderExamples,
} from './examples.js';

/** Free-text limits of the spec's Limits table. */
export const orderLimits = { userAgentMaxLength: 512, instructionsMaxLength: 500 } as const;

/**
 * The end customer's context. Only the shape is checked here: its rules (present, not
 * blank, a public address, a user agent of at most 512 characters) answer the spec's
 * CLIENT_* codes, not REQUEST_INVALID, so they are the ordering service's.
 */
export const orderClient = z.object({
  ip: z.string().max(100).optional(),
  userAgent: z.string().max(10_000).optional(),
});
export type OrderClient = z.infer<typeof orderClient>;

const scheduling = {
  scheduleType: z.enum(['ASAP', 'SCHEDULED']),
  /** Required when SCHEDULED (and in the future); null or absent when ASAP. */
  scheduledTime: dateTime.nullable().optional(),
};

/** An address as partners send it inline: the spec's fields, the country US unless given. */
export const addressInput = postalAddress
  .extend({ country: postalAddress.shape.country.default('US') })
  .meta({ examples: [savedAddressFields] });
export type AddressInput = z.infer<typeof addressInput>;

/**
 * A delivery address: a saved one of the end user (docs/guide/orders.md#saved-addresses), or inline
 * fields.
 */
export const orderAddressInput = z.union([z.object({ addressId: guid }), addressInput]);
export type OrderAddressInput = z.infer<typeof orderAddressInput>;

export const fulfillmentInput = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('PICKUP'), ...scheduling }),
  z.object({
    mode: z.literal('DELIVERY_BY_MERCHANT'),
    ...scheduling,
    address: orderAddressInput,
    deliveryType: z.enum(['DOOR_TO_DOOR', 'LEAVE_AT_DOOR']),
    /** At most 500 characters: longer is a business problem at its pointer, not a 400. */
    instructions: z.string().max(10_000).nullable().optional(),
  }),
]);
export type FulfillmentInput = z.infer<typeof fulfillmentInput>;

export const orderCustomer = z.object({
  firstName: z.string().trim().min(1).max(100),
  lastName: z.string().trim().min(1).max(100),
  phone: z.string().regex(/^\+[1-9]\d{6,14}$/, 'Expected an E.164 phone number'),
  email: z.email().max(254),
});

/** The body of validate and place (docs/guide/orders.md#validating-an-order). */
export const orderRequest = z
  .object({
    cart: cartInput,
    fulfillment: fulfillmentInput,
    /** Absent is CLIENT_CONTEXT_REQUIRED (a 400 of its own), so not required here. */
    client: orderClient.nullable().optional(),
    customer: orderCustomer.optional(),
    paymentId: guid.optional(),
    paymentType: paymentType.default('CARD'),
    tip: moneyAmount.default(0),
    specialInstructions: z.string().max(10_000).nullable().optional(),
    /** The total the customer saw: required on place, compared with the recomputed one. */
    amounts: z.object({ total: moneyAmount }).optional(),
  })
  .meta({ examples: [orderRequestExample] });
export type OrderRequest = z.infer<typeof orderRequest>;

/** The computed price breakdown, in major units of `currency` (docs/guide/orders.md#amounts). */
export const orderAmounts = z.object({
  currency: z.string(),
  subTotal: z.number(),
  fees: z.number(),
  feesBreakdown: z.array(z.object({ type: z.literal('DELIVERY'), amount: z.number() })),
  promotions: z.number(),
  taxes: z.number(),
  taxesBreakdown: z.array(
    z.object({ type: z.literal('SALES_TAX'), rate: z.number(), amount: z.number() }),
  ),
  adjustments: z.number(),
  tip: z.number(),
  total: z.number(),
});
export type OrderAmounts = z.infer<typeof orderAmounts>;

/**
 * The fulfillment as the order carries it: a delivery address resolved and geocoded, flat
 * like a store's (the spec's "fully resolved and geocoded address"); null for pickup.
 */
export const orderFulfillment = z.object({
  mode: z.enum(['PICKUP', 'DELIVERY_BY_MERCHANT']),
  scheduleType: z.enum(['ASAP', 'SCHEDULED']),
  scheduledTime: dateTime.nullable(),
  address: resolvedAddress.nullable(),
  deliveryType: z.enum(['DOOR_TO_DOOR', 'LEAVE_AT_DOOR']).nullable(),
  instructions: z.string().nullable(),
});

/**
 * Validate's answer (docs/guide/orders.md#validating-an-order): every business problem is an
 * element of `errors` with a pointer, and `amounts` is null unless the order is valid (never a
 * zeroed block).
 */
export const validatedOrder = z
  .object({
    isValid: z.boolean(),
    errors: z.array(orderError).max(maxProblemErrors),
    /** How many more problems there were than `errors` lists (it holds at most 100). */
    errorsOmitted: z.number().int().positive().optional(),
    amounts: orderAmounts.nullable(),
    cart: pricedCart.nullable(),
    fulfillment: orderFulfillment,
    client: z.object({ ip: z.string(), userAgent: z.string() }),
    customer: orderCustomer.nullable(),
    paymentType: paymentType,
    specialInstructions: z.string().nullable(),
  })
  .meta({ id: 'ValidatedOrder', examples: validatedOrderExamples });
export type ValidatedOrder = z.infer<typeof validatedOrder>;

/** An end user holds at most this many saved addresses. */
export const maxAddressesPerEndUser = 50;

/** A saved address of an end user, resolved and geocoded (docs/guide/orders.md#saved-addresses). */
export const savedAddress = z
  .object({
    addressId: guid,
    ...postalAddress.shape,
    address2: z.string().nullable(),
    latitude: z.number(),
    longitude: z.number(),
    createdAt: dateTime,
  })
  .meta({ id: 'SavedAddress', examples: [savedAddressExample] });
export type SavedAddress = z.infer<typeof savedAddress>;

export const savedAddressList = z
  .object({ addresses: z.array(savedAddress).max(maxAddressesPerEndUser) })
  .meta({ examples: [{ addresses: [savedAddressExample] }] });

/** An order's state (the spec's Order state table). */
export const orderState = z.enum(['open', 'completed', 'cancelled']);
export type OrderState = z.infer<typeof orderState>;

/**
 * Progress within state `open` (the spec's Order status table); an order that ended carries
 * the status it ended with: `completed` or `cancelled`.
 */
export const orderStatus = z.enum([
  'pending',
  'confirmed',
  'preparing',
  'ready',
  'inTransit',
  'completed',
  'cancelled',
]);
export type OrderStatus = z.infer<typeof orderStatus>;

/** The card an order was charged to; null for PAY_AT_STORE. */
export const orderPayment = z.object({
  paymentId: guid,
  brand: z.string(),
  last4: z.string(),
});

/**
 * Place's body (docs/guide/orders.md#placing-an-order): the order request with the total the
 * customer saw, and the vaulted card when paying by CARD.
 */
export const placeOrderRequest = orderRequest
  .extend({ amounts: z.object({ total: moneyAmount }) })
  .superRefine((request, ctx) => {
    if (request.paymentType === 'CARD' && request.paymentId === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'A CARD order needs the paymentId of a vaulted card',
        path: ['paymentId'],
        params: { code: 'REQUIRED' },
      });
    }
  })
  .meta({ examples: [orderRequestExample] });
export type PlaceOrderRequest = z.infer<typeof placeOrderRequest>;

/**
 * A placed order (docs/guide/orders.md#placing-an-order): what place answers and the order's
 * resources serve.
 */
export const order = z
  .object({
    orderId: guid,
    storeId: guid,
    isValid: z.literal(true),
    errors: z.array(orderError).max(0),
    amounts: orderAmounts,
    cart: pricedCart,
    fulfillment: orderFulfillment,
    client: z.object({ ip: z.string(), userAgent: z.string() }),
    customer: orderCustomer.nullable(),
    paymentType: paymentType,
    payment: orderPayment.nullable(),
    specialInstructions: z.string().nullable(),
    state: orderState,
    status: orderStatus,
    /** 1 when placed, one more for each change; webhooks events carry it. */
    version: z.number().int().positive(),
    /**
     * When the order should be ready: set at placement (ASAP: placed + the store's ETA and
     * busy minutes; SCHEDULED: the scheduled time), moved by the store
     * (docs/guide/orders.md#estimated-ready-time).
     */
    estimatedReadyAt: dateTime.nullable(),
    /**
     * Until then a pending order may be confirmed; then the platform cancels it
     * (docs/guide/orders.md#acceptance-window). Null once the store accepted it.
     */
    acceptBy: dateTime.nullable(),
    cancelReason: z.string().nullable(),
    /** Who cancelled: the store, or the platform (not accepted in time). */
    cancelledBy: z.enum(['store', 'platform']).nullable(),
    createdAt: dateTime,
    updatedAt: dateTime,
  })
  .meta({ id: 'Order', examples: [orderExample] });
export type Order = z.infer<typeof order>;

/**
 * A final place failure as recorded against its Idempotency-Key
 * (docs/guide/orders.md#idempotency): with the request id and time it was first answered at,
 * so its ProblemDetail renders the same every time.
 */
export const recordedPlaceProblem = z.object({
  errorCode: z.string(),
  detail: z.string(),
  errors: z.array(orderError).max(maxProblemErrors).optional(),
  /** Element errors left out of `errors` (the ProblemDetail's `errorsOmitted`). */
  errorsOmitted: z.number().int().positive().optional(),
  requestId: z.string(),
  timestamp: dateTime,
});
export type RecordedPlaceProblem = z.infer<typeof recordedPlaceProblem>;

/** What a place reply says of its outcome, before the recorded answer's text. */
export const placeReplyHead = z.object({
  replayed: z.boolean(),
  status: z.number().int().min(200).max(499),
  /** The placed order's id (a 201). */
  orderId: guid.optional(),
});
export type PlaceReplyHead = z.infer<typeof placeReplyHead>;

/**
 * A final place outcome as the place subject replies it: its head (one line of JSON), a
 * newline, then the answer's recorded text as it is stored, the Order's exact JSON for a 201
 * or a `recordedPlaceProblem`. The recorded text travels as bytes, never parsed or escaped
 * on the way, so a replay is the first answer byte for byte at the cost of a copy.
 */
export function encodePlaceReply(head: PlaceReplyHead, recorded: string): Uint8Array {
  // JSON.stringify never writes a raw newline, so the first one ends the head.
  return placeReplyEncoder.encode(`${JSON.stringify(head)}\n${recorded}`);
}

/** A place reply's head, checked, and its recorded text's bytes (a view of `reply`). */
export function decodePlaceReply<Bytes extends Uint8Array>(
  reply: Bytes,
): { head: PlaceReplyHead; recorded: Bytes } {
  const end = reply.indexOf(0x0a);
  if (end < 0) throw new Error('a place reply has no head');
  const head = placeReplyHead.parse(JSON.parse(placeReplyDecoder.decode(reply.subarray(0, end))));
  // A Buffer's subarray is a Buffer, a Uint8Array's a Uint8Array.
  return { head, recorded: reply.subarray(end + 1) as Bytes };
}

const placeReplyEncoder = new TextEncoder();
const placeReplyDecoder = new TextDecoder();

/** Commerce: a store's orders, newest first, by an opaque keyset cursor. */
export const storeOrdersQuery = z.object({
  status: orderStatus.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
});

export const storeOrderList = z
  .object({ orders: z.array(order).max(100), nextCursor: z.string().nullable() })
  .meta({
    id: 'StoreOrderList',
    examples: [{ orders: [orderExample], nextCursor: 'eyJjIjoiMjAyNi0xMS0yMlQxODowNTowMFoifQ' }],
  });

/**
 * The statuses a store steps an order through with `{status}` (docs/guide/orders.md#order-status).
 */
export const orderProgressStatus = z.enum(['confirmed', 'preparing', 'ready', 'inTransit']);

/**
 * Commerce: move an order (docs/guide/orders.md#order-status). A step sends `status`; finishing
 * sends `state: completed`; cancelling sends `state: cancelled` with a reason.
 */
export const orderStatusChange = z
  .object({
    status: orderProgressStatus.optional(),
    state: z.enum(['completed', 'cancelled']).optional(),
    estimatedReadyAt: dateTime.optional(),
    cancelReason: z.string().trim().min(1).max(500).optional(),
    /**
     * Deny a pending order with the items that ran out: they become unavailable until the end
     * of the store's local day (docs/guide/orders.md#denying-an-order).
     */
    unavailableItemIds: z.array(guid).min(1).max(MAX_DENIED_ITEMS).optional(),
  })
  .superRefine((change, ctx) => {
    if (change.unavailableItemIds !== undefined && change.state !== 'cancelled') {
      ctx.addIssue({
        code: 'custom',
        message: 'unavailableItemIds goes only with state cancelled',
        path: ['unavailableItemIds'],
        params: { code: 'INVALID_VALUE' },
      });
    }
    if ((change.status === undefined) === (change.state === undefined)) {
      ctx.addIssue({
        code: 'custom',
        message: 'Send either status (a step) or state (completed or cancelled)',
        path: [change.status === undefined ? 'status' : 'state'],
        params: { code: change.status === undefined ? 'REQUIRED' : 'INVALID_VALUE' },
      });
    }
    if (change.state === 'cancelled' && change.cancelReason === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'Cancelling needs a cancelReason',
        path: ['cancelReason'],
        params: { code: 'REQUIRED' },
      });
    }
    if (change.state !== 'cancelled' && change.cancelReason !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'cancelReason goes only with state cancelled',
        path: ['cancelReason'],
        params: { code: 'INVALID_VALUE' },
      });
    }
  })
  .meta({
    examples: [
      { status: 'confirmed', estimatedReadyAt: '2026-11-22T18:45:00Z' },
      { state: 'completed' },
      { state: 'cancelled', cancelReason: 'The kitchen closed early' },
      {
        state: 'cancelled',
        cancelReason: 'Out of fries',
        unavailableItemIds: ['e4f5a6b7-c8d9-4e0f-9a1b-2c3d4e5f6a71'],
      },
    ],
  });
export type OrderStatusChange = z.infer<typeof orderStatusChange>;
