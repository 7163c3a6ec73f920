import type { SwaggerOptions, SwaggerTransformObject } from '@fastify/swagger';
import {
  csrfTokenHeader,
  errorCodes,
  isErrorCode,
  LATEST_API_VERSION,
  orderEventKind,
  sessionCookieName,
  storeEventKind,
} from '@pcp/contracts';
import { jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { problemExample } from '../docs/error-pages.js';
import { guideUrl, type GuideName, type GuideSection } from '../docs/guides.js';
import { ACCOUNT_TAG } from '../routes/account.routes.js';
import { CATALOGSET_SCHEMA_PATH } from './catalogset-schema.js';
import { responseHeaders, type ResponseHeaderName } from './headers.js';
import { createRouteTransform } from './route-transform.js';
import { SANDBOX_TAG, TEST_ONLY_EXTENSION } from './test-only.js';

interface Tag {
  readonly name: string;
  readonly description: string;
  /** Where the rules of the tag's operations are written: the tag's externalDocs by default. */
  readonly guide: GuideName | GuideSection;
  readonly externalDocs?: { url: string; description: string };
}

/** The tags as the document declares them, each linked to its guide. */
const withGuides = (docsUrl: string, list: readonly Tag[]) =>
  list.map(({ guide, ...tag }) => ({
    externalDocs: { url: guideUrl(docsUrl, guide), description: 'The rules, in the guide' },
    ...tag,
  }));

/** Every tag an operation carries, with what its operations are for and the guide of its rules. */
const tags = (catalogSetSchema: { url: string; description: string }, docsUrl: string) =>
  withGuides(docsUrl, [
    {
      name: 'Commerce: stores',
      guide: 'stores',
      description:
        'Your stores: their profiles (the store id is your own GUID) and their status, online or ' +
        "paused with a reason. Another partner's store answers 404 STORE_NOT_FOUND.",
    },
    {
      name: 'Commerce: catalog',
      guide: 'catalogs',
      description:
        "Publish a store's CatalogSet: host the JSON document at a URL, notify it, then poll the " +
        'ingest until it succeeded or failed. Check a document against the CatalogSet JSON ' +
        `Schema (${catalogSetSchema.url}) before notifying it. The rules: ` +
        `${guideUrl(docsUrl, 'catalogs')}.`,
      externalDocs: catalogSetSchema,
    },
    {
      name: 'Commerce: orders',
      guide: { guide: 'orders', heading: 'Order status' },
      description:
        'Orders placed at your stores: list them and move them along their statuses; each move ' +
        'is a webhook to the partner that placed the order.',
    },
    {
      name: 'Marketfront: stores',
      guide: { guide: 'stores', heading: 'Discovery' },
      description: "Find the stores that serve a customer's location, and look one up by id.",
    },
    {
      name: 'Marketfront: catalog',
      guide: { guide: 'catalogs', heading: 'Reading a catalog' },
      description:
        "A store's active CatalogSet, cached by ETag. Its JSON Schema: " +
        `${catalogSetSchema.url}. The rules: ` +
        `${guideUrl(docsUrl, { guide: 'catalogs', heading: 'Reading a catalog' })}.`,
      externalDocs: catalogSetSchema,
    },
    {
      name: 'Marketfront: carts',
      guide: 'carts',
      description:
        'Stateless cart helpers: send the whole cart, get it back priced from the current ' +
        'CatalogSet with its modifier rules checked. Nothing is stored.',
    },
    {
      name: 'Marketfront: orders',
      guide: 'orders',
      description:
        'Validate an order (a dry run that prices it and lists every problem), place it (with an ' +
        'Idempotency-Key) and read it afterwards.',
    },
    {
      name: 'Marketfront: saved addresses',
      guide: { guide: 'orders', heading: 'Saved addresses' },
      description: "An end user's geocoded delivery addresses, for fulfillment.address.addressId.",
    },
    {
      name: 'Marketfront: payment cards',
      guide: 'payments',
      description:
        "An end user's cards, vaulted with the payment processor; an order pays with a card's " +
        'paymentId. Card numbers and CVCs are never stored or returned.',
    },
    {
      name: 'Marketfront: webhooks',
      guide: 'webhooks',
      description:
        'Your order-status webhook endpoint, its signing secret and its deliveries (see the ' +
        "document's webhooks for what each delivery carries).",
    },
    {
      name: 'Live events',
      guide: 'live-events',
      description:
        'Server-sent event streams that keep a page current without polling: a store’s order ' +
        'and store events, your orders’ events and webhook tries.',
    },
    {
      name: 'Console sessions',
      guide: { guide: 'authentication', heading: 'Console sessions' },
      description:
        'The partner console signs in with an API key once and then uses a short-lived ' +
        'session cookie (cookieAuth) instead of the key; its writes carry X-CSRF-Token ' +
        '(csrfToken). Integrations use their key (bearerAuth).',
    },
    {
      name: ACCOUNT_TAG,
      guide: 'requests',
      description:
        'What your integration did and may still do: your recent requests with their status ' +
        'and errorCode (the errors grouped by code), your API keys and their last use, and ' +
        'your rate-limit usage, each for the calling key’s mode only; and your API version ' +
        'pin, which your live and test keys share.',
    },
    {
      name: SANDBOX_TAG,
      guide: 'sandbox',
      description:
        'Operations only test keys (pcp_test_…) may call, each marked ' +
        `${TEST_ONLY_EXTENSION}: true: moving a test order as its store would, placing a test ` +
        'order at your own test store, deleting your test data, and streaming your webhook ' +
        'deliveries to a laptop. A live key gets 403 FORBIDDEN.',
    },
  ]);

/** `order.status_changed` → `orderStatusChanged`. */
const camelCase = (name: string) =>
  name.replace(/[._]([a-z])/g, (_match, letter: string) => letter.toUpperCase());

/**
 * Order and store events as delivered to a distribution partner's endpoint
 * (docs/guide/webhooks.md, docs/guide/webhooks.md#store-events).
 */
function partnerWebhooks() {
  const signatureHeaders = Object.entries({
    'webhook-id': 'The event id: the same on every retry and resend of this event; dedupe on it.',
    'webhook-timestamp': 'Seconds since the Unix epoch when this try was signed.',
    'webhook-signature':
      'Space-separated v1,<base64 HMAC-SHA256> signatures (Standard Webhooks); during a ' +
      'secret rotation one per secret.',
    'pcp-version':
      'The API version the body is written in: your endpoint’s apiVersion ' +
      '(docs/guide/webhooks.md#api-version).',
  }).map(([name, description]) => ({
    in: 'header' as const,
    name,
    required: true,
    description,
    schema: { type: 'string' as const },
  }));
  const meaning = {
    'order.created': 'An order was placed.',
    'order.status_changed': 'An order moved to another status, or was completed.',
    'order.cancelled':
      'The store (or the platform, when the store did not accept it in time) cancelled an order.',
    'store.status_changed': 'A store went online, paused or busy (with its extra minutes).',
    'store.hours_changed': 'A store changed its time zone, weekly hours or special days.',
    'store.items_availability_changed':
      'Items of a store became unavailable (until a time) or available again.',
    'catalog.activated': 'A store activated a new CatalogSet.',
  } as const satisfies Record<
    (typeof orderEventKind.options)[number] | (typeof storeEventKind.options)[number],
    string
  >;
  const kinds = [
    ...orderEventKind.options.map((kind) => ({ kind, schema: 'WebhookPayload', per: 'order' })),
    ...storeEventKind.options.map((kind) => ({
      kind,
      schema: 'StoreWebhookPayload',
      per: 'store, sent to every partner subscribed to it',
    })),
  ];
  return Object.fromEntries(
    kinds.map(({ kind, schema, per }) => [
      kind,
      {
        post: {
          operationId: `${camelCase(kind)}Webhook`,
          summary: `Webhook ${kind}`,
          description:
            `${meaning[kind]} POSTed to your registered endpoint, signed with Standard ` +
            `Webhooks, at least once and in order per ${per} (keep the highest version). ` +
            'Answer 2xx when received; 410 Gone disables the endpoint; Retry-After is ' +
            'honoured; other answers are retried with backoff for about a day.',
          tags: ['Marketfront: webhooks'],
          security: [],
          parameters: signatureHeaders,
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: { $ref: `#/components/schemas/${schema}` } },
            },
          },
          responses: {
            '2XX': { description: 'Received' },
            '410': { description: 'Gone: disable the endpoint; nothing more is sent to it' },
          },
        },
      },
    ]),
  );
}

