import { subjects } from '@pcp/contracts';
import { createBusClient, type RequestContext } from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { newStoreId, storeProfile } from '@pcp/testing/fixtures';
import { call } from './http.js';

let env: TestEnvironment;
let platform: TestPlatform;
let commerce: { partnerId: string; apiKey: string };
let distribution: { partnerId: string; apiKey: string };

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
});

afterAll(async () => {
  await platform?.stop();
  await env?.cleanup();
});

const put = (storeId: string, body: unknown, apiKey = commerce.apiKey) =>
  call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, { apiKey, body });

/** `whsec_` and the base64 of 24 bytes (Standard Webhooks). */
const SIGNING_SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;

describe('commerce store profile', () => {
  it('creates a store (201), reads it back, and replaces it (200)', async () => {
    const storeId = newStoreId();
    const created = await put(storeId, storeProfile());
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      storeId,
      name: 'Chicago Burgers',
      currency: 'USD',
      delivery: { radiusMeters: 5000, fee: 2.99, minimumOrder: 15, etaMinutes: 40 },
      taxRate: 0.0875,
      status: 'online',
      orderSubmissionUrl: 'https://partner.example/orders',
      orderSubmissionSecret: expect.stringMatching(SIGNING_SECRET),
    });

    const read = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}`, {
      apiKey: commerce.apiKey,
    });
    expect(read.status).toBe(200);
    // The same store, without the secret: only the answer that created it shows it.
    const { orderSubmissionSecret: _shown, ...stored } = created.body;
    expect(read.body).toEqual(stored);
    expect(read.text).not.toContain(created.body.orderSubmissionSecret.slice('whsec_'.length));

    // A GET body sent back with a change is accepted: computed fields are ignored.
    const replaced = await put(storeId, { ...read.body, name: 'Loop Burgers', status: 'paused' });
    expect(replaced.status).toBe(200);
    expect(replaced.body.name).toBe('Loop Burgers');
    expect(replaced.body.status).toBe('online');
    expect(replaced.body.createdAt).toBe(created.body.createdAt);
    expect(replaced.body.orderSubmissionSecret).toBeNull();
  });

  it('shows the order submission secret once: in the PUT that creates it, never in GET or list', async () => {
    const storeId = newStoreId();
    const plain = await put(storeId, storeProfile({ orderSubmissionUrl: null }));
    expect(plain.status).toBe(201);
    expect(plain.body).toMatchObject({ orderSubmissionUrl: null, orderSubmissionSecret: null });

    const withUrl = await put(storeId, storeProfile());
    const secret: string = withUrl.body.orderSubmissionSecret;
    expect(secret).toMatch(SIGNING_SECRET);
    // A new URL, or a secret sent back by the partner, shows and changes nothing.
    const moved = await put(
      storeId,
      storeProfile({
        orderSubmissionUrl: 'https://partner.example/v2/orders',
        orderSubmissionSecret: 'whsec_chosen',
      }),
    );
    expect(moved.body.orderSubmissionSecret).toBeNull();
    const list = await call(platform.baseUrl, 'GET', '/v1/commerce/stores', {
      apiKey: commerce.apiKey,
    });
    const listed = list.body.stores.find((store: { storeId: string }) => store.storeId === storeId);
    expect(listed).toMatchObject({ orderSubmissionUrl: 'https://partner.example/v2/orders' });
    expect(listed).not.toHaveProperty('orderSubmissionSecret');
    expect(list.text).not.toContain('whsec_');
    const read = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}`, {
      apiKey: commerce.apiKey,
    });
    expect(read.body).not.toHaveProperty('orderSubmissionSecret');
    expect(read.text).not.toContain('whsec_');

    // Kept while the URL is removed, so the partner's verification survives re-adding it.
    const removed = await put(storeId, storeProfile({ orderSubmissionUrl: null }));
    expect(removed.body.orderSubmissionSecret).toBeNull();
    const readded = await put(storeId, storeProfile());
    expect(readded.body.orderSubmissionSecret).toBeNull();
  });

  it('rotates the order submission secret: shown once, previous one signing until its expiry', async () => {
    const storeId = newStoreId();
    const created = await put(storeId, storeProfile());
    const rotate = (id: string, apiKey = commerce.apiKey) =>
      call(platform.baseUrl, 'POST', `/v1/commerce/stores/${id}/order-submission/rotate-secret`, {
        apiKey,
      });
    const rotated = await rotate(storeId);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({
      storeId,
      orderSubmissionSecret: expect.stringMatching(SIGNING_SECRET),
      orderSubmissionPreviousSecretExpiresAt: expect.any(String),
    });
    expect(rotated.body.orderSubmissionSecret).not.toBe(created.body.orderSubmissionSecret);
    const read = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}`, {
      apiKey: commerce.apiKey,
    });
    expect(read.body.orderSubmissionPreviousSecretExpiresAt).toBe(
      rotated.body.orderSubmissionPreviousSecretExpiresAt,
    );
    expect(read.text).not.toContain('whsec_');

    // Another partner's store and an unknown one are 404; a malformed id is a 400.
    const other = await platform.newPartner('commerce');
    for (const response of [await rotate(storeId, other.apiKey), await rotate(newStoreId())]) {
      expect(response.status).toBe(404);
      expect(response.body).toMatchObject({ errorCode: 'STORE_NOT_FOUND' });
    }
    const malformed = await rotate('not-a-guid');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ errorCode: 'REQUEST_INVALID' });
    const forbidden = await rotate(storeId, distribution.apiKey);
    expect(forbidden.status).toBe(403);
  });

  it('keeps money exact in minor units for currencies with 0 and 3 fraction digits', async () => {
    const yen = await put(
      newStoreId(),
      storeProfile({
        currency: 'JPY',
        delivery: { radiusMeters: 1, fee: 300, minimumOrder: 1500, etaMinutes: 30 },
      }),
    );
    expect(yen.status).toBe(201);
    expect(yen.body.delivery.fee).toBe(300);
    const dinar = await put(newStoreId(), storeProfile({ currency: 'KWD', minimumOrder: 1.125 }));
    expect(dinar.body.minimumOrder).toBe(1.125);
    const tooPrecise = await put(
      newStoreId(),
      storeProfile({ currency: 'JPY', minimumOrder: 1.5 }),
    );
    expect(tooPrecise.status).toBe(400);
    expect(tooPrecise.body.errors).toContainEqual(
      expect.objectContaining({ code: 'PRECISION_EXCEEDED', pointer: '/minimumOrder' }),
    );
  });

  it('takes a currency’s ISO 4217 digits, not the runtime’s locale data (HUF has 2)', async () => {
    const forint = (fee: number) =>
      put(
        newStoreId(),
        storeProfile({
          currency: 'HUF',
          delivery: { radiusMeters: 3000, fee, minimumOrder: 0, etaMinutes: 30 },
        }),
      );
    const accepted = await forint(12.34);
    expect(accepted.status, accepted.text).toBe(201);
    expect(accepted.body.delivery.fee).toBe(12.34);
    const refused = await forint(12.345);
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([
      expect.objectContaining({ code: 'PRECISION_EXCEEDED', pointer: '/delivery/fee' }),
    ]);
  });

  it('refuses a delivery radius over 50,000 m at its pointer', async () => {
    const radius = (radiusMeters: number) =>
      put(
        newStoreId(),
        storeProfile({ delivery: { radiusMeters, fee: 2.99, minimumOrder: 15, etaMinutes: 40 } }),
      );
    expect((await radius(50_000)).status).toBe(201);
    const refused = await radius(50_001);
    expect(refused.status).toBe(400);
    expect(refused.body.errorCode).toBe('REQUEST_INVALID');
    expect(refused.body.errors).toEqual([
      expect.objectContaining({ pointer: '/delivery/radiusMeters' }),
    ]);
  });

  it('lists only the caller’s stores with limit/offset paging', async () => {
    const other = await platform.newPartner('commerce');
    const ids = [newStoreId(), newStoreId(), newStoreId()];
    for (const id of ids) expect((await put(id, storeProfile(), other.apiKey)).status).toBe(201);
    const first = await call(platform.baseUrl, 'GET', '/v1/commerce/stores?limit=2', {
      apiKey: other.apiKey,
    });
    expect(first.status).toBe(200);
    expect(first.body.totalCount).toBe(3);
    expect(first.body.hasMore).toBe(true);
    expect(first.body.stores.map((s: { storeId: string }) => s.storeId)).toEqual(ids.slice(0, 2));
    const second = await call(platform.baseUrl, 'GET', '/v1/commerce/stores?limit=2&offset=2', {
      apiKey: other.apiKey,
    });
    expect(second.body).toMatchObject({ totalCount: 3, hasMore: false });
    expect(second.body.stores.map((s: { storeId: string }) => s.storeId)).toEqual([ids[2]]);
    const bad = await call(platform.baseUrl, 'GET', '/v1/commerce/stores?limit=0', {
      apiKey: other.apiKey,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errorCode).toBe('REQUEST_INVALID');
  });

  it('never shows or changes another partner’s store (404, nothing leaked)', async () => {
    const storeId = newStoreId();
    await put(storeId, storeProfile());
    const intruder = await platform.newPartner('commerce');
    const read = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}`, {
      apiKey: intruder.apiKey,
    });
    expect(read.status).toBe(404);
    expect(read.body.errorCode).toBe('STORE_NOT_FOUND');
    const overwrite = await put(storeId, storeProfile({ name: 'Hijacked' }), intruder.apiKey);
    expect(overwrite.status).toBe(404);
    const status = await call(platform.baseUrl, 'POST', `/v1/commerce/stores/${storeId}/status`, {
      apiKey: intruder.apiKey,
      body: { status: 'paused', reason: 'other' },
    });
    expect(status.status).toBe(404);
    const owner = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}`, {
      apiKey: commerce.apiKey,
    });
    expect(owner.body.name).toBe('Chicago Burgers');
    expect(owner.body.status).toBe('online');
  });

  it('answers a bad profile with every problem, each at its RFC 6901 pointer', async () => {
    const response = await put(
      newStoreId(),
      storeProfile({
        phone: '555',
        timezone: 'Mars/Olympus',
        fulfillmentTypes: ['DELIVERY_BY_MERCHANT'],
        delivery: null,
        availability: [{ dayOfWeek: 'Funday', start: '25:00:00', end: '10:00:00' }],
      }),
    );
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(response.body.errorCode).toBe('REQUEST_INVALID');
    const pointers = response.body.errors.map((e: { pointer: string }) => e.pointer);
    expect(pointers).toEqual(
      expect.arrayContaining([
        '/phone',
        '/timezone',
        '/availability/0/dayOfWeek',
        '/availability/0/start',
      ]),
    );
    const missing = await put(newStoreId(), { name: 'x' });
    expect(missing.body.errors).toContainEqual({
      code: 'REQUIRED',
      message: 'Required',
      pointer: '/address',
    });
    const noDelivery = await put(
      newStoreId(),
      storeProfile({ fulfillmentTypes: ['DELIVERY_BY_MERCHANT'], delivery: null }),
    );
    expect(noDelivery.body.errors).toEqual([
      expect.objectContaining({
        pointer: '/delivery',
        message: 'Required for DELIVERY_BY_MERCHANT',
      }),
    ]);
  });

  it('geocodes the postal code when the profile gives no coordinates', async () => {
    const {
      latitude: _lat,
      longitude: _lng,
      ...address
    } = storeProfile().address as Record<string, unknown>;
    const geocoded = await put(
      newStoreId(),
      storeProfile({ address: { ...address, postalCode: '60601' } }),
    );
    expect(geocoded.status).toBe(201);
    // The gazetteer's centroid of ZIP 60601 (Chicago Loop).
    expect(geocoded.body.address).toMatchObject({ latitude: 41.8858, longitude: -87.6181 });

    const unknown = await put(
      newStoreId(),
      storeProfile({ address: { ...address, postalCode: '00000' } }),
    );
    expect(unknown.status).toBe(422);
    expect(unknown.body.errorCode).toBe('ADDRESS_INVALID');
    expect(unknown.body.errors).toEqual([
      expect.objectContaining({ pointer: '/address/postalCode' }),
    ]);

    const half = await put(newStoreId(), storeProfile({ address: { ...address, latitude: 41.9 } }));
    expect(half.status).toBe(400);
    expect(half.body.errors).toEqual([expect.objectContaining({ pointer: '/address/latitude' })]);
  });

  it('rejects a malformed store id in the path with 400', async () => {
    const response = await put('not-a-guid', storeProfile());
    expect(response.status).toBe(400);
    expect(response.body.errors[0]).toMatchObject({ pointer: null });
    expect(response.body.errors[0].message).toContain("path parameter 'storeId'");
  });
});

describe('store status', () => {
  it('pauses with a reason, reads back, and goes online again', async () => {
    const storeId = newStoreId();
    await put(storeId, storeProfile());
    const statusPath = `/v1/commerce/stores/${storeId}/status`;
    const initial = await call(platform.baseUrl, 'GET', statusPath, { apiKey: commerce.apiKey });
    const onlineStatus = {
      status: 'online',
      reason: null,
      pausedAt: null,
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: null,
    };
    expect(initial.body).toEqual(onlineStatus);

    const resumeAt = new Date(Date.now() + 3_600_000).toISOString();
    const paused = await call(platform.baseUrl, 'POST', statusPath, {
      apiKey: commerce.apiKey,
      body: { status: 'paused', reason: 'too_busy', resumeAt },
    });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      status: 'paused',
      reason: 'too_busy',
      resumeAt,
      extraPrepMinutes: null,
      pausedBy: 'partner',
    });
    expect(Date.parse(paused.body.pausedAt)).toBeLessThanOrEqual(Date.now());

    const seenByMarketfront = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${storeId}`,
      {
        apiKey: distribution.apiKey,
      },
    );
    expect(seenByMarketfront.body.status).toBe('paused');

    const online = await call(platform.baseUrl, 'POST', statusPath, {
      apiKey: commerce.apiKey,
      body: { status: 'online' },
    });
    expect(online.body).toEqual(onlineStatus);
  });

  it('refuses a pause without a reason, an unknown reason, or a resumeAt in the past', async () => {
    const storeId = newStoreId();
    await put(storeId, storeProfile());
    const statusPath = `/v1/commerce/stores/${storeId}/status`;
    for (const body of [
      { status: 'paused' },
      { status: 'paused', reason: 'bored' },
      { status: 'closed' },
      { status: 'paused', reason: 'other', resumeAt: 'tomorrow' },
    ]) {
      const response = await call(platform.baseUrl, 'POST', statusPath, {
        apiKey: commerce.apiKey,
        body,
      });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errorCode).toBe('REQUEST_INVALID');
    }
    const past = await call(platform.baseUrl, 'POST', statusPath, {
      apiKey: commerce.apiKey,
      body: { status: 'paused', reason: 'other', resumeAt: '2020-01-01T00:00:00Z' },
    });
    expect(past.status).toBe(400);
    expect(past.body.errors).toEqual([expect.objectContaining({ pointer: '/resumeAt' })]);
  });
});

