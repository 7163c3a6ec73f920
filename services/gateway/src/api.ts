import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { LATEST_API_VERSION, type ApiVersion } from '@pcp/contracts';
import { AppError, type BusClient } from '@pcp/service-kit';
import Fastify, { type FastifyInstance } from 'fastify';
import type { AccountReads } from './http/account-reads.js';
import type { ApiVersionPins } from './http/api-version-pins.js';
import { plainSerializerCompiler, zodValidatorCompiler } from './http/validation.js';
import { openApiOptions } from './openapi/document.js';
import { documentInVersion, documentVersionOf, versionedDocuments } from './openapi/versions.js';
import { accountRoutes } from './routes/account.routes.js';
import { addressRoutes } from './routes/addresses.routes.js';
import { cartRoutes } from './routes/carts.routes.js';
import { catalogDryRunRoutes } from './routes/catalog-dry-run.routes.js';
import { catalogRoutes } from './routes/catalog.routes.js';
import { catalogIngestListRoutes } from './routes/catalog-ingests.routes.js';
import { discoveryRoutes } from './routes/discovery.routes.js';
import { orderLifecycleRoutes } from './routes/order-lifecycle.routes.js';
import { orderRoutes } from './routes/orders.routes.js';
import { partnerOrderRoutes } from './routes/partner-orders.routes.js';
import { paymentRoutes } from './routes/payments.routes.js';
import { docsRoutes } from './routes/docs.routes.js';
import { publicRoutes } from './routes/public.routes.js';
import { schemaRoutes } from './routes/schemas.routes.js';
import { sessionRoutes } from './routes/sessions.routes.js';
import { storeRoutes } from './routes/stores.routes.js';
import { testHelperRoutes } from './routes/test-helpers.routes.js';
import { itemAvailabilityRoutes } from './routes/item-availability.routes.js';
import { liveEventRoutes, type LiveEventsOptions } from './routes/live-events.routes.js';
import { webhookStreamRoutes, type WebhookStreamOptions } from './routes/webhook-stream.routes.js';
import { webhookRoutes } from './routes/webhooks.routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The services' request/reply client the routes call. */
    readonly bus: BusClient;
  }
}

export interface ApiOptions {
  readonly bus: BusClient;
  /** Where partners reach the API: the document's server. */
  readonly publicBaseUrl: string;
  /** Where the error-code pages are: ProblemDetail `type` is `${docsUrl}/errors/<code>`. */
  readonly docsUrl: string;
  readonly placeTimeoutMs: number;
  readonly paymentsTimeoutMs: number;
  /** How long a catalog dry run may take: the catalog service's download plus validation. */
  readonly catalogDryRunTimeoutMs: number;
  /** The test-mode webhook stream (docs/guide/sandbox.md#webhook-stream). */
  readonly webhookStreams: WebhookStreamOptions;
  /** The live event streams (docs/guide/live-events.md). */
  readonly liveEvents: LiveEventsOptions;
  /** The request log, keys and rate-limit usage (docs/guide/requests.md). */
  readonly accountReads: AccountReads;
  /** The partner's API version pin (docs/guide/requests.md#api-version). */
  readonly apiVersionPins: ApiVersionPins;
}

/**
 * Swagger UI's own policy, on /docs and each of its files: it shares the console's origin and
 * session cookie, so it runs no script but its own files (it has no inline one), reaches the
 * API only on this origin, and may not be framed nor submit a form anywhere.
 */
const docsSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/**
 * The public API on `app`: the OpenAPI document (`/openapi.json`, `/docs`) and every route.
 * The gateway serves it; `buildOpenApiDocument` renders the same document without a server.
 */
