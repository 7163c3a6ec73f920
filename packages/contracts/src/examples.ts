/**
 * One coherent set of example values for the contract schemas' `.meta({ examples })`: one
 * store, its CatalogSet, a cart, an order and its webhooks, with ids that agree across
 * them. The OpenAPI document shows them; `packages/contracts/test/examples.test.ts` parses
 * each with the schema it illustrates (they are not typed by the schemas here: a schema's
 * type would then depend on its own examples).
 */

export const exampleIds = {
  store: '5f1e9c3a-7b2d-4e8f-9a6c-1d0b3e5f7a92',
  catalogSet: 'c4a8e2f0-1b3d-4c5e-8f7a-9b0c1d2e3f40',
  catalog: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
  section: 'b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e',
  burger: 'd3e4f5a6-b7c8-4d9e-8f0a-1b2c3d4e5f60',
  fries: 'e4f5a6b7-c8d9-4e0f-9a1b-2c3d4e5f6a71',
  sides: 'f5a6b7c8-d9e0-4f1a-8b2c-3d4e5f6a7b82',
  line: '9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d',
  sideLine: '8b7c6d5e-4f3a-4b2c-8d1e-0f9a8b7c6d5e',
  order: '0b9d7e4c-6a2f-4f1e-8c3d-2a1b0c9d8e7f',
  payment: '2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f',
  address: '3d4e5f6a-7b8c-4d9e-8f0a-2b3c4d5e6f70',
  ingest: '8a7b6c5d-4e3f-4a1b-9c2d-0e1f2a3b4c5d',
  delivery: '7c6b5a49-3827-4160-9f8e-7d6c5b4a3928',
  event: '6d5c4b3a-2918-4f07-8e6d-5c4b3a291807',
} as const;

const openingHours = (['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday'] as const).map(
  (dayOfWeek) => ({ dayOfWeek, start: '11:00:00', end: '22:00:00' }),
);

/** The example store's address, coordinates included (as the platform stores and shows it). */
export const exampleStoreAddress = {
  address1: '233 S Wacker Dr',
  address2: null,
  city: 'Chicago',
  state: 'IL',
  postalCode: '60606',
  country: 'US',
  latitude: 41.8789,
  longitude: -87.6359,
};

const { latitude: _latitude, longitude: _longitude, ...profileAddress } = exampleStoreAddress;

export const storeProfileExample = {
  name: 'Lakeside Burgers',
  phone: '+13125550142',
  timezone: 'America/Chicago',
  currency: 'USD',
  address: profileAddress,
  fulfillmentTypes: ['PICKUP', 'DELIVERY_BY_MERCHANT'],
  availability: openingHours,
  delivery: { radiusMeters: 5000, fee: 2.99, minimumOrder: 15, etaMinutes: 40 },
  pickup: { etaMinutes: 15 },
  taxRate: 0.0875,
  minimumOrder: 0,
  orderSubmissionUrl: 'https://pos.lakeside-burgers.example/orders',
  acceptanceWindowSeconds: 600,
};

const { orderSubmissionUrl: _url, ...publicProfile } = storeProfileExample;

export const marketfrontStoreExample = {
  storeId: exampleIds.store,
  ...publicProfile,
  currency: 'USD',
  address: exampleStoreAddress,
  minimumOrder: 0,
  status: 'online',
  extraPrepMinutes: null,
  isOpenNow: true,
  nextOpenAt: null,
  catalogSetId: exampleIds.catalogSet,
};

export const commerceStoreExample = {
  ...marketfrontStoreExample,
  orderSubmissionUrl: storeProfileExample.orderSubmissionUrl,
  orderSubmissionPreviousSecretExpiresAt: null,
  createdAt: '2026-11-02T09:15:00Z',
  updatedAt: '2026-11-20T16:40:00Z',
};

export const storeStatusExamples = [
  {
    status: 'online',
    reason: null,
    pausedAt: null,
    resumeAt: null,
    extraPrepMinutes: null,
    pausedBy: null,
  },
  {
    status: 'paused',
    reason: 'too_busy',
    pausedAt: '2026-11-22T18:05:00Z',
    resumeAt: '2026-11-22T18:35:00Z',
    extraPrepMinutes: null,
    pausedBy: 'partner',
  },
  {
    status: 'busy',
    reason: null,
    pausedAt: '2026-11-22T18:05:00Z',
    resumeAt: '2026-11-22T20:00:00Z',
    extraPrepMinutes: 20,
    pausedBy: null,
  },
];

