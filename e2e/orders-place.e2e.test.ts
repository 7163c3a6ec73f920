import { subjects } from '@pcp/contracts';
import {
  createPlatformClient,
  placeOrder,
  PlatformProblem,
  type PlaceOrderRequest,
  type PlatformClient,
} from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { setTimeout as setTimeoutPromise } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { countsBy, growth } from '@pcp/testing/metrics';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { newBuyer, recordingClient, sodaOrder, storeWithSodas } from './orders.js';
import { startSubmissionHost, type SubmissionHost } from './submission-host.js';

const PLACE = '/v1/marketfront/orders/place';
const cards = {
  success: '4242424242424242',
  declined: '4000000000000002',
  processingError: '4000000000000119',
  incorrectCvc: '4000000000000127',
  hangs: '4000000000007775',
};

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let submissions: SubmissionHost;
let commerce: PlatformClient;
let distribution: { apiKey: string; partnerId: string };
/** The distribution partner's client, keeping every answer as it came over the wire. */
let market: ReturnType<typeof recordingClient>;
/** Another distribution partner's client. */
let other: PlatformClient;
/** Each store's catalog ids (its CatalogSet is its own). */
const catalogIds = new Map<string, ReturnType<typeof cartTestCatalog>['ids']>();
/** A store without a submission URL, and one whose URL is the test's host. */
let plainStore: string;
let submittingStore: string;
/** The submitting store's signing secret, as its PUT showed it (the only time). */
let submittingSecret: string;

async function createStore(
  profile: Record<string, unknown>,
): Promise<Awaited<ReturnType<typeof storeWithSodas>>> {
  const store = await storeWithSodas(commerce, host, profile);
  catalogIds.set(store.storeId, store.ids);
  return store;
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
  const clientOf = (partner: { apiKey: string }) =>
    createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
  commerce = clientOf(await platform.newPartner('commerce'));
  distribution = await platform.newPartner('distribution', {
    paymentTypes: ['CARD', 'PAY_AT_STORE'],
  });
  market = recordingClient(platform.baseUrl, distribution.apiKey);
  other = clientOf(await platform.newPartner('distribution', { paymentTypes: ['CARD'] }));
  plainStore = (await createStore({ orderSubmissionUrl: undefined })).storeId;
  const submitting = await createStore({ orderSubmissionUrl: submissions.url });
  submittingStore = submitting.storeId;
  submittingSecret = submitting.orderSubmissionSecret!;
});

