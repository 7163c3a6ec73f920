/**
 * The typed TypeScript client of the Partner Commerce Platform: an openapi-fetch client
 * typed from the served OpenAPI document, and what partners otherwise write themselves
 * (place with retries under one Idempotency-Key, webhook verification, catalog ingest as
 * one call, the open OrderError enum). The CatalogSet dry run that `pcp-catalog dry-run`
 * runs is `@pcp/client/catalog-dry-run`, apart, so this entry point stays free of the
 * validator's weight.
 */
export type { paths, components, operations } from './generated/openapi.js';
export {
  createPlatformClient,
  createSessionClient,
  type PlatformClient,
  type PlatformClientOptions,
  type SessionClientOptions,
} from './client.js';
export { PlatformProblem, type ProblemDetail, type OrderError } from './problem.js';
export { orderErrorCode, orderErrorCodes, type OrderErrorCode } from './order-errors.js';
export {
  placeOrder,
  type Order,
  type PlaceOrderInput,
  type PlaceOrderRequest,
  type PlacedOrder,
} from './place.js';
export {
  createWebhookVerifier,
  WebhookVerificationError,
  type OrderWebhookEvent,
  type StoreHoursWindow,
  type StoreSpecialDay,
  type StoreWebhookEvent,
  type WebhookEvent,
  type WebhookVerifier,
} from './webhooks.js';
export {
  CatalogIngestTimeoutError,
  ingestCatalog,
  type CatalogIngestStatus,
  type IngestCatalogInput,
} from './ingest.js';
export {
  fixtureStoreIds,
  fixtureStoreOrder,
  NoFixtureStoreError,
  type FixtureStoreOrderOptions,
} from './sandbox.js';
