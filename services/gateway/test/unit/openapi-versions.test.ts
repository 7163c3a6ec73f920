import {
  API_VERSION_CHANGES,
  LATEST_API_VERSION,
  orderEventKind,
  storeEventKind,
} from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api.js';
import { documentInVersion, documentVersionOf } from '../../src/openapi/versions.js';
import { redoclyLint } from '../support/redocly-lint.js';

// Each version's OpenAPI document (docs/guide/versioning.md#openapi-documents): the newest
// brought down by the change modules. Every change of 2026-12-01 is missing from 2026-11-01's.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- OpenAPI documents as rendered
type Json = any;

const OLD = '2026-11-01';
let newer: Json;
let older: Json;

beforeAll(async () => {
  newer = await buildOpenApiDocument();
  older = await buildOpenApiDocument({ version: OLD });
});

const methods = ['get', 'put', 'post', 'delete', 'patch'];
const operationsOf = (document: Json) =>
  Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
    methods.filter((method) => item[method]).map((method) => ({ path, method, ...item[method] })),
  );
const operationIn = (document: Json, operationId: string): Json =>
  operationsOf(document).find((operation) => operation.operationId === operationId);

/** A `$ref` resolved in `document` (one level). */
const resolve = (document: Json, node: Json): Json =>
  node?.$ref ? document.components.schemas[node.$ref.split('/').at(-1)] : node;

const jsonOf = (media: Json) => media?.content?.['application/json'];
const answerOf = (document: Json, operationId: string, status = '200') =>
  resolve(document, jsonOf(operationIn(document, operationId).responses[status]).schema);
const bodyOf = (document: Json, operationId: string) =>
  jsonOf(operationIn(document, operationId).requestBody);

/** Every key and every value under `node`, descriptions and summaries left out (prose). */
function wordsOf(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(wordsOf);
  if (typeof node === 'string') return [node];
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) =>
    key === 'description' || key === 'summary' ? [key] : [key, ...wordsOf(value)],
  );
}

