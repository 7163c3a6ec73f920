import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '../test-support/cart-catalog.js';
import { createTestEnvironment, type TestEnvironment } from '../test-support/environment.js';
import { storeProfile } from '../test-support/fixtures.js';
import { startPlatform, type TestPlatform } from '../test-support/platform.js';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { ingestCatalog } from './ingest.js';
import { newBuyer, sodaOrder } from './orders.js';

const PLACE = '/v1/marketfront/orders/place';
const everyDay = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'].map(
  (dayOfWeek) => ({ dayOfWeek, start: '00:00:00', end: '00:00:00' }),
);
const cards = {
  success: '4242424242424242',
  declined: '4000000000000002',
  processingError: '4000000000000119',
  hangs: '4000000000007775',
};

/** A store's order-submission endpoint whose answer the test sets. */
interface SubmissionHost {
  url: string;
  answer: { status: number; body?: unknown };
  received: { headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

async function startSubmissionHost(): Promise<SubmissionHost> {
  const host: Omit<SubmissionHost, 'url' | 'close'> = { answer: { status: 200 }, received: [] };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      host.received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() });
      response.writeHead(host.answer.status, { 'content-type': 'application/json' });
      response.end(host.answer.body === undefined ? '' : JSON.stringify(host.answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(host, {
    url: `http://127.0.0.1:${port}/orders`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let submissions: SubmissionHost;
let commerce: { apiKey: string };
let distribution: { apiKey: string; partnerId: string };
let other: { apiKey: string };
/** Each store's catalog ids (its CatalogSet is its own). */
const catalogIds = new Map<string, ReturnType<typeof cartTestCatalog>['ids']>();
/** A store without a submission URL, and one whose URL is the test's host. */
let plainStore: string;
let submittingStore: string;

async function createStore(profile: Record<string, unknown>): Promise<string> {
  const storeId = randomUUID();
  const put = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile({ availability: everyDay, minimumOrder: 5, ...profile }),
  });
  expect(put.status).toBeLessThan(300);
  const catalog = cartTestCatalog(storeId);
  catalogIds.set(storeId, catalog.ids);
  await ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document: catalog.document,
  });
  return storeId;
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    paymentsEnv: { PAYMENT_PROCESSOR_TIMEOUT_MS: '1500' },
    orderingEnv: {
      ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
      ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.1/32',
      ORDERING_PAYMENTS_TIMEOUT_MS: '4000',
    },
  });
  host = await startCatalogHost();
  submissions = await startSubmissionHost();
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution', {
    paymentTypes: ['CARD', 'PAY_AT_STORE'],
  });
  other = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
  plainStore = await createStore({ orderSubmissionUrl: undefined });
  submittingStore = await createStore({ orderSubmissionUrl: submissions.url });
});

