import { subjects } from '@pcp/contracts';
import {
  connectNats,
  createBusClient,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import type { NatsConnection, Subscription } from 'nats';
import { randomInt, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { capturingLogger } from '@pcp/testing/capturing-logger';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call, type HttpResult } from './http.js';

const PROCESSOR_TIMEOUT_MS = 500;
const CARDS = '/v1/marketfront/payments/cards';
const VAULT_ATTEMPTS = 30;
/** PAYMENTS_CARD_DECLINES_PER_WINDOW's default. */
const CARD_DECLINES = 5;

let env: TestEnvironment;
let platform: TestPlatform;
let bus: BusClient;
let distribution: { partnerId: string; apiKey: string };
const logged = capturingLogger('trace');
/** Every response body this file received: none may hold a card number. */
const responses: string[] = [];
/** NATS messages (any subject) that held a card number or CVC outside the vault request. */
const leakedOnNats: string[] = [];
let watcher: NatsConnection;
let everything: Subscription;

/** A Visa number no other test uses: 15 random digits after 4, then the Luhn check digit. */
function distinctiveCardNumber(): string {
  const body = `4${Array.from({ length: 14 }, () => randomInt(10)).join('')}`;
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let digit = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return `${body}${(10 - (sum % 10)) % 10}`;
}

const secretNumbers = new Set<string>();
const testCards = {
  success: '4242424242424242',
  declined: '4000000000000002',
  insufficientFunds: '4000000000009995',
  incorrectCvc: '4000000000000127',
  expired: '4000000000000069',
  stolen: '4000000000009979',
  processingError: '4000000000000119',
  hangs: '4000000000007775',
};
for (const number of Object.values(testCards)) secretNumbers.add(number);

const cardBody = (cardNumber: string, overrides: Record<string, unknown> = {}) => {
  const digits = cardNumber.replace(/\D/g, '');
  // Only card-length numbers: a short one ('1234' of a malformed body) turns up by chance in
  // the hex of a card's fingerprint, which is no leak.
  if (digits.length >= 12) secretNumbers.add(digits);
  return {
    cardNumber,
    expMonth: 12,
    expYear: 2030,
    cvc: '123',
    cardholderName: 'Grace Hopper',
    billingPostalCode: '60601',
    ...overrides,
  };
};

async function http(
  method: string,
  path: string,
  options: Parameters<typeof call>[3] & { endUser?: string | null; apiKey?: string } = {},
): Promise<HttpResult> {
  const { endUser, ...rest } = options;
  const result = await call(platform.baseUrl, method, path, {
    apiKey: distribution.apiKey,
    ...rest,
    headers: {
      ...(endUser === null ? {} : { 'x-end-user-id': endUser ?? 'end-user-1' }),
      ...rest.headers,
    },
  });
  responses.push(result.text);
  return result;
}

const vault = (cardNumber: string, endUser = 'end-user-1', overrides = {}) =>
  http('POST', CARDS, { body: cardBody(cardNumber, overrides), endUser });

/** The context ordering sends on place: the partner, its end user, its payment types. */
const asOrdering = (endUserId: string): RequestContext => ({
  requestId: randomUUID(),
  partnerId: distribution.partnerId,
  partnerKind: 'distribution',
  endUserId,
  paymentTypes: ['CARD', 'PAY_AT_STORE'],
});

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    logger: logged.logger,
    paymentsEnv: {
      PAYMENT_PROCESSOR_TIMEOUT_MS: String(PROCESSOR_TIMEOUT_MS),
      // The card cap's test vaults 27 cards for one end user.
      PAYMENTS_VAULT_ATTEMPTS_PER_WINDOW: String(VAULT_ATTEMPTS),
    },
    gatewayEnv: { RATE_LIMIT_WRITES_PER_MIN: '100000' },
  });
  distribution = await platform.newPartner('distribution');
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  watcher = await connectNats({
    url: inject('servers').natsUrl,
    name: 'card-watcher',
    logger: env.logger,
  });
  everything = watcher.subscribe('>', {
    callback: (_error, msg) => {
      const text = Buffer.from(msg.data).toString('latin1');
      const holdsCard =
        [...secretNumbers].some((number) => text.includes(number)) || /"cvc"/i.test(text);
      if (holdsCard && !msg.subject.endsWith('.payments.v1.cards.vault')) {
        leakedOnNats.push(msg.subject);
      }
    },
  });
});