afterAll(async () => {
  await submissions?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const orderBody = (
  storeId: string,
  paymentId: string,
  overrides: Partial<PlaceOrderRequest> = {},
): PlaceOrderRequest =>
  // An unknown store borrows a real store's catalog: only the store id is wrong.
  sodaOrder(catalogIds.get(storeId) ?? catalogIds.get(plainStore)!, storeId, paymentId, overrides);

/** A PAY_AT_STORE order: no card. */
const payAtStoreBody = (storeId: string) => {
  const { paymentId: _none, ...body } = orderBody(storeId, randomUUID(), {
    paymentType: 'PAY_AT_STORE',
  });
  return body;
};

/**
 * One place request through the typed client, without placeOrder's retries: the answer
 * exactly as the platform gave it (status, headers; the text through `market.wireOf`).
 */
const post = (body: PlaceOrderRequest, key: string, endUser: string, client = market.client) =>
  client.POST(PLACE, {
    params: { header: { 'Idempotency-Key': key, 'X-End-User-Id': endUser } },
    body,
  });

/** Place what the types forbid: no key or end user, a malformed body, bytes of our choosing. */
const rawPlace = (
  body: unknown,
  key: string | null,
  endUser: string | null,
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

/** The latest answer the distribution partner's client got, as it came. */
const lastAnswer = () => market.answers.at(-1)!;

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

const buyer = (card = cards.success) => newBuyer(market.client, card);

describe('placing an order', () => {
  it('charges once, answers 201 with the order, and replays it byte for byte', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const before = platform.processor.charges().length;
    const placed = await post(body, key, endUser);
    expect(placed.response.status).toBe(201);
    expect(placed.response.headers.get('idempotent-replayed')).toBeNull();
    expect(placed.response.headers.get('location')).toBe(
      `/v1/marketfront/orders/${placed.data?.orderId}`,
    );
    expect(placed.data).toMatchObject({
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

    // Key order and whitespace do not change the fingerprint (RFC 8785): bytes of our own.
    const replay = await rawPlace(reshuffled(body), key, endUser);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(market.wireOf(placed.response).text);
    expect(platform.processor.charges()).toHaveLength(before + 1);
  });

  it('takes PAY_AT_STORE without a card and charges nothing', async () => {
    const before = platform.processor.charges().length;
    const placed = await placeOrder(market.client, {
      body: payAtStoreBody(plainStore),
      endUserId: 'shopper',
    });
    expect(lastAnswer().status).toBe(201);
    expect(placed).toMatchObject({ replayed: false, attempts: 1 });
    expect(placed.order).toMatchObject({ paymentType: 'PAY_AT_STORE', payment: null });
    expect(platform.processor.charges()).toHaveLength(before);
  });

  it('gives one order and one charge to 20 concurrent requests with one key', async () => {
    const { endUser, paymentId } = await buyer();
    platform.processor.setFaults({ latencyMs: 150 });
    try {
      const body = orderBody(plainStore, paymentId);
      const key = randomUUID();
      const before = platform.processor.charges().length;
      const results = await Promise.all(Array.from({ length: 20 }, () => post(body, key, endUser)));
      const created = results.filter((result) => result.response.status === 201);
      const busy = results.filter((result) => result.response.status === 409);
      expect(created.length + busy.length).toBe(20);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((result) => result.data?.orderId)).size).toBe(1);
      for (const result of busy) {
        expect(result.error?.errorCode).toBe('IDEMPOTENCY_KEY_IN_PROGRESS');
        expect(Number(result.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      const charges = platform.processor.charges().slice(before);
      expect(charges).toHaveLength(1);
      expect(charges[0]?.status).toBe('captured');
      // The retry the 409s were told to make gets the order.
      const retried = await placeOrder(market.client, {
        body,
        endUserId: endUser,
        idempotencyKey: key,
      });
      expect(lastAnswer().status).toBe(201);
      expect(lastAnswer().text).toBe(market.wireOf(created[0]!.response).text);
      expect(retried).toMatchObject({
        replayed: true,
        order: { orderId: created[0]?.data?.orderId },
      });
    } finally {
      platform.processor.setFaults({ latencyMs: 0 });
    }
  });

  it('placeOrder waits out IDEMPOTENCY_KEY_IN_PROGRESS with the same key: one order, one charge', async () => {
    const { endUser, paymentId } = await buyer();
    platform.processor.setFaults({ latencyMs: 150 });
    try {
      const body = orderBody(plainStore, paymentId);
      const key = randomUUID();
      const before = platform.processor.charges().length;
      const seen = market.answers.length;
      const placed = await Promise.all(
        Array.from({ length: 5 }, () =>
          // The 409s ask to wait out the holder's lease (15 s); a partner may wait less.
          placeOrder(market.client, {
            body,
            endUserId: endUser,
            idempotencyKey: key,
            maxAttempts: 10,
            maxDelayMs: 250,
          }),
        ),
      );
      expect(new Set(placed.map((result) => result.order.orderId)).size).toBe(1);
      expect(placed.filter((result) => !result.replayed)).toHaveLength(1);
      // Every 409 was tried again (after its Retry-After) until it got the order.
      const answers = market.answers.slice(seen);
      const busy = answers.filter((answer) => answer.status === 409);
      expect(busy.length).toBeGreaterThan(0);
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(5);
      expect(answers).toHaveLength(5 + busy.length);
      expect(placed.reduce((sum, result) => sum + result.attempts, 0)).toBe(answers.length);
      expect(platform.processor.charges().slice(before)).toHaveLength(1);
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
    const placed = await placeOrder(market.client, {
      body,
      endUserId: endUser,
      idempotencyKey: key,
    });
    const placedAnswer = lastAnswer();
    expect(placedAnswer.status).toBe(201);

    const otherBody = await post({ ...body, tip: 3, amounts: { total: 24.64 } }, key, endUser);
    const otherUser = await post(body, key, 'someone-else');
    const otherPartner = await post(body, key, endUser, other);
    for (const result of [otherBody, otherUser, otherPartner]) {
      expect(result.response.status).toBe(422);
      expect(result.error).toMatchObject({
        errorCode: 'IDEMPOTENCY_KEY_CONFLICT',
        errorCategory: 'idempotency',
        retryable: false,
      });
      expect(result.response.headers.get('idempotent-replayed')).toBeNull();
    }
    // A recorded key never lets a malformed body through: it is refused as malformed.
    const malformed = await rawPlace({ ...body, tip: '2' }, key, endUser);
    expect(malformed.status).toBe(400);
    expect(malformed.body.errorCode).toBe('REQUEST_INVALID');
    const again = await placeOrder(market.client, {
      body,
      endUserId: endUser,
      idempotencyKey: key,
    });
    expect(lastAnswer().text).toBe(placedAnswer.text);
    expect(again).toMatchObject({ replayed: true, order: { orderId: placed.order.orderId } });
  });

  it('replays the recorded bytes by their own hash, an equal body by its fingerprint, and nothing to another owner', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(plainStore, paymentId);
    const text = JSON.stringify(body);
    const key = randomUUID();
    const placed = await rawPlace(text, key, endUser);
    expect(placed.status).toBe(201);
    // A fingerprint no body has: only the hash of the very bytes can still replay.
    await platform.orderingDb
      .updateTable('place_attempts')
      .set({ fingerprint: 'no body has this fingerprint' })
      .where('idempotency_key', '=', key)
      .execute();
    for (let i = 0; i < 2; i++) {
      const same = await rawPlace(text, key, endUser);
      expect(same.status).toBe(201);
      expect(same.headers.get('idempotent-replayed')).toBe('true');
      expect(same.text).toBe(placed.text);
    }
    // Other bytes are judged by the fingerprint, which no longer matches: a conflict.
    const reordered = await rawPlace(reshuffled(body), key, endUser);
    expect(reordered.status).toBe(422);
    expect(reordered.body.errorCode).toBe('IDEMPOTENCY_KEY_CONFLICT');
    // The very bytes from another end user or partner, after replays: a conflict as ever.
    expect((await rawPlace(text, key, 'someone-else')).body.errorCode).toBe(
      'IDEMPOTENCY_KEY_CONFLICT',
    );
    const otherPartner = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
    expect((await rawPlace(text, key, endUser, otherPartner.apiKey)).body.errorCode).toBe(
      'IDEMPOTENCY_KEY_CONFLICT',
    );

    // An attempt recorded before the bytes' hash was kept replays by its fingerprint.
    const oldKey = randomUUID();
    const oldText = JSON.stringify(orderBody(plainStore, paymentId));
    const old = await rawPlace(oldText, oldKey, endUser);
    expect(old.status).toBe(201);
    await platform.orderingDb
      .updateTable('place_attempts')
      .set({ raw_hash: null })
      .where('idempotency_key', '=', oldKey)
      .execute();
    const oldReplay = await rawPlace(oldText, oldKey, endUser);
    expect(oldReplay.status).toBe(201);
    expect(oldReplay.headers.get('idempotent-replayed')).toBe('true');
    expect(oldReplay.text).toBe(old.text);
  });

  it('needs the key and the end user, and does not record a malformed body', async () => {
    const { endUser, paymentId } = await buyer();
    const missing = await rawPlace(orderBody(plainStore, paymentId), null, endUser);
    expect(missing.status).toBe(400);
    expect(missing.body.errorCode).toBe('MISSING_IDEMPOTENCY_KEY');
    const noUser = await rawPlace(orderBody(plainStore, paymentId), randomUUID(), null);
    expect(noUser.status).toBe(401);
    expect(noUser.body.errorCode).toBe('SESSION_USER_REQUIRED');
    const longKey = await post(orderBody(plainStore, paymentId), 'k'.repeat(256), endUser);
    expect(longKey.response.status).toBe(400);
    expect(longKey.error?.errorCode).toBe('REQUEST_INVALID');

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
      const result = await rawPlace(shape, key, endUser);
      expect(result.status).toBe(400);
      expect(result.body.errorCode).toBe('REQUEST_INVALID');
    }
    const pointers = (
      await rawPlace({ ...orderBody(plainStore, paymentId), paymentId: undefined }, key, endUser)
    ).body.errors.map((error: { pointer: string }) => error.pointer);
    expect(pointers).toContain('/paymentId');
    // None of them took the key: it still places the order.
    const placed = await placeOrder(market.client, {
      body: orderBody(plainStore, paymentId),
      endUserId: endUser,
      idempotencyKey: key,
    });
    expect(lastAnswer().status).toBe(201);
    expect(placed.replayed).toBe(false);
  });

  it('refuses an oversized body and another media type before touching the key', async () => {
    const { endUser, paymentId } = await buyer();
    const huge = orderBody(plainStore, paymentId, { specialInstructions: 'x'.repeat(2_000_000) });
    const tooLarge = await post(huge, randomUUID(), endUser);
    expect(tooLarge.response.status).toBe(413);
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
    const refused = await post(body, key, endUser);
    expect(refused.response.status).toBe(400);
    expect(refused.error).toMatchObject({
      errorCode: 'ORDER_INVALID',
      errorCategory: 'order',
      retryable: false,
      errors: [{ code: 'ORDER_TOTAL_DIFFERENT', pointer: '/amounts/total' }],
    });
    const replay = await post(body, key, endUser);
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.response.status).toBe(400);
    expect(market.wireOf(replay.response).text).toBe(market.wireOf(refused.response).text);
    // As documented: the body's requestId is the first request's, the header this one's.
    expect(replay.error?.requestId).toBe(refused.response.headers.get('x-request-id'));
    expect(replay.response.headers.get('x-request-id')).not.toBe(replay.error?.requestId);
    expect(platform.processor.charges()).toHaveLength(before);
  });

  it('ORDER_INVALID lists 100 errors and says how many more there were, in the replay too', async () => {
    const { endUser, paymentId } = await buyer();
    const ids = catalogIds.get(plainStore)!;
    const lineItems = Array.from({ length: 100 }, () => ({
      itemId: ids.soldOut,
      lineItemId: randomUUID(),
      quantity: 1,
    }));
    const body = orderBody(plainStore, paymentId, {
      cart: { catalogSetId: ids.catalogSetId, storeId: plainStore, lineItems },
      tip: 2.005,
    });
    const key = randomUUID();
    const refused = await rawPlace(body, key, endUser);
    expect(refused.status).toBe(400);
    expect(refused.body.errorCode).toBe('ORDER_INVALID');
    expect(refused.body.errors).toHaveLength(100);
    // The unavailable lines come first; the tip's precision, the minimum and the total are left out.
    expect(refused.body.errorsOmitted).toBe(3);
    const replay = await rawPlace(body, key, endUser);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(refused.text);
  });

  it('404 STORE_NOT_FOUND and 403 PAYMENT_TYPE_NOT_ALLOWED', async () => {
    const { endUser, paymentId } = await buyer();
    const unknownStore = orderBody(randomUUID(), paymentId);
    const key = randomUUID();
    const notFound = await post(unknownStore, key, endUser);
    expect(notFound.response.status).toBe(404);
    expect(notFound.error?.errorCode).toBe('STORE_NOT_FOUND');
    expect(
      (await post(unknownStore, key, endUser)).response.headers.get('idempotent-replayed'),
    ).toBe('true');

    const cardOnly = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
    const cardOnlyClient = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: cardOnly.apiKey,
    });
    const forbidden = await post(payAtStoreBody(plainStore), randomUUID(), endUser, cardOnlyClient);
    expect(forbidden.response.status).toBe(403);
    expect(forbidden.error).toMatchObject({
      errorCode: 'PAYMENT_TYPE_NOT_ALLOWED',
      errors: [{ code: 'PAYMENT_TYPE_NOT_ALLOWED', pointer: '/paymentType' }],
    });
  });

  it('PAYMENT_DECLINED once, replayed without asking the processor again', async () => {
    const { endUser, paymentId } = await buyer(cards.declined);
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const before = platform.processor.charges().length;
    // A final answer: placeOrder throws it at once, without trying again.
    const declined = await placeOrder(market.client, {
      body,
      endUserId: endUser,
      idempotencyKey: key,
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(declined).toBeInstanceOf(PlatformProblem);
    expect(declined).toMatchObject({
      status: 400,
      problem: { errorCode: 'PAYMENT_DECLINED', errors: [{ pointer: '/paymentId' }] },
    });
    const declinedAnswer = lastAnswer();
    const replay = await post(body, key, endUser);
    expect(market.wireOf(replay.response).text).toBe(declinedAnswer.text);
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
    expect(platform.processor.charges()).toHaveLength(before + 1);
  });
});

describe('card testing', () => {
  it('a card declined too often is a final PAYMENT_DECLINED (PAYMENT_VELOCITY_EXCEEDED) for its key, unasked of the processor', async () => {
    const { endUser, paymentId } = await buyer(cards.incorrectCvc);
    const body = orderBody(plainStore, paymentId);
    const codes: string[] = [];
    // PAYMENTS_CARD_DECLINES_PER_WINDOW's default is 5: the sixth attempt is not sent.
    for (let i = 0; i < 6; i++) {
      const attempt = await post(body, randomUUID(), endUser);
      expect(attempt.response.status).toBe(400);
      expect(attempt.error?.errorCode).toBe('PAYMENT_DECLINED');
      codes.push(attempt.error?.errors?.[0]?.code ?? '');
    }
    expect(codes).toEqual([...Array<string>(5).fill('INCORRECT_CVC'), 'PAYMENT_VELOCITY_EXCEEDED']);
    const before = platform.processor.charges().length;
    const key = randomUUID();
    const refused = await post(body, key, endUser);
    expect(refused.error).toMatchObject({
      errorCode: 'PAYMENT_DECLINED',
      retryable: false,
      errors: [{ code: 'PAYMENT_VELOCITY_EXCEEDED', pointer: '/paymentId' }],
    });
    const refusedAnswer = lastAnswer();
    // The key's final answer, replayed byte for byte; nothing was sent to the processor.
    const replay = await post(body, key, endUser);
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
    expect(market.wireOf(replay.response).text).toBe(refusedAnswer.text);
    expect(platform.processor.charges()).toHaveLength(before);
  });
});

describe('retryable failures keep the key', () => {
  it('PAYMENT_FAILED (processing error) is not recorded: the key tries again', async () => {
    const { endUser, paymentId } = await buyer(cards.processingError);
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const first = await post(body, key, endUser);
    expect(first.response.status).toBe(400);
    expect(first.error).toMatchObject({ errorCode: 'PAYMENT_FAILED', retryable: true });
    const second = await post(body, key, endUser);
    expect(second.response.status).toBe(400);
    expect(second.response.headers.get('idempotent-replayed')).toBeNull();
    expect(second.error?.requestId).not.toBe(first.error?.requestId);
  });

  it('a processor that hangs is 503 PAYMENT_PROCESSOR_UNAVAILABLE; nothing is captured', async () => {
    const { endUser, paymentId } = await buyer(cards.hangs);
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const started = Date.now();
    const first = await post(body, key, endUser);
    expect(first.response.status).toBe(503);
    expect(first.error).toMatchObject({
      errorCode: 'PAYMENT_PROCESSOR_UNAVAILABLE',
      retryable: true,
    });
    expect(Date.now() - started).toBeLessThan(4_000);
    const second = await post(body, key, endUser);
    expect(second.response.status).toBe(503);
    expect(second.response.headers.get('idempotent-replayed')).toBeNull();
    expect(chargesOf('7775').filter((charge) => charge.capturedAmount > 0)).toHaveLength(0);
  });
});

describe('submission to the store', () => {
  it('POSTs the signed order; a store that took it starts it confirmed', async () => {
    const secret = submittingSecret;
    expect(secret).toMatch(/^whsec_/);
    const { endUser, paymentId } = await buyer();
    submissions.answer = { status: 202 };
    submissions.received.length = 0;
    const placed = await placeOrder(market.client, {
      body: orderBody(submittingStore, paymentId),
      endUserId: endUser,
    });
    expect(lastAnswer().status).toBe(201);
    expect(placed.order.status).toBe('confirmed');
    expect(submissions.received).toHaveLength(1);
    const [request] = submissions.received;
    const submitted = new Webhook(secret).verify(
      request!.body,
      request!.headers as Record<string, string>,
    ) as { orderId: string; amounts: { total: number } };
    expect(submitted).toMatchObject({ orderId: placed.order.orderId, amounts: { total: 23.64 } });
    expect(request!.headers['webhook-id']).toBe(placed.order.orderId);
  });

  it('signs with the new and the previous secret after a rotation, then with the new one alone', async () => {
    const store = await createStore({ orderSubmissionUrl: submissions.url });
    const previous = store.orderSubmissionSecret!;
    const rotated = await commerce.POST(
      '/v1/commerce/stores/{storeId}/order-submission/rotate-secret',
      { params: { path: { storeId: store.storeId } } },
    );
    expect(rotated.response.status).toBe(200);
    const current = rotated.data!.orderSubmissionSecret!;
    expect(current).toMatch(/^whsec_/);
    expect(current).not.toBe(previous);

    const submitOne = async () => {
      const { endUser, paymentId } = await buyer();
      submissions.answer = { status: 202 };
      submissions.received.length = 0;
      const placed = await placeOrder(market.client, {
        body: orderBody(store.storeId, paymentId),
        endUserId: endUser,
      });
      expect(placed.order.status).toBe('confirmed');
      expect(submissions.received).toHaveLength(1);
      const [request] = submissions.received;
      return { body: request!.body, headers: request!.headers as Record<string, string> };
    };
    const verifies = (secret: string, request: Awaited<ReturnType<typeof submitOne>>) => {
      try {
        new Webhook(secret).verify(request.body, request.headers);
        return true;
      } catch {
        return false;
      }
    };

    // During the overlap: two signatures, so a receiver on either secret accepts it.
    const during = await submitOne();
    expect(during.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifies(current, during)).toBe(true);
    expect(verifies(previous, during)).toBe(true);

    // The overlap ends (moved to the past rather than waiting 24 hours): the new one alone.
    await platform.storesDb
      .updateTable('stores')
      .set({ order_submission_previous_secret_expires_at: new Date(Date.now() - 1_000) })
      .where('store_id', '=', store.storeId)
      .execute();
    const after = await submitOne();
    expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifies(current, after)).toBe(true);
    expect(verifies(previous, after)).toBe(false);
  });

  it('answers, submits and serves a delivery order’s address flat; payments only authorizes', async () => {
    const handled = () =>
      countsBy(
        platform.metrics.get('payments')!.registry,
        'pcp_nats_handler_duration_seconds',
        'subject',
      );
    const { endUser, paymentId } = await buyer();
    submissions.answer = { status: 202 };
    submissions.received.length = 0;
    const address = {
      address1: '100 S Wacker Dr',
      city: 'Chicago',
      state: 'IL',
      postalCode: '60606',
    };
    const body = orderBody(submittingStore, paymentId, {
      fulfillment: {
        mode: 'DELIVERY_BY_MERCHANT',
        scheduleType: 'ASAP',
        address,
        deliveryType: 'DOOR_TO_DOOR',
      },
      amounts: { total: 26.63 },
    });
    const before = await handled();
    const placed = await post(body, randomUUID(), endUser);
    expect(placed.response.status).toBe(201);
    const orderId = placed.data!.orderId;
    // The store address's shape (docs/guide/stores.md#store-profile): one object, coordinates
    // beside the fields.
    expect(placed.data?.fulfillment.address).toEqual({
      ...address,
      address2: null,
      country: 'US',
      latitude: expect.any(Number),
      longitude: expect.any(Number),
    });
    const flat = placed.data?.fulfillment.address;
    const submitted = JSON.parse(submissions.received[0]!.body) as {
      fulfillment: { address: unknown };
    };
    expect(submitted.fulfillment.address).toEqual(flat);
    const read = await market.client.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId } },
    });
    expect(read.data?.fulfillment.address).toEqual(flat);
    const listed = await commerce.GET('/v1/commerce/stores/{storeId}/orders', {
      params: { path: { storeId: submittingStore } },
    });
    const inList = listed.data?.orders.find((entry) => entry.orderId === orderId);
    expect(inList?.fulfillment.address).toEqual(flat);
    // Validate's card check is not repeated: the authorization refuses a foreign card itself.
    const asked = growth(before, await handled());
    expect(asked[subjects.payments.cardOwned.name]).toBeUndefined();
    expect(asked[subjects.payments.authorize.name]).toBe(1);
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
    const rejected = await post(body, key, endUser);
    expect(rejected.response.status).toBe(400);
    expect(rejected.error).toMatchObject({
      errorCode: 'STORE_REJECTED',
      errors: [{ code: 'ITEM_SOLD_OUT', message: 'No soda left', pointer: '/cart/lineItems/0' }],
    });
    const charges = platform.processor.charges().slice(before);
    expect(charges).toHaveLength(1);
    expect(charges[0]?.status).toBe('voided');
    const replay = await post(body, key, endUser);
    expect(market.wireOf(replay.response).text).toBe(market.wireOf(rejected.response).text);
  });

  it('an unreachable store keeps the key; the retry submits once more and charges once', async () => {
    const { endUser, paymentId } = await buyer();
    submissions.next = [{ status: 503 }];
    submissions.answer = { status: 200 };
    submissions.received.length = 0;
    const before = platform.processor.charges().length;
    const seen = market.answers.length;
    // The 503 asks for 5 s; a partner may wait less.
    const placed = await placeOrder(market.client, {
      body: orderBody(submittingStore, paymentId),
      endUserId: endUser,
      maxDelayMs: 200,
    });
    const [unavailable, created] = market.answers.slice(seen);
    expect(placed.attempts).toBe(2);
    expect(unavailable?.status).toBe(503);
    expect(JSON.parse(unavailable!.text)).toMatchObject({
      errorCode: 'SERVICE_UNAVAILABLE',
      retryable: true,
    });
    expect(created?.status).toBe(201);
    expect(created?.headers.get('idempotent-replayed')).toBeNull();
    expect(placed.replayed).toBe(false);
    // Both tries carried one key: the store got the same order twice, the card one charge.
    expect(submissions.received).toHaveLength(2);
    expect(new Set(submissions.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const charges = platform.processor.charges().slice(before);
    expect(charges).toHaveLength(1);
    expect(charges[0]?.status).toBe('captured');
  });
});