/** Every `$ref` target under `value`. */
export function referencesIn(value: unknown, found: Set<string>): Set<string> {
  const pending = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) pending.push(...(node as unknown[]));
    else if (typeof node === 'object' && node !== null) {
      for (const [key, child] of Object.entries(node)) {
        if (key === '$ref' && typeof child === 'string') found.add(child);
        else pending.push(child);
      }
    }
  }
  return found;
}

type JsonObject = Record<string, unknown>;
const objectsOf = (value: unknown): JsonObject[] =>
  typeof value === 'object' && value !== null ? (Object.values(value) as JsonObject[]) : [];

/**
 * The route transform writes every response header and ProblemDetail example out in full;
 * they are the same on every operation, so the document holds each once, in
 * `components.headers` and `components.examples`, and responses refer to it.
 */
function withSharedHeadersAndExamples(document: JsonObject, docsUrl: string): JsonObject {
  const headers: JsonObject = {};
  const examples: JsonObject = {};
  const responses = objectsOf(document.paths)
    .flatMap(objectsOf)
    .flatMap((operation) => objectsOf(operation.responses));
  for (const response of responses) {
    for (const name of Object.keys(response.headers ?? {})) {
      if (!Object.hasOwn(responseHeaders, name)) continue;
      const { description, ...schema } = responseHeaders[name as ResponseHeaderName];
      // Only X-Request-Id and PCP-Version are on every response; the others depend on route
      // and status.
      headers[name] = {
        description,
        required: name === 'X-Request-Id' || name === 'PCP-Version',
        schema,
      };
      (response.headers as JsonObject)[name] = { $ref: `#/components/headers/${name}` };
    }
    for (const media of objectsOf(response.content)) {
      for (const key of Object.keys(media.examples ?? {})) {
        if (!isErrorCode(key)) continue;
        examples[key] = {
          summary: errorCodes[key].title,
          value: problemExample(key, docsUrl),
        };
        (media.examples as JsonObject)[key] = { $ref: `#/components/examples/${key}` };
      }
    }
  }
  const components = (document.components ?? {}) as JsonObject;
  return { ...document, components: { ...components, headers, examples } };
}

