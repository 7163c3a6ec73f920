import { createPlatformClient, type operations } from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { newStoreId, storeProfile } from '@pcp/testing/fixtures';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { storeWithSodas } from './orders.js';

let env: TestEnvironment;
let platform: TestPlatform;
let commerce: { partnerId: string; apiKey: string };
let distribution: { partnerId: string; apiKey: string };
/** The stores' and ordering's clock; tests move it. */
let clockNow = new Date('2026-03-01T18:00:00.000Z');

const WHERE = { latitude: 41.8789, longitude: -87.6359 };
/** Every day 10:00-20:00 in Chicago. */
const DAILY = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'].map(
  (dayOfWeek) => ({ dayOfWeek, start: '10:00:00', end: '20:00:00' }),
);

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, { clock: () => clockNow });
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
});

afterAll(async () => {
  await platform?.stop();
  await env?.cleanup();
});

const specialHoursPath = (storeId: string) => `/v1/commerce/stores/${storeId}/special-hours`;
const putSpecialHours = (storeId: string, body: unknown, apiKey = commerce.apiKey) =>
  call(platform.baseUrl, 'PUT', specialHoursPath(storeId), { apiKey, body });
const setStatus = (storeId: string, body: unknown) =>
  call(platform.baseUrl, 'POST', `/v1/commerce/stores/${storeId}/status`, {
    apiKey: commerce.apiKey,
    body,
  });