afterAll(async () => {
  everything?.unsubscribe();
  await watcher?.close();
  await platform?.stop();
  await env?.cleanup();
});

describe('vaulted cards', () => {
  it('vaults a card, lists it, keeps its paymentId when vaulted again, and deletes it', async () => {
    const number = distinctiveCardNumber();
    const created = await vault(number, 'lister');
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      paymentId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      brand: 'VISA',
      last4: number.slice(-4),
      expMonth: 12,
      expYear: 2030,
      createdAt: expect.any(String),
    });

    const again = await vault(number.replace(/(\d{4})(?=\d)/g, '$1 '), 'lister', { expYear: 2031 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ paymentId: created.body.paymentId, expYear: 2031 });

    const other = await vault(distinctiveCardNumber(), 'lister');
    const listed = await http('GET', CARDS, { endUser: 'lister' });
    expect(listed.status).toBe(200);
    expect(listed.body.cards.map((card: { paymentId: string }) => card.paymentId)).toEqual([
      other.body.paymentId,
      created.body.paymentId,
    ]);

    const removed = await http('DELETE', `${CARDS}/${created.body.paymentId}`, {
      endUser: 'lister',
    });
    expect(removed.status).toBe(204);
    expect(
      (await http('DELETE', `${CARDS}/${created.body.paymentId}`, { endUser: 'lister' })).status,
    ).toBe(204);
    const after = await http('GET', CARDS, { endUser: 'lister' });
    expect(after.body.cards).toHaveLength(1);
  });

  it('scopes cards to (partner, end user): another one’s paymentId is PAYMENT_TOKEN_INVALID', async () => {
    const mine = await vault(distinctiveCardNumber(), 'owner');
    expect((await http('GET', CARDS, { endUser: 'stranger' })).body.cards).toEqual([]);
    const foreign = await http('DELETE', `${CARDS}/${mine.body.paymentId}`, {
      endUser: 'stranger',
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body).toMatchObject({
      errorCode: 'PAYMENT_TOKEN_INVALID',
      errorCategory: 'payment',
    });

    const otherPartner = await platform.newPartner('distribution');
    const fromOtherPartner = await http('DELETE', `${CARDS}/${mine.body.paymentId}`, {
      apiKey: otherPartner.apiKey,
      endUser: 'owner',
    });
    expect(fromOtherPartner.body.errorCode).toBe('PAYMENT_TOKEN_INVALID');
    const unknown = await http('DELETE', `${CARDS}/${randomUUID()}`, { endUser: 'owner' });
    expect(unknown.body.errorCode).toBe('PAYMENT_TOKEN_INVALID');
    await expectAppError(
      bus.request(
        subjects.payments.authorize,
        {
          orderId: randomUUID(),
          paymentId: mine.body.paymentId,
          amount: 100,
          currency: 'USD',
          mode: 'live',
        },
        asOrdering('stranger'),
      ),
      'PAYMENT_TOKEN_INVALID',
    );
  });

  it('wants X-End-User-Id on every card route, before looking at the body', async () => {
    for (const [method, path] of [
      ['POST', CARDS],
      ['GET', CARDS],
      ['DELETE', `${CARDS}/${randomUUID()}`],
    ] as const) {
      const result = await http(method, path, {
        endUser: null,
        ...(method === 'POST' ? { rawBody: '{"cardNumber": 42' } : {}),
      });
      expect(result.status).toBe(401);
      expect(result.body).toMatchObject({
        errorCode: 'SESSION_USER_REQUIRED',
        errorCategory: 'authentication',
      });
    }
  });

  it('refuses to vault for partners that may not take cards, with 403 PAYMENT_TYPE_NOT_ALLOWED', async () => {
    const payAtStoreOnly = await platform.newPartner('distribution', {
      paymentTypes: ['PAY_AT_STORE'],
    });
    const refused = await http('POST', CARDS, {
      apiKey: payAtStoreOnly.apiKey,
      body: cardBody(distinctiveCardNumber()),
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      errorCode: 'PAYMENT_TYPE_NOT_ALLOWED',
      errorCategory: 'payment',
      retryable: false,
    });
    // Its end users can still see (and delete) what is stored for them.
    const listed = await http('GET', CARDS, { apiKey: payAtStoreOnly.apiKey });
    expect(listed).toMatchObject({ status: 200, body: { cards: [] } });
  });

  it('checks Luhn, expiry and CVC with pointered 400 CARD_INVALID', async () => {
    const number = distinctiveCardNumber();
    const broken = `${number.slice(0, 15)}${(Number(number[15]) + 1) % 10}`;
    const cases: [Record<string, unknown>, string[]][] = [
      [cardBody(broken), ['/cardNumber']],
      [cardBody(number, { expMonth: 1, expYear: 2020 }), ['/expYear']],
      [cardBody(number, { expMonth: 13 }), ['/expMonth']],
      [cardBody(number, { cvc: '12' }), ['/cvc']],
      [cardBody('1234', { cvc: 'abc', expYear: 2001 }), ['/cardNumber', '/expYear', '/cvc']],
    ];
    for (const [body, pointers] of cases) {
      const result = await http('POST', CARDS, { body });
      expect(result.status).toBe(400);
      expect(result.body).toMatchObject({ errorCode: 'CARD_INVALID', errorCategory: 'validation' });
      expect(result.body.errors.map((error: { pointer: string }) => error.pointer)).toEqual(
        pointers,
      );
    }
  });

  it('answers malformed, oversized and hostile bodies with a ProblemDetail', async () => {
    const number = distinctiveCardNumber();
    const cases: [Parameters<typeof http>[2], number, string][] = [
      [{ rawBody: '{"cardNumber": "4242' }, 400, 'REQUEST_INVALID'],
      [{ rawBody: '' }, 400, 'REQUEST_INVALID'],
      [{ rawBody: '[]' }, 400, 'REQUEST_INVALID'],
      [{ body: { ...cardBody(number), cardNumber: Number(number) } }, 400, 'REQUEST_INVALID'],
      [{ body: { ...cardBody(number), cardNumber: '4'.repeat(65) } }, 400, 'REQUEST_INVALID'],
      [{ body: { ...cardBody(number), expYear: 1e308 } }, 400, 'REQUEST_INVALID'],
      [{ body: { ...cardBody(number), cardholderName: 'x'.repeat(101) } }, 400, 'REQUEST_INVALID'],
      [{ body: { ...cardBody(number), cardholderName: 'Ada\u0000' } }, 400, 'REQUEST_INVALID'],
      [
        { rawBody: `{"__proto__": {"admin": true}, "cardNumber": "${number}"}` },
        400,
        'REQUEST_INVALID',
      ],
      [
        { rawBody: JSON.stringify({ ...cardBody(number), pad: 'x'.repeat(2 * 1024 * 1024) }) },
        413,
        'PAYLOAD_TOO_LARGE',
      ],
      [
        { rawBody: 'cardNumber=4242', headers: { 'content-type': 'text/plain' } },
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      [{ body: cardBody(number), endUser: 'x'.repeat(129) }, 400, 'REQUEST_INVALID'],
    ];
    for (const [options, status, errorCode] of cases) {
      const result = await http('POST', CARDS, options);
      expect({ status: result.status, errorCode: result.body?.errorCode }).toEqual({
        status,
        errorCode,
      });
      expect(result.headers.get('content-type')).toContain('application/problem+json');
    }
    const badId = await http('DELETE', `${CARDS}/not-a-uuid`);
    expect(badId.body.errorCode).toBe('REQUEST_INVALID');
  });

  it('caps an end user’s cards at 25 with 409 CARD_LIMIT_REACHED', async () => {
    const results = await Promise.all(
      Array.from({ length: 27 }, () => vault(distinctiveCardNumber(), 'collector')),
    );
    expect(results.filter((result) => result.status === 201)).toHaveLength(25);
    const refused = results.filter((result) => result.status === 409);
    expect(refused).toHaveLength(2);
    expect(refused[0]!.body.errorCode).toBe('CARD_LIMIT_REACHED');
    expect((await http('GET', CARDS, { endUser: 'collector' })).body.cards).toHaveLength(25);
  });
});