export const catalogSetExample = {
  catalogSetId: exampleIds.catalogSet,
  storeId: exampleIds.store,
  currency: 'USD',
  catalogs: {
    [exampleIds.catalog]: {
      catalogId: exampleIds.catalog,
      name: 'All day',
      sectionIds: [exampleIds.section],
      availability: openingHours,
    },
  },
  sections: {
    [exampleIds.section]: {
      sectionId: exampleIds.section,
      name: 'Burgers',
      sectionIds: [],
      itemIds: [exampleIds.burger],
    },
  },
  items: {
    [exampleIds.burger]: {
      itemId: exampleIds.burger,
      name: 'Cheeseburger',
      description: 'Beef patty, cheddar, pickles',
      basePrice: 9.5,
      isAvailable: true,
      modifierGroupIds: [exampleIds.sides],
      imageUrl: 'https://cdn.lakeside-burgers.example/cheeseburger.jpg',
    },
    [exampleIds.fries]: {
      itemId: exampleIds.fries,
      name: 'Fries',
      basePrice: 0,
      isAvailable: true,
    },
  },
  modifierGroups: {
    [exampleIds.sides]: {
      modifierGroupId: exampleIds.sides,
      name: 'Choose a side',
      minimumAllowed: 1,
      maximumAllowed: 1,
      itemIds: [exampleIds.fries],
    },
  },
};

/** What the example CatalogSet changed against the catalog before it. */
export const catalogIngestSummaryExample = {
  items: 2,
  sections: 1,
  modifierGroups: 1,
  added: 1,
  removed: 0,
  priceChanged: 1,
};

export const catalogIngestStatusExamples = [
  {
    catalogIngestId: exampleIds.ingest,
    storeId: exampleIds.store,
    status: 'succeeded',
    createdAt: '2026-11-22T09:00:00Z',
    updatedAt: '2026-11-22T09:00:04Z',
    errors: [],
    summary: catalogIngestSummaryExample,
  },
  {
    catalogIngestId: exampleIds.ingest,
    storeId: exampleIds.store,
    status: 'failed',
    createdAt: '2026-11-22T09:00:00Z',
    updatedAt: '2026-11-22T09:00:03Z',
    errors: [
      {
        message: `Unknown modifier group ${exampleIds.sides}; contact support quoting catalogIngestId ${exampleIds.ingest}`,
        path: `/items/${exampleIds.burger}/modifierGroupIds/0`,
      },
    ],
  },
];

/** A cart as a partner sends it: one cheeseburger with fries. */
export const cartExample = {
  catalogSetId: exampleIds.catalogSet,
  storeId: exampleIds.store,
  lineItems: [
    {
      itemId: exampleIds.burger,
      lineItemId: exampleIds.line,
      quantity: 2,
      modifierGroups: [
        {
          modifierGroupId: exampleIds.sides,
          lineItems: [{ itemId: exampleIds.fries, lineItemId: exampleIds.sideLine, quantity: 1 }],
        },
      ],
    },
  ],
};

export const pricedCartExample = {
  catalogSetId: exampleIds.catalogSet,
  storeId: exampleIds.store,
  currency: 'USD',
  lineItems: [
    {
      itemId: exampleIds.burger,
      lineItemId: exampleIds.line,
      quantity: 2,
      name: 'Cheeseburger',
      unitPrice: 9.5,
      totalPrice: 19,
      modifierGroups: [
        {
          modifierGroupId: exampleIds.sides,
          name: 'Choose a side',
          lineItems: [
            {
              itemId: exampleIds.fries,
              lineItemId: exampleIds.sideLine,
              quantity: 1,
              name: 'Fries',
              unitPrice: 0,
              totalPrice: 0,
              modifierGroups: [],
            },
          ],
        },
      ],
    },
  ],
  subTotal: 19,
  itemCount: 2,
  errors: [],
};

const customer = {
  firstName: 'Dana',
  lastName: 'Reyes',
  phone: '+13125550199',
  email: 'dana.reyes@example.com',
};
const client = {
  ip: '203.0.113.24',
  userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15',
};

/** The body of validate and place: a delivery paid by a vaulted card. */
export const orderRequestExample = {
  cart: cartExample,
  fulfillment: {
    mode: 'DELIVERY_BY_MERCHANT',
    scheduleType: 'ASAP',
    address: { addressId: exampleIds.address },
    deliveryType: 'DOOR_TO_DOOR',
    instructions: 'Ring twice',
  },
  client,
  customer,
  paymentId: exampleIds.payment,
  paymentType: 'CARD',
  tip: 2,
  specialInstructions: 'No onions',
  amounts: { total: 25.65 },
};

