import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { AppError, type BusClient, type RequestContext } from '@pcp/service-kit';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { plainSerializerCompiler, zodValidatorCompiler } from './http/validation.js';
import { openApiOptions } from './openapi/document.js';
import { registerCartRoutes } from './routes/carts.routes.js';
import { registerCatalogValidationRoutes } from './routes/catalog-validation.routes.js';
import { registerCatalogRoutes } from './routes/catalog.routes.js';
import { registerOrderLifecycleRoutes } from './routes/order-lifecycle.routes.js';
import { registerOrderRoutes } from './routes/orders.routes.js';
import { registerPaymentRoutes } from './routes/payments.routes.js';
import { registerPublicRoutes } from './routes/public.routes.js';
import { registerSchemaRoutes } from './routes/schemas.routes.js';
import { registerStoreRoutes } from './routes/stores.routes.js';
import { registerWebhookRoutes } from './routes/webhooks.routes.js';

export interface ApiOptions {
  readonly bus: BusClient;
  readonly contextOf: (request: FastifyRequest) => RequestContext;
  /** Where partners reach the API: the document's server. */
  readonly publicBaseUrl: string;
  /** Where the error-code pages are: ProblemDetail `type` is `${docsUrl}/errors/<code>`. */
  readonly docsUrl: string;
  readonly placeTimeoutMs: number;
  readonly paymentsTimeoutMs: number;
  /** How long a catalog dry run may take: the catalog service's download plus validation. */
  readonly catalogValidationTimeoutMs: number;
}

/**
 * The public API on `app`: the OpenAPI document (`/openapi.json`, `/docs`) and every route.
 * The gateway serves it; `buildOpenApiDocument` renders the same document without a server.
 */
export function registerApi(app: FastifyInstance, options: ApiOptions): void {
  const { bus, contextOf, docsUrl } = options;
  void app.register(
    fastifySwagger,
    openApiOptions({ publicBaseUrl: options.publicBaseUrl, docsUrl }),
  );
  void app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());

  // Routes go in a plugin loaded after swagger, so its onRoute hook sees them all.
  void app.register((api, _options, done) => {
    registerPublicRoutes(api, docsUrl);
    registerSchemaRoutes(api, options.publicBaseUrl);
    registerStoreRoutes(api, bus, contextOf);
    registerCatalogRoutes(api, bus, contextOf);
    registerCatalogValidationRoutes(api, bus, contextOf, options.catalogValidationTimeoutMs);
    registerCartRoutes(api, bus, contextOf);
    registerOrderRoutes(api, bus, contextOf, options.placeTimeoutMs);
    registerOrderLifecycleRoutes(api, bus, contextOf, options.paymentsTimeoutMs);
    registerWebhookRoutes(api, bus, contextOf);
    registerPaymentRoutes(api, bus, contextOf, options.paymentsTimeoutMs);
    done();
  });
}

/** A bus for rendering the document: no route is ever called. */
const unconnectedBus: BusClient = {
  request: () => Promise.reject(new AppError('SERVICE_UNAVAILABLE', 'Not connected')),
  requestRaw: () => Promise.reject(new AppError('SERVICE_UNAVAILABLE', 'Not connected')),
};

/**
 * The OpenAPI document the gateway serves at `/openapi.json`, rendered without connecting
 * to anything: the typed client is generated from it (`npm run generate:client`).
 */
export async function buildOpenApiDocument(
  options: { publicBaseUrl?: string; docsUrl?: string } = {},
): Promise<Record<string, unknown>> {
  const publicBaseUrl = options.publicBaseUrl ?? 'http://localhost:8080';
  const app = Fastify({ logger: false });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(plainSerializerCompiler);
  registerApi(app, {
    bus: unconnectedBus,
    contextOf: (request) => ({ requestId: request.id }),
    publicBaseUrl,
    docsUrl: options.docsUrl ?? `${publicBaseUrl}/docs`,
    placeTimeoutMs: 0,
    paymentsTimeoutMs: 0,
    catalogValidationTimeoutMs: 0,
  });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
  }
}