/**
 * The component schemas the document uses. fastify-type-provider-zod renders an input and
 * an output variant of every schema with an id; the variants no operation uses would be
 * types of nothing in generated clients.
 */
export function withoutUnusedSchemas(document: JsonObject): JsonObject {
  const components = (document.components ?? {}) as { schemas?: JsonObject };
  const schemas = components.schemas ?? {};
  const prefix = '#/components/schemas/';
  const used = referencesIn({ ...document, components: { ...components, schemas: {} } }, new Set());
  for (let added = true; added;) {
    added = false;
    for (const ref of [...used]) {
      const name = ref.startsWith(prefix) ? ref.slice(prefix.length) : undefined;
      if (name === undefined || !(name in schemas)) continue;
      const before = used.size;
      referencesIn(schemas[name], used);
      added ||= used.size > before;
    }
  }
  return {
    ...document,
    components: {
      ...components,
      schemas: Object.fromEntries(
        Object.entries(schemas).filter(([name]) => used.has(`${prefix}${name}`)),
      ),
    },
  };
}

const documentTransform =
  (docsUrl: string): SwaggerTransformObject =>
  (input) =>
    withoutUnusedSchemas(withSharedHeadersAndExamples(jsonSchemaTransformObject(input), docsUrl));

/** The @fastify/swagger options of the served document. */
export function openApiOptions(options: {
  publicBaseUrl: string;
  docsUrl: string;
}): SwaggerOptions {
  const catalogSetSchema = {
    url: `${options.publicBaseUrl}${CATALOGSET_SCHEMA_PATH}`,
    description: 'The CatalogSet JSON Schema',
  };
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Partner Commerce Platform API',
        // The dated API version the document describes (docs/guide/versioning.md): an older
        // one's document is this one brought down (./versions.ts).
        version: LATEST_API_VERSION,
        description:
          'Commerce partners (/v1/commerce) publish stores and catalogs and move orders; ' +
          'distribution partners (/v1/marketfront) discover stores, price carts, place orders ' +
          'and receive order webhooks. Authenticate with your API key as ' +
          'Authorization: Bearer <key>.\n\n' +
          `The rules of each area (authentication, catalogs, stores, carts, orders, payments, ` +
          `webhooks, errors, sandbox) are in the guides at ${options.docsUrl}/guide; each tag links to ` +
          'its own.\n\n' +
          'Test keys (pcp_test_…) reach the sandbox: the same operations on test data only, ' +
          `plus the operations of the Sandbox tag (${options.docsUrl}/guide/sandbox).\n\n` +
          'Errors are RFC 9457 ProblemDetail (application/problem+json); each errorCode has a ' +
          `page at ${options.docsUrl}/errors/<errorCode> saying what happened and what to do. ` +
          'Every response carries X-Request-Id and PCP-Version; rate-limited routes carry ' +
          'X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, and a 429 carries ' +
          'Retry-After.\n\n' +
          'Versioning: the API has dated versions (YYYY-MM-DD); your partner is pinned to one ' +
          'and PCP-Version picks another per request ' +
          `(${options.docsUrl}/guide/versioning, ${options.docsUrl}/guide/changelog). ` +
          'Without a new version, changes are additive (new operations, optional fields, new ' +
          'OrderError codes, which clients must route to OTHER). This document is the version ' +
          'info.version names; /openapi.json?version=YYYY-MM-DD serves another version’s, the ' +
          'newest without one.',
      },
      servers: [{ url: options.publicBaseUrl }],
      externalDocs: {
        url: `${options.docsUrl}/guide`,
        description: 'Guides: the rules of the API',
      },
      tags: tags(catalogSetSchema, options.docsUrl),
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer' },
          cookieAuth: {
            type: 'apiKey',
            in: 'cookie',
            name: sessionCookieName,
            description:
              'A console session (POST /v1/sessions), instead of the key when no ' +
              'Authorization header is sent.',
          },
          csrfToken: {
            type: 'apiKey',
            in: 'header',
            name: csrfTokenHeader,
            description:
              "The session's csrfToken: with cookieAuth, required on POST, PUT, PATCH and " +
              'DELETE (403 CSRF_REJECTED without it).',
          },
        },
      },
      security: [{ bearerAuth: [] }],
      webhooks: partnerWebhooks(),
    },
    transform: createRouteTransform({ docsUrl: options.docsUrl }),
    // Schemas registered with an id (the recursive priced line and cart) become components
    // that routes reference; without this their $refs would point nowhere.
    transformObject: documentTransform(options.docsUrl),
  };
}