describe('marketfront store lookup', () => {
  it('returns the public view without partner-private fields', async () => {
    const storeId = newStoreId();
    await put(storeId, storeProfile());
    const response = await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}`, {
      apiKey: distribution.apiKey,
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ storeId, name: 'Chicago Burgers', status: 'online' });
    expect(response.body).not.toHaveProperty('orderSubmissionUrl');
    expect(response.body).not.toHaveProperty('orderSubmissionSecret');
    expect(response.body).not.toHaveProperty('createdAt');
    expect(response.text).not.toContain('whsec_');
  });

  it('answers an unknown store with 404 STORE_NOT_FOUND and a malformed id with a bodiless 404', async () => {
    const unknown = await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${newStoreId()}`, {
      apiKey: distribution.apiKey,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({
      errorCode: 'STORE_NOT_FOUND',
      errorCategory: 'not_found',
      retryable: false,
    });
    for (const id of ['not-a-guid', '1234', "'%20OR%201=1--", '%00']) {
      const malformed = await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${id}`, {
        apiKey: distribution.apiKey,
      });
      expect(malformed.status, id).toBe(404);
      expect(malformed.text, id).toBe('');
      expect(malformed.headers.get('content-type'), id).toBeNull();
    }
  });
});

describe('stores.v1.order-context', () => {
  it('gives ordering the owner and the URL, and the signing secrets on their own subject', async () => {
    const storeId = newStoreId();
    const created = await put(storeId, storeProfile());
    const bus = createBusClient(env.nc, {
      prefix: env.prefix,
      timeoutMs: 5_000,
      logger: env.logger,
    });
    // As ordering asks it, on behalf of a distribution partner.
    const asked: RequestContext = {
      requestId: randomUUID(),
      partnerId: distribution.partnerId,
      partnerKind: 'distribution',
      mode: 'live',
    };
    const context = await bus.request(subjects.stores.orderContext, { storeId }, asked);
    expect(context).toMatchObject({
      store: { storeId },
      ownerPartnerId: commerce.partnerId,
      submission: { url: 'https://partner.example/orders' },
    });
    expect(JSON.stringify(context)).not.toContain('whsec_');
    expect(await bus.request(subjects.stores.submissionSecrets, { storeId }, asked)).toEqual({
      secrets: [created.body.orderSubmissionSecret],
    });

    const withoutUrl = newStoreId();
    await put(withoutUrl, storeProfile({ orderSubmissionUrl: null }));
    expect(
      await bus.request(subjects.stores.orderContext, { storeId: withoutUrl }, asked),
    ).toMatchObject({ ownerPartnerId: commerce.partnerId, submission: null });
  });
});