describe('every test card, vaulted through the gateway and charged as place charges', () => {
  it.each([
    ['success', null, null],
    ['declined', 'PAYMENT_DECLINED', 'PAYMENT_FAILED'],
    ['insufficientFunds', 'PAYMENT_DECLINED', 'INSUFFICIENT_FUNDS'],
    ['incorrectCvc', 'PAYMENT_DECLINED', 'INCORRECT_CVC'],
    ['expired', 'PAYMENT_DECLINED', 'CARD_EXPIRED'],
    ['stolen', 'PAYMENT_DECLINED', 'CARD_LOST_OR_STOLEN'],
    ['processingError', 'PAYMENT_FAILED', 'PROCESSING_ERROR'],
    ['hangs', 'PAYMENT_PROCESSOR_UNAVAILABLE', null],
  ] as const)('%s', async (name, errorCode, elementCode) => {
    const endUser = `tester-${name}`;
    const vaulted = await vault(testCards[name], endUser);
    expect(vaulted.status).toBe(201);
    const chargesBefore = platform.processor.charges().length;
    const charge = bus.request(
      subjects.payments.authorize,
      {
        orderId: randomUUID(),
        paymentId: vaulted.body.paymentId,
        amount: 1_999,
        currency: 'USD',
        mode: 'live',
      },
      asOrdering(endUser),
    );
    if (!errorCode) {
      expect(await charge).toMatchObject({ status: 'authorized', amount: 1_999, last4: '4242' });
      return;
    }
    const error = await expectAppError(charge, errorCode);
    expect(error.errors?.[0]?.code ?? null).toBe(elementCode);
    // A hanging authorization charged nothing; every other decline is recorded as one.
    expect(platform.processor.charges().length - chargesBefore).toBe(name === 'hangs' ? 0 : 1);
  });
});

