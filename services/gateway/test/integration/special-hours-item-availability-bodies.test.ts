import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createPartner } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// Hostile bodies of the special-hours and item-availability routes, answered by the gateway
// itself: no service runs behind it, so a body that passes reaches the bus and answers 503,
// and one that does not never leaves the gateway. (The rules that need the store, such as an
// item outside its catalog or an `until` in the past, are the stores service's tests.)

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;
let commerce: { apiKey: string };
let distribution: { apiKey: string };

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db, {
    NATS_REQUEST_TIMEOUT_MS: '2000',
    RATE_LIMIT_WRITES_PER_MIN: '10000',
  });
  await gateway.start();
  commerce = await createPartner(db, { kind: 'commerce', name: 'Special hours' });
  distribution = await createPartner(db, { kind: 'distribution', name: 'Item availability' });
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

interface Problem {
  errorCode: string;
  errors?: { code: string; pointer: string | null }[];
}

async function send(method: string, path: string, body?: string, apiKey = commerce.apiKey) {
  const response = await fetch(`${gateway.url()}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body,
  });
  const text = await response.text();
  return {
    status: response.status,
    text,
    problem: (text ? JSON.parse(text) : undefined) as Problem | undefined,
  };
}

const specialHoursPath = () => `/v1/commerce/stores/${randomUUID()}/special-hours`;
const itemAvailabilityPath = () => `/v1/commerce/stores/${randomUUID()}/item-availability`;
const putDays = (days: unknown) => send('PUT', specialHoursPath(), JSON.stringify({ days }));
const putItems = (items: unknown) => send('PUT', itemAvailabilityPath(), JSON.stringify({ items }));

/** The answer is a 400 REQUEST_INVALID with an error of `code` at `pointer`. */
function expectInvalidAt(answer: Awaited<ReturnType<typeof send>>, pointer: string, code?: string) {
  expect(answer.status, answer.text).toBe(400);
  expect(answer.problem?.errorCode).toBe('REQUEST_INVALID');
  expect(answer.problem?.errors).toContainEqual(
    expect.objectContaining({ pointer, ...(code ? { code } : {}) }),
  );
}

/** The answer is the 503 of a body that passed the gateway's checks (nothing answers behind). */
function expectPassedOn(answer: Awaited<ReturnType<typeof send>>) {
  expect(answer.status, answer.text).toBe(503);
  expect(answer.problem?.errorCode).toBe('SERVICE_UNAVAILABLE');
}

/** `count` consecutive dates from 2027-01-01, each closed. */
const closedDays = (count: number) =>
  Array.from({ length: count }, (_, index) => ({
    date: new Date(Date.UTC(2027, 0, 1 + index)).toISOString().slice(0, 10),
    closed: true,
  }));
const window = (start: string, end: string) => ({ start, end });

describe('PUT /v1/commerce/stores/{storeId}/special-hours', () => {
  it('refuses 366 days plus one, and passes 366 on', async () => {
    expectInvalidAt(await putDays(closedDays(367)), '/days', 'OUT_OF_RANGE');
    expectPassedOn(await putDays(closedDays(366)));
  });

  it('refuses a date twice, at the second', async () => {
    const days = [
      ...closedDays(2),
      { date: '2027-01-01', windows: [window('08:00:00', '12:00:00')] },
    ];
    expectInvalidAt(await putDays(days), '/days/2/date');
  });

  it('refuses overlapping windows, at the later one', async () => {
    const days = [
      {
        date: '2026-12-24',
        windows: [window('12:00:00', '18:00:00'), window('08:00:00', '12:30:00')],
      },
    ];
    expectInvalidAt(await putDays(days), '/days/0/windows/0/start');
  });

  it('refuses a window that ends before it starts, and 7 windows on one day', async () => {
    expectInvalidAt(
      await putDays([{ date: '2026-12-24', windows: [window('14:00:00', '08:00:00')] }]),
      '/days/0/windows/0/end',
    );
    const seven = Array.from({ length: 7 }, (_, hour) =>
      window(`0${hour}:00:00`, `0${hour}:30:00`),
    );
    // Neither form of a day fits: the union's error names the day.
    expectInvalidAt(await putDays([{ date: '2026-12-24', windows: seven }]), '/days/0');
  });

  it.each(['2026-02-30', '2026-13-01', '26-12-24', '2026-12-24T00:00:00Z'])(
    'refuses the date %s',
    async (date) => {
      expectInvalidAt(await putDays([{ date, closed: true }]), '/days/0/date');
    },
  );

  it('refuses a day both closed and open, a day with neither, and an unknown field', async () => {
    for (const day of [
      { date: '2026-12-24', closed: true, windows: [window('08:00:00', '12:00:00')] },
      { date: '2026-12-24' },
      { date: '2026-12-24', closed: false },
    ]) {
      const answer = await putDays([day]);
      expect(answer.status, JSON.stringify(day)).toBe(400);
      expect(answer.problem?.errorCode).toBe('REQUEST_INVALID');
    }
    const extra = await send('PUT', specialHoursPath(), JSON.stringify({ days: [], weekly: [] }));
    expectInvalidAt(extra, '', 'UNKNOWN_FIELD');
  });

  it('answers a body over 1 MiB with 413 before reading it', async () => {
    const days = Array.from({ length: 20_000 }, () => ({
      date: '2026-12-24',
      windows: [window('08:00:00', '12:00:00')],
    }));
    const answer = await send('PUT', specialHoursPath(), JSON.stringify({ days }));
    expect(answer.status).toBe(413);
    expect(answer.problem?.errorCode).toBe('PAYLOAD_TOO_LARGE');
  });
});

describe('PUT /v1/commerce/stores/{storeId}/item-availability', () => {
  const entries = (count: number) =>
    Array.from({ length: count }, () => ({ itemId: randomUUID(), available: false }));

  it('refuses 1,001 entries and none, and passes 1,000 on', async () => {
    expectInvalidAt(await putItems(entries(1_001)), '/items', 'OUT_OF_RANGE');
    expectInvalidAt(await putItems([]), '/items', 'OUT_OF_RANGE');
    expectPassedOn(await putItems(entries(1_000)));
  });

  it('refuses malformed entries at their pointers', async () => {
    const answer = await putItems([
      { itemId: 'fries', available: false },
      { itemId: randomUUID(), available: 'no' },
      { itemId: randomUUID(), available: false, until: 'tonight' },
      { itemId: randomUUID() },
      { itemId: randomUUID(), available: false, reason: 'sold out' },
    ]);
    expectInvalidAt(answer, '/items/0/itemId');
    expectInvalidAt(answer, '/items/1/available', 'INVALID_TYPE');
    expectInvalidAt(answer, '/items/2/until');
    expectInvalidAt(answer, '/items/3/available', 'REQUIRED');
    expectInvalidAt(answer, '/items/4', 'UNKNOWN_FIELD');
  });

  it('passes an until of null, or absent, on', async () => {
    expectPassedOn(
      await putItems([
        { itemId: randomUUID(), available: false, until: null },
        { itemId: randomUUID(), available: true },
      ]),
    );
  });

  it('bounds the errors of 20,000 malformed entries and echoes none of them back', async () => {
    const hostile = Array.from({ length: 20_000 }, (_, index) => ({
      itemId: `item-${index}`,
      available: 'maybe',
    }));
    const answer = await putItems(hostile);
    expect(answer.status).toBe(400);
    expect(answer.problem?.errorCode).toBe('REQUEST_INVALID');
    expect(answer.problem?.errors?.length).toBeGreaterThan(0);
    expect(answer.problem?.errors?.length).toBeLessThanOrEqual(100);
    expect(answer.text.length).toBeLessThan(32_000);
    expect(answer.text).not.toContain('item-19999');
  });

  it('answers a body over 1 MiB with 413', async () => {
    const answer = await putItems(
      Array.from({ length: 15_000 }, () => ({
        itemId: randomUUID(),
        available: false,
        until: '2026-12-24T23:59:59.000Z',
      })),
    );
    expect(answer.status).toBe(413);
    expect(answer.problem?.errorCode).toBe('PAYLOAD_TOO_LARGE');
  });
});

describe('reading item availability with a malformed store id', () => {
  it('is 400 REQUEST_INVALID for the commerce partner, a bodiless 404 on the marketfront', async () => {
    const commerceRead = await send('GET', '/v1/commerce/stores/not-a-store/item-availability');
    expect(commerceRead.status).toBe(400);
    expect(commerceRead.problem?.errorCode).toBe('REQUEST_INVALID');

    const marketRead = await send(
      'GET',
      '/v1/marketfront/stores/not-a-store/item-availability',
      undefined,
      distribution.apiKey,
    );
    expect(marketRead.status).toBe(404);
    expect(marketRead.text).toBe('');
  });

  it('passes a well-formed id on, for either partner', async () => {
    expectPassedOn(await send('GET', itemAvailabilityPath()));
    expectPassedOn(
      await send(
        'GET',
        `/v1/marketfront/stores/${randomUUID()}/item-availability`,
        undefined,
        distribution.apiKey,
      ),
    );
  });
});
