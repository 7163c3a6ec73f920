import { errorCodes, isErrorCode } from '@pcp/contracts';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api.js';
import { redoclyLint as lint } from '../support/redocly-lint.js';

const docsUrl = 'https://api.partner-commerce.test/docs';
const methods = ['get', 'put', 'post', 'delete', 'patch'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document as rendered
type Json = any;
let document: Json;

interface Operation {
  method: string;
  path: string;
  operation: Json;
}
let operations: Operation[];

beforeAll(async () => {
  document = await buildOpenApiDocument({ docsUrl });
  operations = Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
    methods
      .filter((method) => item[method])
      .map((method) => ({ method, path, operation: item[method] })),
  );
});

function operation(operationId: string): Json {
  const found = operations.find((entry) => entry.operation.operationId === operationId);
  if (!found) throw new Error(`no operation ${operationId}`);
  return found.operation;
}

/** A `$ref` resolved in the document (one level). */
function resolve(node: Json): Json {
  if (!node?.$ref) return node;
  return (node.$ref as string)
    .slice(2)
    .split('/')
    .reduce((at: Json, token: string) => at?.[token], document);
}

const headerNames = (response: Json) => Object.keys(response.headers ?? {});
const parameter = (op: Json, name: string) =>
  (op.parameters as Json[] | undefined)?.find((entry) => entry.name === name);

