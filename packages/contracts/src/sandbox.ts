import { z } from 'zod';
import { fulfillmentType, paymentType } from './common.js';

/**
 * Live and test mode (docs/guide/sandbox.md). Every partner has two tenants: its live one
 * (the partner id) and its test one (the partner's `testPartnerId`). A key carries its mode
 * in its text (`pcp_live_…`, `pcp_test_…`) and authenticates as that mode's tenant, so every
 * row a service keys by partner is of one mode by construction. Data other partners read
 * (stores, their catalogs and item availability, store events) carries the mode of its
 * owner and is visible only to requests of the same mode.
 */
export const partnerMode = z.enum(['live', 'test']);
export type PartnerMode = z.infer<typeof partnerMode>;

/** Where `POST /v1/test/orders/{orderId}/advance` moves an order, as its store would. */
export const testAdvanceTarget = z.enum([
  'confirmed',
  'preparing',
  'ready',
  'inTransit',
  'completed',
  'cancelled',
  /** The store's acceptance window passes: the platform cancels and refunds the order. */
  'timeout',
]);
export type TestAdvanceTarget = z.infer<typeof testAdvanceTarget>;

export const testAdvanceInput = z
  .strictObject({ to: testAdvanceTarget.describe('The status the order moves to') })
  .meta({ examples: [{ to: 'confirmed' }] });
export type TestAdvanceInput = z.infer<typeof testAdvanceInput>;

/**
 * Body of `POST /v1/test/stores/{storeId}/orders`: a test order placed at the commerce
 * partner's own test store as a customer would; everything is optional (the first items of
 * the active catalog that can be ordered now, PICKUP, paid at the store or by a test card).
 */
export const testStoreOrderInput = z
  .strictObject({
    fulfillmentType: fulfillmentType.optional(),
    paymentType: paymentType.optional(),
    /** How many distinct items of the catalog to order (default 1). */
    itemCount: z.number().int().min(1).max(10).optional(),
  })
  .meta({ examples: [{ fulfillmentType: 'PICKUP' }] });
export type TestStoreOrderInput = z.infer<typeof testStoreOrderInput>;

/** What `POST /v1/test/reset` deleted, by service and table: `{ "ordering.orders": 3 }`. */
export const testResetResult = z
  .object({ deleted: z.record(z.string(), z.number().int().nonnegative()) })
  .meta({
    id: 'TestReset',
    examples: [{ deleted: { 'stores.stores': 1, 'catalog.ingest_runs': 1, 'ordering.orders': 2 } }],
  });
export type TestResetResult = z.infer<typeof testResetResult>;

/** Each service's part of a reset: its tables' deleted row counts, keyed `<service>.<table>`. */
export const serviceResetReply = testResetResult;

/**
 * The platform's own test tenant: it owns the fixture stores
 * (docs/guide/sandbox.md#fixture-stores), which the platform seeds, and whose orders its fixture
 * kitchen moves to completion. No partner row or key belongs to it.
 */
export const fixtureCommercePartnerId = '00000000-0000-4000-8000-00000000f1c5';

/**
 * The three fixture stores test-mode distribution partners order at
 * (docs/guide/sandbox.md#fixture-stores): New York, London and Tokyo, in that order, each with a
 * catalog of modifiers, nested sections and availability windows.
 */
export const fixtureStoreIds = [
  '00000000-0000-4000-8000-0000000f1001',
  '00000000-0000-4000-8000-0000000f1002',
  '00000000-0000-4000-8000-0000000f1003',
] as const;

/**
 * The platform's "sandbox customer", a test-mode distribution tenant with no partner row or key:
 * `POST /v1/test/stores/{storeId}/orders` places its orders
 * (docs/guide/sandbox.md#placing-an-order-at-your-store), as end user
 * `sandboxCustomerEndUserId(commercePartnerId)`, so a reset of that commerce partner finds the
 * customer's cards, charges and addresses made for it.
 */
export const sandboxCustomerPartnerId = '00000000-0000-4000-8000-0000000c0575';

/** The sandbox customer's end user placing orders at `commercePartnerId`'s stores. */
export const sandboxCustomerEndUserId = (commercePartnerId: string) =>
  `sandbox-customer-${commercePartnerId}`;