const lookUp = async (storeId: string) => {
  const response = await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}`, {
    apiKey: distribution.apiKey,
  });
  expect(response.status).toBe(200);
  return response.body;
};
/** The ids of the stores named `name` that discovery finds (open at `scheduledTime`, if given). */
async function discovered(name: string, scheduledTime?: string): Promise<string[]> {
  const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/stores/discover', {
    apiKey: distribution.apiKey,
    body: {
      location: WHERE,
      fulfillmentType: 'PICKUP',
      query: name,
      ...(scheduledTime ? { scheduledTime } : {}),
    },
  });
  expect(response.status).toBe(200);
  return response.body.stores.map((store: { storeId: string }) => store.storeId);
}

async function newStore(): Promise<{ storeId: string; name: string }> {
  const storeId = newStoreId();
  const name = `Hours ${storeId}`;
  const created = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile({
      name,
      availability: DAILY,
      address: { ...storeProfile().address, ...WHERE },
    }),
  });
  expect(created.status).toBe(201);
  return { storeId, name };
}

describe('special hours through the gateway, across the 2026 daylight-saving changes', () => {
  it('replace the weekly hours on their dates in open-now, nextOpenAt and discovery', async () => {
    const { storeId, name } = await newStore();
    const days = [
      { date: '2026-11-01', windows: [{ start: '01:00:00', end: '01:30:00' }] },
      { date: '2026-03-08', windows: [{ start: '01:00:00', end: '04:00:00' }] },
      { date: '2026-03-07', closed: true },
    ];
    const put = await putSpecialHours(storeId, { days });
    expect(put.status).toBe(200);
    const byDate = [days[2], days[1], days[0]];
    expect(put.body).toEqual({ days: byDate });
    const read = await call(platform.baseUrl, 'GET', specialHoursPath(storeId), {
      apiKey: commerce.apiKey,
    });
    expect(read).toMatchObject({ status: 200, body: { days: byDate } });

    // Saturday 2026-03-07 12:00 CST, closed by its special day: opens Sunday 01:00 CST.
    clockNow = new Date('2026-03-07T18:00:00Z');
    expect(await lookUp(storeId)).toMatchObject({
      isOpenNow: false,
      nextOpenAt: '2026-03-08T07:00:00.000Z',
    });
    // Sunday 03:30 CDT, just after the clocks went forward: inside 01:00-04:00.
    clockNow = new Date('2026-03-08T08:30:00Z');
    expect(await lookUp(storeId)).toMatchObject({ isOpenNow: true, nextOpenAt: null });
    expect(await discovered(name, '2026-03-08T08:30:00Z')).toEqual([storeId]);
    // Sunday 04:00 CDT closes; 11:00 CDT is inside the weekly hours but not the special day's.
    expect(await discovered(name, '2026-03-08T09:00:00Z')).toEqual([]);
    expect(await discovered(name, '2026-03-08T16:00:00Z')).toEqual([]);
    clockNow = new Date('2026-03-08T16:00:00Z');
    expect(await lookUp(storeId)).toMatchObject({
      isOpenNow: false,
      // Monday 10:00 CDT.
      nextOpenAt: '2026-03-09T15:00:00.000Z',
    });

    // 2026-11-01: 01:00-01:30 happens twice (CDT, then CST).
    clockNow = new Date('2026-11-01T06:45:00Z'); // 01:45 CDT
    expect(await lookUp(storeId)).toMatchObject({
      isOpenNow: false,
      nextOpenAt: '2026-11-01T07:00:00.000Z',
    });
    expect(await discovered(name, '2026-11-01T06:15:00Z')).toEqual([storeId]);
    expect(await discovered(name, '2026-11-01T07:15:00Z')).toEqual([storeId]);
    expect(await discovered(name, '2026-11-01T07:30:00Z')).toEqual([]);
  });

  it('refuse hostile bodies with ProblemDetail pointers, changing nothing', async () => {
    const { storeId } = await newStore();
    const kept = { days: [{ date: '2026-12-25', closed: true }] };
    expect((await putSpecialHours(storeId, kept)).status).toBe(200);
    const start = Date.parse('2027-01-01T00:00:00Z');
    const tooMany = Array.from({ length: 367 }, (_, index) => ({
      date: new Date(start + index * 86_400_000).toISOString().slice(0, 10),
      closed: true,
    }));
    const cases: [unknown, string][] = [
      [{ days: tooMany }, '/days'],
      [
        {
          days: [
            { date: '2027-01-01', closed: true },
            { date: '2027-01-01', closed: true },
          ],
        },
        '/days/1/date',
      ],
      [
        {
          days: [
            {
              date: '2027-01-02',
              windows: [
                { start: '08:00:00', end: '12:00:00' },
                { start: '11:59:59', end: '13:00:00' },
              ],
            },
          ],
        },
        '/days/0/windows/1/start',
      ],
      [{ days: [{ date: '2027-01-03', closed: true, note: 'x' }] }, '/days/0'],
      [{ days: [{ date: '2027-13-01', closed: true }] }, '/days/0'],
      [{}, '/days'],
    ];
    for (const [body, pointer] of cases) {
      const response = await putSpecialHours(storeId, body);
      expect(response.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(
        response.body.errors.some((error: { pointer: string }) =>
          error.pointer.startsWith(pointer),
        ),
        JSON.stringify(response.body.errors),
      ).toBe(true);
    }
    const malformed = await call(platform.baseUrl, 'PUT', specialHoursPath(storeId), {
      apiKey: commerce.apiKey,
      rawBody: '{"days": [',
    });
    expect(malformed.status).toBe(400);
    const read = await call(platform.baseUrl, 'GET', specialHoursPath(storeId), {
      apiKey: commerce.apiKey,
    });
    expect(read.body).toEqual(kept);

    // Another partner's or an unknown store: 404; a distribution key: 403.
    const stranger = await platform.newPartner('commerce');
    expect((await putSpecialHours(storeId, kept, stranger.apiKey)).status).toBe(404);
    expect((await putSpecialHours(randomUUID(), kept)).status).toBe(404);
    expect((await putSpecialHours(storeId, kept, distribution.apiKey)).status).toBe(403);
  });
});

describe('busy through the gateway', () => {
  it('adds its minutes to the views and discovery until its resumeAt', async () => {
    const { storeId, name } = await newStore();
    clockNow = new Date('2026-06-01T17:00:00Z'); // Monday 12:00 CDT: open
    const busy = await setStatus(storeId, {
      status: 'busy',
      extraPrepMinutes: 20,
      resumeAt: '2026-06-01T18:00:00Z',
    });
    expect(busy.status).toBe(200);
    expect(busy.body).toEqual({
      status: 'busy',
      reason: null,
      pausedAt: '2026-06-01T17:00:00.000Z',
      resumeAt: '2026-06-01T18:00:00.000Z',
      extraPrepMinutes: 20,
      pausedBy: null,
    });
    expect(await lookUp(storeId)).toMatchObject({
      status: 'busy',
      extraPrepMinutes: 20,
      isOpenNow: true,
    });
    expect(await discovered(name, '2026-06-01T17:30:00Z')).toEqual([storeId]);
    clockNow = new Date('2026-06-01T18:00:00Z');
    expect(await lookUp(storeId)).toMatchObject({ status: 'online', extraPrepMinutes: null });
  });

  it('refuses 0, 4, 121 and 1,000 minutes and a resumeAt in the past', async () => {
    const { storeId } = await newStore();
    clockNow = new Date('2026-06-01T17:00:00Z');
    for (const extraPrepMinutes of [0, 4, 121, 1_000]) {
      const response = await setStatus(storeId, { status: 'busy', extraPrepMinutes });
      expect(response.status, String(extraPrepMinutes)).toBe(400);
      expect(response.body.errors).toEqual([
        expect.objectContaining({ pointer: '/extraPrepMinutes' }),
      ]);
    }
    const past = await setStatus(storeId, {
      status: 'busy',
      extraPrepMinutes: 10,
      resumeAt: '2026-06-01T16:59:59Z',
    });
    expect(past.status).toBe(400);
    expect(past.body.errors).toEqual([expect.objectContaining({ pointer: '/resumeAt' })]);
    expect(await lookUp(storeId)).toMatchObject({ status: 'online', extraPrepMinutes: null });
  });
});

type OrderRequest = operations['validateOrder']['requestBody']['content']['application/json'];

describe('orders read special hours', () => {
  it('refuse an ASAP order on a closed special day and a scheduled one outside its windows, with STORE_CLOSED', async () => {
    const host = await startCatalogHost();
    try {
      const market = createPlatformClient({
        baseUrl: platform.baseUrl,
        apiKey: (await platform.newPartner('distribution', { paymentTypes: ['CARD'] })).apiKey,
      });
      const owner = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: commerce.apiKey });
      // Open all week, except Christmas (closed) and Christmas Eve (08:00-14:00 only).
      const { storeId, ids } = await storeWithSodas(owner, host);
      const days = [
        { date: '2026-12-24', windows: [{ start: '08:00:00', end: '14:00:00' }] },
        { date: '2026-12-25', closed: true },
      ];
      expect((await putSpecialHours(storeId, { days })).status).toBe(200);
      const order = (fulfillment: OrderRequest['fulfillment']): OrderRequest => ({
        cart: {
          catalogSetId: ids.catalogSetId,
          storeId,
          lineItems: [{ itemId: ids.soda, lineItemId: randomUUID(), quantity: 10 }],
        },
        fulfillment,
        client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
        paymentType: 'CARD',
        tip: 2,
      });
      const problems = async (fulfillment: OrderRequest['fulfillment']) => {
        const { data, response } = await market.POST('/v1/marketfront/orders/validate', {
          body: order(fulfillment),
          headers: { 'x-end-user-id': 'shopper-1' },
        });
        expect(response.status).toBe(200);
        return data!.errors.map((error) => [error.code, error.pointer]);
      };
      const asap = { mode: 'PICKUP', scheduleType: 'ASAP' } as const;
      const at = (scheduledTime: string) =>
        ({ mode: 'PICKUP', scheduleType: 'SCHEDULED', scheduledTime }) as const;

      clockNow = new Date('2026-12-25T18:00:00Z'); // Christmas 12:00 CST
      expect(await problems(asap)).toEqual([['STORE_CLOSED', '/cart/storeId']]);
      clockNow = new Date('2026-12-24T12:00:00Z'); // Christmas Eve 06:00 CST
      expect(await problems(asap)).toEqual([['STORE_CLOSED', '/cart/storeId']]);
      expect(await problems(at('2026-12-24T15:00:00Z'))).toEqual([]); // 09:00 CST
      expect(await problems(at('2026-12-24T21:00:00Z'))).toEqual([
        ['STORE_CLOSED', '/fulfillment/scheduledTime'],
      ]); // 15:00 CST
      expect(await problems(at('2026-12-25T15:00:00Z'))).toEqual([
        ['STORE_CLOSED', '/fulfillment/scheduledTime'],
      ]);
      expect(await problems(at('2026-12-26T15:00:00Z'))).toEqual([]); // the weekly hours again
      clockNow = new Date('2026-12-24T15:00:00Z');
      expect(await problems(asap)).toEqual([]);
    } finally {
      await host.close();
    }
  });
});