const amounts = {
  currency: 'USD',
  subTotal: 19,
  fees: 2.99,
  feesBreakdown: [{ type: 'DELIVERY', amount: 2.99 }],
  promotions: 0,
  taxes: 1.66,
  taxesBreakdown: [{ type: 'SALES_TAX', rate: 0.0875, amount: 1.66 }],
  adjustments: 0,
  tip: 2,
  total: 25.65,
};

export const savedAddressFields = {
  address1: '401 N Wabash Ave',
  address2: 'Apt 12B',
  city: 'Chicago',
  state: 'IL',
  postalCode: '60611',
  country: 'US',
};

const orderFulfillment = {
  mode: 'DELIVERY_BY_MERCHANT',
  scheduleType: 'ASAP',
  scheduledTime: null,
  address: { ...savedAddressFields, latitude: 41.8893, longitude: -87.6268 },
  deliveryType: 'DOOR_TO_DOOR',
  instructions: 'Ring twice',
};

export const validatedOrderExamples = [
  {
    isValid: true,
    errors: [],
    amounts,
    cart: pricedCartExample,
    fulfillment: orderFulfillment,
    client,
    customer,
    paymentType: 'CARD',
    specialInstructions: 'No onions',
  },
  {
    isValid: false,
    errors: [
      {
        code: 'STORE_CLOSED',
        message: 'The store is not taking orders now; it opens at 2026-11-23T17:00:00Z',
        pointer: '/cart/storeId',
      },
    ],
    amounts: null,
    cart: pricedCartExample,
    fulfillment: orderFulfillment,
    client,
    customer,
    paymentType: 'CARD',
    specialInstructions: 'No onions',
  },
];

export const orderExample = {
  orderId: exampleIds.order,
  storeId: exampleIds.store,
  isValid: true,
  errors: [],
  amounts,
  cart: pricedCartExample,
  fulfillment: orderFulfillment,
  client,
  customer,
  paymentType: 'CARD',
  payment: { paymentId: exampleIds.payment, brand: 'VISA', last4: '4242' },
  specialInstructions: 'No onions',
  state: 'open',
  status: 'pending',
  version: 1,
  estimatedReadyAt: '2026-11-22T18:45:00Z',
  acceptBy: '2026-11-22T18:15:00Z',
  cancelReason: null,
  cancelledBy: null,
  createdAt: '2026-11-22T18:05:00Z',
  updatedAt: '2026-11-22T18:05:00Z',
};

export const savedAddressExample = {
  addressId: exampleIds.address,
  ...savedAddressFields,
  latitude: 41.8893,
  longitude: -87.6268,
  createdAt: '2026-11-20T12:00:00Z',
};

export const vaultedCardExample = {
  paymentId: exampleIds.payment,
  brand: 'VISA',
  last4: '4242',
  expMonth: 12,
  expYear: 2030,
  createdAt: '2026-11-20T12:01:00Z',
};

export const webhookEndpointExample = {
  url: 'https://hooks.marketfront.example/pcp/orders',
  events: ['order.created', 'order.status_changed', 'order.cancelled'],
  apiVersion: '2026-12-01',
  status: 'active',
  disabledReason: null,
  previousSecretExpiresAt: null,
  createdAt: '2026-11-01T08:00:00Z',
  updatedAt: '2026-11-01T08:00:00Z',
};

export const webhookDeliveryExample = {
  deliveryId: exampleIds.delivery,
  eventId: exampleIds.event,
  type: 'order.status_changed',
  orderId: exampleIds.order,
  storeId: exampleIds.store,
  version: 2,
  status: 'failed',
  attempts: 2,
  nextAttemptAt: '2026-11-22T18:41:00Z',
  lastAttemptAt: '2026-11-22T18:11:00Z',
  lastResponseStatus: 503,
  lastLatencyMs: 212,
  lastError: 'The endpoint answered HTTP 503',
  occurredAt: '2026-11-22T18:10:55Z',
  deliveredAt: null,
};

export const webhookDeliveryAttemptsExample = {
  deliveryId: exampleIds.delivery,
  attempts: [
    {
      attempt: 1,
      outcome: 'failed',
      responseStatus: 503,
      latencyMs: 187,
      error: 'The endpoint answered HTTP 503',
      at: '2026-11-22T18:10:56Z',
    },
    {
      attempt: 2,
      outcome: 'failed',
      responseStatus: 503,
      latencyMs: 212,
      error: 'The endpoint answered HTTP 503',
      at: '2026-11-22T18:11:00Z',
    },
  ],
  attemptsOmitted: 0,
};