describe('the idempotency metric', () => {
  const decided = () =>
    countsBy(platform.metrics.get('ordering')!.registry, 'pcp_place_idempotency_total', 'outcome');

  it('counts what each key decided: new, replayed, conflict, in_progress and resumed', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const before = await decided();
    platform.processor.setFaults({ latencyMs: 300 });
    try {
      const [first, second] = await Promise.all([
        post(body, key, endUser),
        // Sent once the first holds the key.
        setTimeoutPromise(100).then(() => post(body, key, endUser)),
      ]);
      expect(first.response.status).toBe(201);
      expect(second.error?.errorCode).toBe('IDEMPOTENCY_KEY_IN_PROGRESS');
    } finally {
      platform.processor.setFaults({ latencyMs: 0 });
    }
    expect((await post(body, key, endUser)).response.status).toBe(201);
    expect((await post(body, key, 'someone-else')).response.status).toBe(422);
    // A retryable failure leaves the key to its retry, which resumes it.
    const failing = await buyer(cards.processingError);
    const failingBody = orderBody(plainStore, failing.paymentId);
    const failingKey = randomUUID();
    for (let i = 0; i < 2; i++) {
      expect((await post(failingBody, failingKey, failing.endUser)).error?.errorCode).toBe(
        'PAYMENT_FAILED',
      );
    }
    expect(growth(before, await decided())).toEqual({
      new: 2,
      in_progress: 1,
      replayed: 1,
      conflict: 1,
      resumed: 1,
    });
  });
});