describe('the document of a version', () => {
  it('says its version in info.version; the newest is the default', async () => {
    expect(newer.info.version).toBe(LATEST_API_VERSION);
    expect(older.info.version).toBe(OLD);
    expect(await buildOpenApiDocument({ version: LATEST_API_VERSION })).toEqual(newer);
    expect(documentInVersion(newer, LATEST_API_VERSION)).toBe(newer);
  });

  it('leaves the newest document as it was', () => {
    const copy = structuredClone(newer);
    documentInVersion(newer, OLD);
    expect(newer).toEqual(copy);
  });

  it('of 2026-11-01 passes `redocly lint` with no errors and no warnings', async () => {
    const report = await redoclyLint(older);
    expect(report.problems.map(({ ruleId, message }) => `${ruleId}: ${message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('of 2026-11-01 has every operation but the ones 2026-12-01 added, where they were', () => {
    const added = API_VERSION_CHANGES['2026-12-01'].flatMap(
      (change) => change.addedOperations ?? [],
    );
    const expected = operationsOf(newer)
      .filter((operation) => !added.includes(operation.operationId))
      .map(({ path, method, operationId }) => `${method} ${path} ${operationId}`);
    const actual = operationsOf(older).map(
      ({ path, method, operationId }) => `${method} ${path} ${operationId}`,
    );
    expect(actual).toEqual(expected);
    expect(actual.length).toBeGreaterThan(40);
  });

  it('of 2026-11-01 keeps a request example for every body, a success example for every answer', () => {
    const hasExample = (media: Json) =>
      media.example !== undefined ||
      Object.keys(media.examples ?? {}).length > 0 ||
      resolve(older, media.schema)?.examples?.length > 0;
    for (const operation of operationsOf(older)) {
      const body = jsonOf(operation.requestBody);
      if (body) expect(hasExample(body), `${operation.operationId} request`).toBe(true);
      for (const [status, response] of Object.entries(
        operation.responses as Record<string, Json>,
      )) {
        const media = jsonOf(response);
        if (Number(status) < 300 && media) {
          expect(hasExample(media), `${operation.operationId} ${status}`).toBe(true);
        }
      }
    }
  });

  it('of 2026-11-01 keeps only the components it refers to', () => {
    const text = JSON.stringify(older);
    for (const kind of ['schemas', 'headers', 'examples']) {
      for (const name of Object.keys(older.components[kind])) {
        expect(text.includes(`"#/components/${kind}/${name}"`), `${kind} ${name}`).toBe(true);
      }
    }
    expect(Object.keys(newer.components.schemas)).toContain('StoreWebhookPayload');
    expect(Object.keys(older.components.schemas)).not.toContain('StoreWebhookPayload');
  });
});

describe('2026-12-01 changes, absent from the 2026-11-01 document', () => {
  it.each(
    API_VERSION_CHANGES['2026-12-01']
      .filter((change) => change.addedOperations)
      .map((change) => [change.name, change.addedOperations!] as const),
  )('%s: its operations', (_name, operationIds) => {
    for (const operationId of operationIds) {
      expect(operationIn(newer, operationId), operationId).toBeDefined();
      expect(operationIn(older, operationId), operationId).toBeUndefined();
    }
  });

  it('store-busy-status: no busy status, no extraPrepMinutes, busy cannot be set', () => {
    const storeOperations = [
      'upsertStore',
      'getStore',
      'rotateOrderSubmissionSecret',
      'lookUpStore',
      'getStoreStatus',
      'setStoreStatus',
    ];
    for (const operationId of storeOperations) {
      const [before, after] = [answerOf(older, operationId), answerOf(newer, operationId)];
      expect(after.properties.status.enum, operationId).toContain('busy');
      expect(after.properties).toHaveProperty('extraPrepMinutes');
      expect(before.properties.status.enum, operationId).toEqual(['online', 'paused']);
      expect(before.properties, operationId).not.toHaveProperty('extraPrepMinutes');
      expect(before.required, operationId).not.toContain('extraPrepMinutes');
    }
    for (const operationId of ['listStores', 'discoverStores']) {
      const store = answerOf(older, operationId).properties.stores.items;
      expect(store.properties.status.enum, operationId).toEqual(['online', 'paused']);
      expect(store.properties, operationId).not.toHaveProperty('extraPrepMinutes');
    }
    const statuses = (document: Json) =>
      bodyOf(document, 'setStoreStatus').schema.oneOf.map(
        (option: Json) => option.properties.status.enum[0],
      );
    expect(statuses(newer)).toEqual(['online', 'paused', 'busy']);
    expect(statuses(older)).toEqual(['online', 'paused']);
    const words = wordsOf(
      operationsOf(older).filter((op) => storeOperations.includes(op.operationId)),
    );
    expect(words).not.toContain('busy');
    expect(words).not.toContain('extraPrepMinutes');
  });

  it('order-accept-by: orders have no acceptBy', () => {
    expect(newer.components.schemas.Order.properties).toHaveProperty('acceptBy');
    for (const [operationId, status] of [
      ['getOrder', '200'],
      ['placeOrder', '201'],
      ['changeOrderStatus', '200'],
    ] as const) {
      const order = answerOf(older, operationId, status);
      expect(order.properties, operationId).not.toHaveProperty('acceptBy');
    }
    const listed = resolve(older, answerOf(older, 'listStoreOrders').properties.orders.items);
    expect(listed.properties).not.toHaveProperty('acceptBy');
    expect(wordsOf(older)).not.toContain('acceptBy');
  });

  it('item-availability: a denial names no unavailableItemIds, the timeline neither', () => {
    expect(bodyOf(newer, 'changeOrderStatus').schema.properties).toHaveProperty(
      'unavailableItemIds',
    );
    expect(bodyOf(older, 'changeOrderStatus').schema.properties).not.toHaveProperty(
      'unavailableItemIds',
    );
    expect(JSON.stringify(answerOf(newer, 'getOrderTimeline'))).toContain('unavailableItemIds');
    expect(wordsOf(older)).not.toContain('unavailableItemIds');
  });

  it('store-events: no store event kind to subscribe to, list or receive', () => {
    const storeKinds: readonly string[] = storeEventKind.options;
    const orderKinds: readonly string[] = orderEventKind.options;
    expect(Object.keys(newer.webhooks)).toEqual([...orderKinds, ...storeKinds]);
    expect(Object.keys(older.webhooks)).toEqual(orderKinds);
    const subscribable = (document: Json) =>
      bodyOf(document, 'putWebhook').schema.properties.events.items.enum;
    expect(subscribable(newer)).toEqual([...orderKinds, ...storeKinds]);
    expect(subscribable(older)).toEqual(orderKinds);
    expect(bodyOf(older, 'putWebhook').schema.properties.events.maxItems).toBe(orderKinds.length);
    for (const operationId of ['getWebhook', 'rotateWebhookSecret']) {
      expect(answerOf(older, operationId).properties.events.items.enum).toEqual(orderKinds);
    }
    const delivery = (document: Json) =>
      resolve(document, answerOf(document, 'listWebhookDeliveries').properties.deliveries.items);
    expect(delivery(older).properties.type.enum).toEqual(orderKinds);
    // Only a store event's delivery has no order.
    expect(delivery(newer).properties.orderId.anyOf).toContainEqual({ type: 'null' });
    expect(delivery(older).properties.orderId).toMatchObject({ type: 'string', format: 'uuid' });
    const webhookOperations = ['putWebhook', 'getWebhook', 'rotateWebhookSecret'];
    const words = wordsOf([
      older.webhooks,
      ...operationsOf(older).filter((op) =>
        [...webhookOperations, 'listWebhookDeliveries'].includes(op.operationId),
      ),
    ]);
    for (const kind of storeKinds) expect(words, kind).not.toContain(kind);
  });
});

describe('the version GET /openapi.json?version= asks for', () => {
  it('is the newest without one, and the one named', () => {
    expect(documentVersionOf({})).toBe(LATEST_API_VERSION);
    expect(documentVersionOf(undefined)).toBe(LATEST_API_VERSION);
    expect(documentVersionOf({ version: OLD })).toBe(OLD);
  });

  it.each([
    ['an unknown date', '2026-11-02'],
    ['empty', ''],
    ['repeated', [OLD, OLD]],
    ['an object', { $ne: null }],
    ['oversized', OLD.repeat(1_000)],
  ])('refuses %s with API_VERSION_INVALID', (_case, version) => {
    expect(() => documentVersionOf({ version })).toThrow(AppError);
    try {
      documentVersionOf({ version });
    } catch (error) {
      expect(error).toMatchObject({ code: 'API_VERSION_INVALID', info: { status: 400 } });
      expect((error as Error).message).not.toContain(OLD.repeat(2));
    }
  });
});