export function registerApi(app: FastifyInstance, options: ApiOptions): void {
  const { publicBaseUrl, docsUrl } = options;
  app.decorate('bus', options.bus);
  void app.register(fastifySwagger, openApiOptions({ publicBaseUrl, docsUrl }));
  void app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    staticCSP: docsSecurityPolicy,
    // Without the top bar: its logo is an SVG with a <style> element, which the policy refuses.
    uiConfig: { layout: 'BaseLayout' },
    // Its pages (its static files have the CSP alone).
    uiHooks: {
      onRequest: (_request, reply, done) => {
        reply
          .header('x-content-type-options', 'nosniff')
          .header('referrer-policy', 'no-referrer')
          .header('cross-origin-opener-policy', 'same-origin');
        done();
      },
    },
  });
  // Each version's document (?version=DATE, the newest without one) says its version as every
  // answer does; a PCP-Version header does not pick the document.
  const documents = versionedDocuments(() => app.swagger() as unknown as Record<string, unknown>);
  app.get('/openapi.json', { schema: { hide: true } }, (request, reply) => {
    const version = documentVersionOf(request.query);
    void reply.header('pcp-version', version);
    return documents(version);
  });

  // Routes go in plugins loaded after swagger, so its onRoute hook sees them all. The order
  // is the document's: routes that forward their body (discovery, carts, orders) come last.
  void app.register(publicRoutes, { docsUrl });
  void app.register(docsRoutes, { docsUrl });
  void app.register(schemaRoutes, { publicBaseUrl });
  void app.register(sessionRoutes);
  void app.register(storeRoutes);
  void app.register(itemAvailabilityRoutes);
  void app.register(catalogRoutes);
  void app.register(catalogIngestListRoutes);
  void app.register(catalogDryRunRoutes, { timeoutMs: options.catalogDryRunTimeoutMs });
  void app.register(addressRoutes);
  void app.register(orderLifecycleRoutes, { statusChangeTimeoutMs: options.paymentsTimeoutMs });
  void app.register(partnerOrderRoutes);
  void app.register(webhookRoutes);
  void app.register(webhookStreamRoutes, options.webhookStreams);
  void app.register(liveEventRoutes, options.liveEvents);
  void app.register(paymentRoutes, { timeoutMs: options.paymentsTimeoutMs });
  void app.register(testHelperRoutes, {
    placeTimeoutMs: options.placeTimeoutMs,
    paymentsTimeoutMs: options.paymentsTimeoutMs,
  });
  void app.register(accountRoutes, {
    reads: options.accountReads,
    pins: options.apiVersionPins,
  });
  void app.register(discoveryRoutes);
  void app.register(cartRoutes);
  void app.register(orderRoutes, { placeTimeoutMs: options.placeTimeoutMs });
}

const notConnected = () => Promise.reject(new AppError('SERVICE_UNAVAILABLE', 'Not connected'));

/** A bus and account reads for rendering the document: no route is ever called. */
const unconnectedBus: BusClient = { request: notConnected, requestRaw: notConnected };
const unconnectedAccountReads: AccountReads = {
  requests: notConnected,
  errors: notConnected,
  keys: notConnected,
  rateLimits: notConnected,
};
const unconnectedPins: ApiVersionPins = {
  read: () => {
    throw new AppError('SERVICE_UNAVAILABLE', 'Not connected');
  },
  moveForward: notConnected,
};

/**
 * The OpenAPI document the gateway serves at `/openapi.json` (the newest version's, or
 * `version`'s), rendered without connecting to anything: the typed client is generated from
 * the newest (`npm run generate:client`), and each version's is released
 * (services/gateway/openapi/releases/).
 */
export async function buildOpenApiDocument(
  options: { publicBaseUrl?: string; docsUrl?: string; version?: ApiVersion } = {},
): Promise<Record<string, unknown>> {
  const publicBaseUrl = options.publicBaseUrl ?? 'http://localhost:8080';
  const app = Fastify({ logger: false });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(plainSerializerCompiler);
  registerApi(app, {
    bus: unconnectedBus,
    publicBaseUrl,
    docsUrl: options.docsUrl ?? `${publicBaseUrl}/docs`,
    placeTimeoutMs: 0,
    paymentsTimeoutMs: 0,
    catalogDryRunTimeoutMs: 0,
    webhookStreams: { wakeups: { watch: () => () => undefined }, perPartner: 1, heartbeatMs: 0 },
    liveEvents: {
      hub: { listen: () => () => undefined },
      perPartner: 1,
      heartbeatMs: 0,
      maxQueuedBytes: 0,
    },
    accountReads: unconnectedAccountReads,
    apiVersionPins: unconnectedPins,
  });
  try {
    await app.ready();
    const newest = app.swagger() as unknown as Record<string, unknown>;
    return documentInVersion(newest, options.version ?? LATEST_API_VERSION);
  } finally {
    await app.close();
  }
}