afterAll(async () => {
  await submissions?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const orderBody = (storeId: string, paymentId: string, overrides: Record<string, unknown> = {}) =>
  // An unknown store borrows a real store's catalog: only the store id is wrong.
  sodaOrder(catalogIds.get(storeId) ?? catalogIds.get(plainStore)!, storeId, paymentId, overrides);

const place = (
  body: unknown,
  key: string | null,
  endUser: string | null = 'shopper',
  apiKey = distribution.apiKey,
): Promise<HttpResult> =>
  call(platform.baseUrl, 'POST', PLACE, {
    apiKey,
    ...(typeof body === 'string' ? { rawBody: body } : { body }),
    headers: {
      ...(key === null ? {} : { 'idempotency-key': key }),
      ...(endUser === null ? {} : { 'x-end-user-id': endUser }),
    },
  });

/** The simulator's charges for one amount placed by this file's orders. */
const chargesOf = (last4: string) => platform.processor.charges().filter((c) => c.last4 === last4);

/** The same JSON with every object's keys reversed and indented: the same canonical form. */
const reshuffled = (value: unknown): string => {
  const reverse = (node: unknown): unknown =>
    Array.isArray(node)
      ? node.map(reverse)
      : node !== null && typeof node === 'object'
        ? Object.fromEntries(
            Object.entries(node)
              .reverse()
              .map(([k, v]) => [k, reverse(v)]),
          )
        : node;
  return JSON.stringify(reverse(value), null, 2);
};

const buyer = (card = cards.success) => newBuyer(platform.baseUrl, distribution.apiKey, card);

describe('placing an order', () => {
  it('charges once, answers 201 with the order, and replays it byte for byte', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const before = platform.processor.charges().length;
    const placed = await place(body, key, endUser);
    expect(placed.status).toBe(201);
    expect(placed.headers.get('idempotent-replayed')).toBeNull();
    expect(placed.headers.get('location')).toBe(`/v1/marketfront/orders/${placed.body.orderId}`);
    expect(placed.body).toMatchObject({
      storeId: plainStore,
      isValid: true,
      errors: [],
      state: 'open',
      status: 'pending',
      version: 1,
      paymentType: 'CARD',
      payment: { paymentId, brand: 'VISA', last4: '4242' },
      amounts: { subTotal: 19.9, taxes: 1.74, tip: 2, total: 23.64 },
      client: { ip: '8.8.4.4' },
    });
    const charges = platform.processor.charges().slice(before);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ amount: 2364, status: 'captured', capturedAmount: 2364 });

    // Key order and whitespace do not change the fingerprint (RFC 8785).
    const replay = await place(reshuffled(body), key, endUser);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(placed.text);
    expect(platform.processor.charges()).toHaveLength(before + 1);
  });

  it('takes PAY_AT_STORE without a card and charges nothing', async () => {
    const before = platform.processor.charges().length;
    const body = orderBody(plainStore, randomUUID(), { paymentType: 'PAY_AT_STORE' });
    delete (body as { paymentId?: string }).paymentId;
    const placed = await place(body, randomUUID());
    expect(placed.status).toBe(201);
    expect(placed.body).toMatchObject({ paymentType: 'PAY_AT_STORE', payment: null });
    expect(platform.processor.charges()).toHaveLength(before);
  });

  it('gives one order and one charge to 20 concurrent requests with one key', async () => {
    const { endUser, paymentId } = await buyer();
    platform.processor.setFaults({ latencyMs: 150 });
    try {
      const body = orderBody(plainStore, paymentId);
      const key = randomUUID();
      const before = platform.processor.charges().length;
      const results = await Promise.all(
        Array.from({ length: 20 }, () => place(body, key, endUser)),
      );
      const created = results.filter((result) => result.status === 201);
      const busy = results.filter((result) => result.status === 409);
      expect(created.length + busy.length).toBe(20);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((result) => result.body.orderId)).size).toBe(1);
      for (const result of busy) {
        expect(result.body.errorCode).toBe('IDEMPOTENCY_KEY_IN_PROGRESS');
        expect(Number(result.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      const charges = platform.processor.charges().slice(before);
      expect(charges).toHaveLength(1);
      expect(charges[0]?.status).toBe('captured');
      // The retry the 409s were told to make gets the order.
      const retried = await place(body, key, endUser);
      expect(retried.status).toBe(201);
      expect(retried.text).toBe(created[0]?.text);
    } finally {
      platform.processor.setFaults({ latencyMs: 0 });
    }
  });
});

describe('the scope and fingerprint of a key', () => {
  it('refuses the key with another body, end user or partner (422), and keeps its order', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const placed = await place(body, key, endUser);
    expect(placed.status).toBe(201);

    const otherBody = await place({ ...body, tip: 3, amounts: { total: 24.64 } }, key, endUser);
    const otherUser = await place(body, key, 'someone-else');
    const otherPartner = await place(body, key, endUser, other.apiKey);
    for (const result of [otherBody, otherUser, otherPartner]) {
      expect(result.status).toBe(422);
      expect(result.body).toMatchObject({
        errorCode: 'IDEMPOTENCY_KEY_CONFLICT',
        errorCategory: 'idempotency',
        retryable: false,
      });
      expect(result.headers.get('idempotent-replayed')).toBeNull();
    }
    // A recorded key never lets a malformed body through: it is refused as malformed.
    const malformed = await place({ ...body, tip: '2' }, key, endUser);
    expect(malformed.status).toBe(400);
    expect(malformed.body.errorCode).toBe('REQUEST_INVALID');
    expect((await place(body, key, endUser)).text).toBe(placed.text);
  });

  it('needs the key and the end user, and does not record a malformed body', async () => {
    const { endUser, paymentId } = await buyer();
    const missing = await place(orderBody(plainStore, paymentId), null, endUser);
    expect(missing.status).toBe(400);
    expect(missing.body.errorCode).toBe('MISSING_IDEMPOTENCY_KEY');
    const noUser = await place(orderBody(plainStore, paymentId), randomUUID(), null);
    expect(noUser.status).toBe(401);
    expect(noUser.body.errorCode).toBe('SESSION_USER_REQUIRED');
    const longKey = await place(orderBody(plainStore, paymentId), 'k'.repeat(256), endUser);
    expect(longKey.status).toBe(400);
    expect(longKey.body.errorCode).toBe('REQUEST_INVALID');

    const key = randomUUID();
    const shapes: unknown[] = [
      '{"cart": ',
      '[]',
      { ...orderBody(plainStore, paymentId), amounts: undefined },
      { ...orderBody(plainStore, paymentId), paymentId: undefined },
      { ...orderBody(plainStore, paymentId), paymentType: 'BITCOIN' },
      { ...orderBody(plainStore, paymentId), tip: '2' },
      '{"__proto__": {"admin": true}}',
    ];
    for (const shape of shapes) {
      const result = await place(shape, key, endUser);
      expect(result.status).toBe(400);
      expect(result.body.errorCode).toBe('REQUEST_INVALID');
    }
    const pointers = (
      await place({ ...orderBody(plainStore, paymentId), paymentId: undefined }, key, endUser)
    ).body.errors.map((error: { pointer: string }) => error.pointer);
    expect(pointers).toContain('/paymentId');
    // None of them took the key: it still places the order.
    expect((await place(orderBody(plainStore, paymentId), key, endUser)).status).toBe(201);
  });

  it('refuses an oversized body and another media type before touching the key', async () => {
    const { endUser, paymentId } = await buyer();
    const huge = orderBody(plainStore, paymentId, { specialInstructions: 'x'.repeat(2_000_000) });
    const tooLarge = await place(huge, randomUUID(), endUser);
    expect(tooLarge.status).toBe(413);
    const text = await call(platform.baseUrl, 'POST', PLACE, {
      apiKey: distribution.apiKey,
      rawBody: 'hello',
      headers: {
        'content-type': 'text/plain',
        'idempotency-key': randomUUID(),
        'x-end-user-id': endUser,
      },
    });
    expect(text.status).toBe(415);
  });
});