describe('velocity limits against card testing, through the gateway', () => {
  it('answers an end user vaulting too often with 429 PAYMENT_VELOCITY_EXCEEDED and Retry-After', async () => {
    const admitted = await Promise.all(
      Array.from({ length: VAULT_ATTEMPTS }, () => vault(testCards.success, 'busy-vaulter')),
    );
    expect(admitted.filter((result) => result.status < 300)).toHaveLength(VAULT_ATTEMPTS);
    const refused = await vault(testCards.success, 'busy-vaulter');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      errorCode: 'PAYMENT_VELOCITY_EXCEEDED',
      errorCategory: 'rate_limit',
      retryable: true,
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3_500);
    expect((await vault(testCards.success, 'patient-vaulter')).status).toBeLessThan(300);
  }, 60_000);

  it('refuses a card declined too often, for every end user, without asking the processor', async () => {
    const vaulted = await vault(testCards.stolen, 'card-tester');
    const chargesBefore = platform.processor.charges().length;
    const codes: string[] = [];
    // Earlier tests may have declined this card already; it is refused within the limit.
    for (let i = 0; i <= CARD_DECLINES; i++) {
      const error = await expectAppError(
        bus.request(
          subjects.payments.authorize,
          {
            orderId: randomUUID(),
            paymentId: vaulted.body.paymentId,
            amount: 500,
            currency: 'USD',
            mode: 'live',
          },
          asOrdering('card-tester'),
        ),
        'PAYMENT_DECLINED',
      );
      codes.push(error.errors?.[0]?.code ?? '');
    }
    expect(codes.at(-1)).toBe('PAYMENT_VELOCITY_EXCEEDED');
    const asked = codes.filter((code) => code === 'CARD_LOST_OR_STOLEN').length;
    expect(platform.processor.charges().length - chargesBefore).toBe(asked);
    const elsewhere = await vault(testCards.stolen, 'another-end-user');
    expect(elsewhere.status).toBe(429);
    expect(elsewhere.body.errorCode).toBe('PAYMENT_VELOCITY_EXCEEDED');
    expect(Number(elsewhere.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('the processor failing, seen through the gateway', () => {
  it('answers 503 PAYMENT_PROCESSOR_UNAVAILABLE (retryable) while the processor fails, then heals', async () => {
    platform.processor.setFaults({ errorRate: 1 });
    try {
      const failed = await vault(distinctiveCardNumber(), 'unlucky');
      expect(failed.status).toBe(503);
      expect(failed.body).toMatchObject({
        errorCode: 'PAYMENT_PROCESSOR_UNAVAILABLE',
        errorCategory: 'dependency',
        retryable: true,
      });
      expect(failed.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      platform.processor.setFaults({ errorRate: 0 });
    }
    expect((await vault(distinctiveCardNumber(), 'unlucky')).status).toBe(201);
  });

  it('answers 503 within the processor timeout when the processor hangs', async () => {
    platform.processor.setFaults({ hangRate: 1 });
    try {
      const started = performance.now();
      const hung = await vault(distinctiveCardNumber(), 'unlucky');
      expect(hung.body.errorCode).toBe('PAYMENT_PROCESSOR_UNAVAILABLE');
      expect(performance.now() - started).toBeLessThan(PROCESSOR_TIMEOUT_MS + 1_000);
    } finally {
      platform.processor.setFaults({ hangRate: 0 });
    }
  });
});

// Last: it reads what every test above left behind.
describe('card data', () => {
  it('appears in no log line, no text column of any schema, no other NATS message and no response', async () => {
    // Timeouts after the processor charged (the answer lost) and a processing error too.
    platform.processor.setFaults({ slowRate: 1, slowMs: PROCESSOR_TIMEOUT_MS * 2 });
    const slow = await vault(distinctiveCardNumber(), 'scanned');
    expect(slow.body.errorCode).toBe('PAYMENT_PROCESSOR_UNAVAILABLE');
    platform.processor.setFaults({ slowRate: 0, slowMs: 0 });
    await vault(distinctiveCardNumber(), 'scanned', { cvc: '9' });
    expect(secretNumbers.size).toBeGreaterThan(40);
    await watcher.flush();

    const numbers = [...secretNumbers];
    const holdsCard = (text: string) => numbers.some((number) => text.includes(number));

    expect(logged.lines.length).toBeGreaterThan(0);
    const leakingLines = logged.lines
      .map((line) => JSON.stringify(line))
      .filter((line) => holdsCard(line) || /"(cvc|cardNumber)"/i.test(line));
    expect(leakingLines).toEqual([]);

    expect(responses.filter(holdsCard)).toEqual([]);
    expect(leakedOnNats).toEqual([]);

    const db = new pg.Client({ connectionString: env.databaseUrl });
    await db.connect();
    try {
      const { rows: columns } = await db.query<{ schema: string; table: string; column: string }>(
        `SELECT c.table_schema AS schema, c.table_name AS table, c.column_name AS column
           FROM information_schema.columns c
           JOIN information_schema.tables t
             ON t.table_schema = c.table_schema AND t.table_name = c.table_name
          WHERE t.table_type = 'BASE TABLE'
            AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
            AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY')`,
      );
      expect(columns.map((column) => `${column.schema}.${column.table}`)).toContain(
        'payments.cards',
      );
      const patterns = [...numbers.map((number) => `%${number}%`), '%"cvc"%'];
      const leaks: string[] = [];
      for (const { schema, table, column } of columns) {
        const { rows } = await db.query<{ count: string }>(
          `SELECT count(*) FROM "${schema}"."${table}" WHERE "${column}"::text ILIKE ANY($1)`,
          [patterns],
        );
        if (Number(rows[0]!.count) > 0) leaks.push(`${schema}.${table}.${column}`);
      }
      expect(leaks).toEqual([]);
      // The scan would have seen them: the tokens the processor gave are there.
      const { rows } = await db.query<{ count: string }>(
        'SELECT count(*) FROM payments.cards WHERE processor_token IS NOT NULL',
      );
      expect(Number(rows[0]!.count)).toBeGreaterThan(30);
    } finally {
      await db.end();
    }
  });
});