describe('the OpenAPI document', () => {
  it('passes `redocly lint` with no errors and no warnings', async () => {
    const report = await lint(document);
    expect(report.problems.map(({ ruleId, message }) => `${ruleId}: ${message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('lint catches an example that does not match its schema (the check above can fail)', async () => {
    const broken = structuredClone(document);
    broken.components.schemas.Order.examples[0].orderId = 42;
    const report = await lint(broken);
    expect(report.problems.map((problem) => problem.ruleId)).toContain(
      'no-invalid-schema-examples',
    );
  });

  it('gives every operation an id, a summary, a description and declared tags', () => {
    const declared = new Map(
      (document.tags as { name: string; description?: string }[]).map((tag) => [tag.name, tag]),
    );
    expect(operations.length).toBeGreaterThan(25);
    for (const { method, path, operation: op } of operations) {
      const where = `${method} ${path}`;
      expect(op.operationId, where).toMatch(/^[a-zA-Z]+$/);
      expect(op.summary, where).toBeTruthy();
      expect(op.description, where).toBeTruthy();
      for (const tag of op.tags as string[])
        expect(declared.get(tag)?.description, where).toBeTruthy();
    }
  });

  /** Marketfront reads by store id: a malformed id is a 404 with no body, as the spec wants. */
  const bodilessNotFound = ['lookUpStore', 'lookUpItemAvailability'];

  it('answers every failure as ProblemDetail, each code linked to its page with an example', () => {
    for (const { method, path, operation: op } of operations) {
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        const where = `${method} ${path} ${status}`;
        // The one status some requests get without a body (the next test).
        if (bodilessNotFound.includes(op.operationId) && status === '404') continue;
        expect(Object.keys(response.content), where).toEqual(['application/problem+json']);
        const media = response.content['application/problem+json'];
        expect(media.schema, where).toEqual({ $ref: '#/components/schemas/ProblemDetail' });
        const codes = Object.keys(media.examples);
        expect(codes.length, where).toBeGreaterThan(0);
        for (const code of codes) {
          expect(isErrorCode(code), where).toBe(true);
          expect(errorCodes[code as keyof typeof errorCodes].status, `${where} ${code}`).toBe(
            Number(status),
          );
          expect(response.description, where).toContain(`(${docsUrl}/errors/${code})`);
          const example = resolve(media.examples[code]);
          expect(example.value).toMatchObject({
            errorCode: code,
            status: Number(status),
            type: `${docsUrl}/errors/${code}`,
          });
        }
      }
    }
  });

  it.each(bodilessNotFound)(
    'declares %s’s 404 without content: a ProblemDetail, or no body for a malformed id',
    (operationId) => {
      const notFound = operation(operationId).responses[404];
      // A validating proxy (Prism) matches a declared content's media type against every
      // answer; the bodiless 404 has none, so the status declares no content.
      expect(notFound.content).toBeUndefined();
      expect(notFound.description).toContain(
        `[\`STORE_NOT_FOUND\`](${docsUrl}/errors/STORE_NOT_FOUND)`,
      );
      expect(notFound.description).toContain('the ProblemDetail schema');
      expect(notFound.description).toContain('no body at all, without a Content-Type');
      expect(notFound.description).toContain('for a storeId that is not a GUID');
      expect(headerNames(notFound)).toContain('X-Request-Id');
      // Every other 404 keeps its ProblemDetail content.
      expect(Object.keys(operation('getOrder').responses[404].content)).toEqual([
        'application/problem+json',
      ]);
    },
  );

  it('declares the codes every authenticated route answers, and each route its own', () => {
    const codesOf = (op: Json, status: number) =>
      Object.keys(op.responses[status]?.content['application/problem+json'].examples ?? {});
    // A route's own 429s beside the partner's budget.
    const own429: Record<string, string[]> = {
      notifyCatalogSetChanged: ['CATALOG_INGEST_QUEUE_FULL'],
      vaultCard: ['PAYMENT_VELOCITY_EXCEEDED'],
    };
    // Every /v1 operation but sign-in, which takes its key in the body.
    const authenticated = operations.filter(
      ({ path, operation: op }) => path.startsWith('/v1/') && op.security?.length !== 0,
    );
    expect(authenticated.length).toBe(
      operations.filter(({ path }) => path.startsWith('/v1/')).length - 1,
    );
    for (const { operation: op } of authenticated) {
      expect(codesOf(op, 401)).toContain('UNAUTHORIZED');
      expect(codesOf(op, 403)).toContain('FORBIDDEN');
      expect(codesOf(op, 429)).toEqual(['RATE_LIMITED', ...(own429[op.operationId] ?? [])]);
      expect(codesOf(op, 500)).toEqual(['INTERNAL']);
      expect(codesOf(op, 503)).toContain('SERVICE_UNAVAILABLE');
      expect(codesOf(op, 504)).toEqual(['UPSTREAM_TIMEOUT']);
    }
    const signIn = operation('createSession');
    expect(codesOf(signIn, 401)).toEqual(['UNAUTHORIZED']);
    expect(codesOf(signIn, 403)).toEqual([]);
    expect(codesOf(signIn, 413)).toEqual(['PAYLOAD_TOO_LARGE']);
    expect(codesOf(operation('deleteCurrentSession'), 403)).toEqual(['FORBIDDEN', 'CSRF_REJECTED']);
    const place = operation('placeOrder');
    expect(codesOf(place, 400)).toEqual(
      expect.arrayContaining(['MISSING_IDEMPOTENCY_KEY', 'ORDER_INVALID', 'PAYMENT_DECLINED']),
    );
    expect(codesOf(place, 401)).toEqual(['UNAUTHORIZED', 'SESSION_USER_REQUIRED']);
    expect(codesOf(place, 409)).toEqual(['IDEMPOTENCY_KEY_IN_PROGRESS']);
    expect(codesOf(place, 413)).toEqual(['PAYLOAD_TOO_LARGE']);
    expect(codesOf(operation('getOrder'), 404)).toEqual(['ORDER_NOT_FOUND']);
    expect(codesOf(operation('getOrder'), 413)).toEqual([]);
    expect(codesOf(operation('getCatalogSet'), 404)).toEqual(['CATALOGSET_NOT_FOUND']);
  });

  it('sends X-Request-Id on every response, X-RateLimit-* on rate-limited routes, Retry-After on 429', () => {
    for (const { method, path, operation: op } of operations.filter(({ path }) =>
      path.startsWith('/v1/'),
    )) {
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        const where = `${method} ${path} ${status}`;
        expect(headerNames(response), where).toEqual(
          expect.arrayContaining([
            'X-Request-Id',
            'X-RateLimit-Limit',
            'X-RateLimit-Remaining',
            'X-RateLimit-Reset',
          ]),
        );
        if (status === '429') expect(headerNames(response), where).toContain('Retry-After');
        if (status === '401') expect(headerNames(response), where).toContain('WWW-Authenticate');
      }
    }
    // Declared once, referred to everywhere.
    expect(operation('getOrder').responses[200].headers['X-Request-Id']).toEqual({
      $ref: '#/components/headers/X-Request-Id',
    });
    expect(document.components.headers['X-Request-Id']).toMatchObject({
      required: true,
      schema: { type: 'string' },
    });
  });

  it('documents the headers of place: Idempotency-Key, the end user, replays, Location, Retry-After', () => {
    const place = operation('placeOrder');
    expect(parameter(place, 'Idempotency-Key')).toMatchObject({ in: 'header', required: true });
    expect(parameter(place, 'X-End-User-Id')).toMatchObject({ in: 'header', required: true });
    expect(parameter(place, 'X-Request-Id')).toMatchObject({ in: 'header', required: false });
    expect(headerNames(place.responses[201])).toEqual(
      expect.arrayContaining(['Location', 'Idempotent-Replayed']),
    );
    for (const status of [400, 403, 404]) {
      expect(headerNames(place.responses[status])).toContain('Idempotent-Replayed');
    }
    expect(headerNames(place.responses[409])).toContain('Retry-After');
    expect(headerNames(place.responses[422])).not.toContain('Idempotent-Replayed');
  });

  it('says that a replayed ProblemDetail keeps the first request id, the header this one', () => {
    for (const text of [
      document.components.headers['Idempotent-Replayed'].description,
      operation('placeOrder').description,
    ]) {
      expect(text).toMatch(/requestId and timestamp are the first answer/);
      expect(text).toMatch(/X-Request-Id header/);
    }
  });

  it('documents validate’s errorsOmitted beside its errors', () => {
    const validated = resolve(
      operation('validateOrder').responses[200].content['application/json'].schema,
    );
    expect(validated.properties.errorsOmitted).toMatchObject({
      type: 'integer',
      exclusiveMinimum: 0,
    });
    expect(validated.required).not.toContain('errorsOmitted');
  });

  it('documents X-End-User-Id as required or optional by route, and no idempotency elsewhere', () => {
    expect(parameter(operation('vaultCard'), 'X-End-User-Id')?.required).toBe(true);
    expect(parameter(operation('listAddresses'), 'X-End-User-Id')?.required).toBe(true);
    expect(parameter(operation('validateOrder'), 'X-End-User-Id')?.required).toBe(false);
    expect(parameter(operation('getOrder'), 'X-End-User-Id')).toBeUndefined();
    expect(parameter(operation('validateOrder'), 'Idempotency-Key')).toBeUndefined();
  });

  it('documents the catalog headers: Location and Retry-After, ETag and If-None-Match', () => {
    const notify = operation('notifyCatalogSetChanged');
    expect(headerNames(notify.responses[202])).toEqual(
      expect.arrayContaining(['Location', 'Retry-After']),
    );
    expect(headerNames(operation('getCatalogIngestStatus').responses[200])).toContain(
      'Retry-After',
    );
    const catalogSet = operation('getCatalogSet');
    expect(parameter(catalogSet, 'If-None-Match')).toMatchObject({
      in: 'header',
      required: false,
      schema: { type: 'string', maxLength: 512 },
    });
    expect(headerNames(catalogSet.responses[200])).toContain('ETag');
    expect(headerNames(catalogSet.responses[304])).toContain('ETag');
    expect(catalogSet.responses[304].content).toBeUndefined();
  });

  it('has a request example for every body and a success example for every JSON response', () => {
    const hasExample = (media: Json) =>
      media.example !== undefined ||
      media.examples !== undefined ||
      resolve(media.schema)?.examples?.length > 0;
    for (const { method, path, operation: op } of operations) {
      const where = `${method} ${path}`;
      const body = op.requestBody?.content['application/json'];
      if (body) expect(hasExample(body), `${where} request`).toBe(true);
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        const media = response.content?.['application/json'];
        if (Number(status) < 300 && media) {
          expect(hasExample(media), `${where} ${status}`).toBe(true);
        }
      }
    }
  });

  it('links the CatalogSet JSON Schema and documents the order and store webhooks', () => {
    const catalogTags = (document.tags as Json[]).filter((tag) => tag.name.endsWith(': catalog'));
    expect(catalogTags).toHaveLength(2);
    for (const tag of catalogTags) {
      expect(tag.externalDocs.url).toBe('http://localhost:8080/schemas/catalogset.json');
    }
    expect(Object.keys(document.webhooks)).toEqual([
      'order.created',
      'order.status_changed',
      'order.cancelled',
      'store.status_changed',
      'store.hours_changed',
      'store.items_availability_changed',
      'catalog.activated',
    ]);
    const payloadOf = (kind: string) =>
      document.webhooks[kind].post.requestBody.content['application/json'].schema;
    expect(payloadOf('order.created')).toEqual({ $ref: '#/components/schemas/WebhookPayload' });
    expect(payloadOf('catalog.activated')).toEqual({
      $ref: '#/components/schemas/StoreWebhookPayload',
    });
  });

  it('takes a key or a console session on partner operations, a session’s writes with its CSRF token', () => {
    const session = { cookieAuth: [] };
    const sessionWrite = { cookieAuth: [], csrfToken: [] };
    expect(operation('getStore').security).toEqual([{ bearerAuth: [] }, session]);
    expect(operation('upsertStore').security).toEqual([{ bearerAuth: [] }, sessionWrite]);
    expect(operation('createSession').security).toEqual([]);
    expect(operation('getCurrentSession').security).toEqual([session]);
    expect(operation('deleteCurrentSession').security).toEqual([sessionWrite]);
    expect(Object.keys(document.components.securitySchemes)).toEqual([
      'bearerAuth',
      'cookieAuth',
      'csrfToken',
    ]);
  });

  it('keeps only the component schemas it refers to', () => {
    const text = JSON.stringify({
      ...document,
      components: { ...document.components, schemas: {} },
    });
    const schemas = Object.keys(document.components.schemas);
    expect(schemas).toContain('ProblemDetail');
    for (const name of schemas) {
      const referred =
        text.includes(`"#/components/schemas/${name}"`) ||
        JSON.stringify(document.components.schemas).includes(`"#/components/schemas/${name}"`);
      expect(referred, name).toBe(true);
    }
  });
});