describe('final failures are recorded and replayed', () => {
  it('ORDER_INVALID with the validate errors; no charge', async () => {
    const { endUser, paymentId } = await buyer();
    const before = platform.processor.charges().length;
    const body = orderBody(plainStore, paymentId, { amounts: { total: 20 } });
    const key = randomUUID();
    const refused = await place(body, key, endUser);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      errorCode: 'ORDER_INVALID',
      errorCategory: 'order',
      retryable: false,
      errors: [{ code: 'ORDER_TOTAL_DIFFERENT', pointer: '/amounts/total' }],
    });
    const replay = await place(body, key, endUser);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.status).toBe(400);
    expect(replay.text).toBe(refused.text);
    expect(platform.processor.charges()).toHaveLength(before);
  });

  it('404 STORE_NOT_FOUND and 403 PAYMENT_TYPE_NOT_ALLOWED', async () => {
    const { endUser, paymentId } = await buyer();
    const unknownStore = orderBody(randomUUID(), paymentId);
    const key = randomUUID();
    const notFound = await place(unknownStore, key, endUser);
    expect(notFound.status).toBe(404);
    expect(notFound.body.errorCode).toBe('STORE_NOT_FOUND');
    expect((await place(unknownStore, key, endUser)).headers.get('idempotent-replayed')).toBe(
      'true',
    );

    const cardOnly = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
    const body = orderBody(plainStore, paymentId, { paymentType: 'PAY_AT_STORE' });
    delete (body as { paymentId?: string }).paymentId;
    const forbidden = await place(body, randomUUID(), endUser, cardOnly.apiKey);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({
      errorCode: 'PAYMENT_TYPE_NOT_ALLOWED',
      errors: [{ code: 'PAYMENT_TYPE_NOT_ALLOWED', pointer: '/paymentType' }],
    });
  });

  it('PAYMENT_DECLINED once, replayed without asking the processor again', async () => {
    const { endUser, paymentId } = await buyer(cards.declined);
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const before = platform.processor.charges().length;
    const declined = await place(body, key, endUser);
    expect(declined.status).toBe(400);
    expect(declined.body).toMatchObject({
      errorCode: 'PAYMENT_DECLINED',
      errors: [{ pointer: '/paymentId' }],
    });
    const replay = await place(body, key, endUser);
    expect(replay.text).toBe(declined.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(platform.processor.charges()).toHaveLength(before + 1);
  });
});

describe('retryable failures keep the key', () => {
  it('PAYMENT_FAILED (processing error) is not recorded: the key tries again', async () => {
    const { endUser, paymentId } = await buyer(cards.processingError);
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const first = await place(body, key, endUser);
    expect(first.status).toBe(400);
    expect(first.body).toMatchObject({ errorCode: 'PAYMENT_FAILED', retryable: true });
    const second = await place(body, key, endUser);
    expect(second.status).toBe(400);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.requestId).not.toBe(first.body.requestId);
  });

  it('a processor that hangs is 503 PAYMENT_PROCESSOR_UNAVAILABLE; nothing is captured', async () => {
    const { endUser, paymentId } = await buyer(cards.hangs);
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const started = Date.now();
    const first = await place(body, key, endUser);
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({
      errorCode: 'PAYMENT_PROCESSOR_UNAVAILABLE',
      retryable: true,
    });
    expect(Date.now() - started).toBeLessThan(4_000);
    const second = await place(body, key, endUser);
    expect(second.status).toBe(503);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(chargesOf('7775').filter((charge) => charge.capturedAmount > 0)).toHaveLength(0);
  });
});

describe('submission to the store', () => {
  it('POSTs the signed order; a store that took it starts it confirmed', async () => {
    const store = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${submittingStore}`, {
      apiKey: commerce.apiKey,
    });
    const secret = store.body.orderSubmissionSecret as string;
    expect(secret).toMatch(/^whsec_/);
    const { endUser, paymentId } = await buyer();
    submissions.answer = { status: 202 };
    submissions.received.length = 0;
    const placed = await place(orderBody(submittingStore, paymentId), randomUUID(), endUser);
    expect(placed.status).toBe(201);
    expect(placed.body.status).toBe('confirmed');
    expect(submissions.received).toHaveLength(1);
    const [request] = submissions.received;
    const submitted = new Webhook(secret).verify(
      request!.body,
      request!.headers as Record<string, string>,
    ) as { orderId: string; amounts: { total: number } };
    expect(submitted).toMatchObject({ orderId: placed.body.orderId, amounts: { total: 23.64 } });
    expect(request!.headers['webhook-id']).toBe(placed.body.orderId);
  });

  it('a 4xx is STORE_REJECTED with the store’s errors, and the authorization is voided', async () => {
    const { endUser, paymentId } = await buyer();
    submissions.answer = {
      status: 422,
      body: {
        errors: [{ code: 'ITEM_SOLD_OUT', message: 'No soda left', pointer: '/cart/lineItems/0' }],
      },
    };
    const before = platform.processor.charges().length;
    const body = orderBody(submittingStore, paymentId);
    const key = randomUUID();
    const rejected = await place(body, key, endUser);
    expect(rejected.status).toBe(400);
    expect(rejected.body).toMatchObject({
      errorCode: 'STORE_REJECTED',
      errors: [{ code: 'ITEM_SOLD_OUT', message: 'No soda left', pointer: '/cart/lineItems/0' }],
    });
    const charges = platform.processor.charges().slice(before);
    expect(charges).toHaveLength(1);
    expect(charges[0]?.status).toBe('voided');
    expect((await place(body, key, endUser)).text).toBe(rejected.text);
  });

  it('an unreachable store keeps the key; the retry submits once more and charges once', async () => {
    const { endUser, paymentId } = await buyer();
    submissions.answer = { status: 503 };
    submissions.received.length = 0;
    const before = platform.processor.charges().length;
    const body = orderBody(submittingStore, paymentId);
    const key = randomUUID();
    const unavailable = await place(body, key, endUser);
    expect(unavailable.status).toBe(503);
    expect(unavailable.body).toMatchObject({ errorCode: 'SERVICE_UNAVAILABLE', retryable: true });
    submissions.answer = { status: 200 };
    const placed = await place(body, key, endUser);
    expect(placed.status).toBe(201);
    expect(placed.headers.get('idempotent-replayed')).toBeNull();
    expect(submissions.received).toHaveLength(2);
    expect(new Set(submissions.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const charges = platform.processor.charges().slice(before);
    expect(charges).toHaveLength(1);
    expect(charges[0]?.status).toBe('captured');
  });
});

describe('keys past their retention', () => {
  it('are deleted; an abandoned authorization is voided first', async () => {
    const { endUser, paymentId } = await buyer();
    // Abandoned: the store could not be reached and the partner never retried.
    submissions.answer = { status: 503 };
    const before = platform.processor.charges().length;
    const abandonedKey = randomUUID();
    const abandoned = await place(orderBody(submittingStore, paymentId), abandonedKey, endUser);
    expect(abandoned.status).toBe(503);
    expect(platform.processor.charges().slice(before)[0]?.status).toBe('authorized');
    submissions.answer = { status: 200 };
    const placedKey = randomUUID();
    const placedBody = orderBody(plainStore, paymentId);
    expect((await place(placedBody, placedKey, endUser)).status).toBe(201);

    await platform.orderingDb
      .updateTable('place_attempts')
      .set({ expires_at: new Date(Date.now() - 1_000) })
      .where('idempotency_key', 'in', [abandonedKey, placedKey])
      .execute();
    expect(await platform.ordering.sweepExpiredPlaces()).toBe(2);

    expect(platform.processor.charges().slice(before)[0]?.status).toBe('voided');
    const left = await platform.orderingDb
      .selectFrom('place_attempts')
      .select('idempotency_key')
      .where('idempotency_key', 'in', [abandonedKey, placedKey])
      .execute();
    expect(left).toEqual([]);
    // The order itself stays; only its key is forgotten (a new use of it is a new attempt).
    const again = await place(placedBody, placedKey, endUser);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });
});
