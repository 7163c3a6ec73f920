import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createProcessorSimulator, testCards, type ProcessorSimulator } from '../src/simulator.js';

const API_KEY = 'sk_test_simulator';
let sim: ProcessorSimulator;
let base: string;
let keySeq = 0;

const newKey = () => `key-${Date.now()}-${++keySeq}`;

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
  text: string;
  headers: Headers;
}

async function call(
  method: string,
  path: string,
  options: {
    body?: unknown;
    key?: string | null;
    auth?: string | null;
    signal?: AbortSignal;
    raw?: string;
    /** Another simulator's URL. */
    base?: string;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.auth !== null) headers.authorization = options.auth ?? `Bearer ${API_KEY}`;
  if (method === 'POST' && options.key !== null)
    headers['idempotency-key'] = options.key ?? newKey();
  const body =
    options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${options.base ?? base}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    text,
    body: text ? JSON.parse(text) : undefined,
    headers: response.headers,
  };
}

const post = (path: string, body: unknown, key?: string, signal?: AbortSignal) =>
  call('POST', path, { body, ...(key ? { key } : {}), ...(signal ? { signal } : {}) });

const card = (number: string) => ({ number, expMonth: 12, expYear: 2030, cvc: '123' });

async function tokenize(number: string = testCards.success): Promise<string> {
  const answer = await post('/v1/tokens', card(number));
  expect(answer.status).toBe(201);
  return answer.body.token as string;
}

async function authorize(number: string = testCards.success, amount = 1000, key?: string) {
  return post(
    '/v1/authorizations',
    { token: await tokenize(number), amount, currency: 'EUR' },
    key,
  );
}

async function authorizeReferenced(
  reference: string,
  number: string = testCards.success,
  amount = 1000,
) {
  const token = await tokenize(number);
  return post('/v1/authorizations', { token, amount, currency: 'EUR', reference });
}

const find = (reference: string, signal?: AbortSignal) =>
  call('GET', `/v1/authorizations?reference=${encodeURIComponent(reference)}`, {
    ...(signal ? { signal } : {}),
  });

async function chargeCount(): Promise<number> {
  const answer = await call('GET', '/v1/charges');
  expect(answer.status).toBe(200);
  return (answer.body.charges as unknown[]).length;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  sim = createProcessorSimulator({ apiKey: API_KEY });
  base = await sim.listen();
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

describe('tokens', () => {
  it('tokenizes without echoing the number or cvc, with a stable fingerprint', async () => {
    const first = await post('/v1/tokens', { ...card('4111111111111111'), cvc: '987' });
    const second = await post('/v1/tokens', card('4111111111111111'));
    const other = await post('/v1/tokens', card(testCards.success));
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      token: expect.stringMatching(/^tok_[0-9a-f]{24}$/),
      last4: '1111',
      expMonth: 12,
      expYear: 2030,
      fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(first.text).not.toContain('4111111111111111');
    // The random hex of the token and fingerprint may hold "987" by chance (about 1 run in 80).
    const withoutRandomHex = first.text
      .replace(String(first.body.token), '')
      .replace(String(first.body.fingerprint), '');
    expect(withoutRandomHex).not.toContain('987');
    expect(second.body.fingerprint).toBe(first.body.fingerprint);
    expect(second.body.token).not.toBe(first.body.token);
    expect(other.body.fingerprint).not.toBe(first.body.fingerprint);
  });

  it('refuses a number failing Luhn and invalid parameters without echoing them', async () => {
    const luhn = await post('/v1/tokens', card('4242424242424241'));
    expect(luhn.status).toBe(400);
    expect(luhn.body.error).toMatchObject({ type: 'card_error', code: 'invalid_number' });
    const invalid = await post('/v1/tokens', { ...card('42424242'), cvc: '12' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'parameter_invalid',
    });
    expect(invalid.text).not.toContain('42424242');
  });
});

describe('authorizations by test card', () => {
  it('authorizes 4242 and any unlisted number', async () => {
    for (const number of [testCards.success, '5555555555554444']) {
      const answer = await authorize(number, 1234);
      expect(answer.status).toBe(201);
      expect(answer.body).toMatchObject({ status: 'authorized', amount: 1234, currency: 'EUR' });
      expect(answer.body.id).toMatch(/^auth_[0-9a-f]{24}$/);
      expect(typeof answer.body.createdAt).toBe('string');
    }
    expect(sim.charges().map((charge) => charge.status)).toEqual(['authorized', 'authorized']);
  });

  const declines = [
    [testCards.declined, 'card_declined'],
    [testCards.insufficientFunds, 'insufficient_funds'],
    [testCards.incorrectCvc, 'incorrect_cvc'],
    [testCards.expiredCard, 'expired_card'],
    [testCards.stolenCard, 'stolen_card'],
    [testCards.processingError, 'processing_error'],
  ] as const;
  it.each(declines)('declines %s with %s, recording the attempt', async (number, code) => {
    const answer = await authorize(number);
    expect(answer.status).toBe(402);
    expect(answer.body).toEqual({
      error: { type: 'card_error', code, message: expect.any(String) },
      authorization: { id: expect.stringMatching(/^auth_/), status: 'declined' },
    });
    const charges = sim.charges();
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({
      id: answer.body.authorization.id,
      status: 'declined',
      declineCode: code,
    });
  });

  it('answers 404 for an unknown token and stores that answer', async () => {
    const key = newKey();
    const body = { token: 'tok_nope', amount: 100, currency: 'EUR' };
    const first = await post('/v1/authorizations', body, key);
    expect(first.status).toBe(404);
    expect(first.body.error.code).toBe('token_not_found');
    const again = await post('/v1/authorizations', body, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('never answers for the hang card and records nothing; a retry hangs again', async () => {
    const token = await tokenize(testCards.hang);
    const key = newKey();
    const body = { token, amount: 100, currency: 'EUR' };
    await expect(post('/v1/authorizations', body, key, AbortSignal.timeout(300))).rejects.toThrow();
    await sleep(50);
    await expect(post('/v1/authorizations', body, key, AbortSignal.timeout(300))).rejects.toThrow();
    expect(await chargeCount()).toBe(0);
  });
});

describe('idempotency', () => {
  it('replays the identical answer with Idempotent-Replayed and charges once', async () => {
    const token = await tokenize();
    const key = newKey();
    const body = { token, amount: 500, currency: 'USD' };
    const first = await post('/v1/authorizations', body, key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const second = await post('/v1/authorizations', body, key);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.text).toBe(first.text);
    expect(await chargeCount()).toBe(1);
  });

  it('replays a decline without a second attempt', async () => {
    const token = await tokenize(testCards.insufficientFunds);
    const key = newKey();
    const first = await post('/v1/authorizations', { token, amount: 5, currency: 'USD' }, key);
    const second = await post('/v1/authorizations', { token, amount: 5, currency: 'USD' }, key);
    expect([first.status, second.status]).toEqual([402, 402]);
    expect(second.text).toBe(first.text);
    expect(await chargeCount()).toBe(1);
  });

  it('answers 422 when a key is reused with a different body', async () => {
    const token = await tokenize();
    const key = newKey();
    expect(
      (await post('/v1/authorizations', { token, amount: 500, currency: 'USD' }, key)).status,
    ).toBe(201);
    const reused = await post('/v1/authorizations', { token, amount: 501, currency: 'USD' }, key);
    expect(reused.status).toBe(422);
    expect(reused.body.error).toMatchObject({
      type: 'idempotency_error',
      code: 'idempotency_key_reused',
    });
    expect(await chargeCount()).toBe(1);
  });

  it('charges once for 10 concurrent calls with one key during latency', async () => {
    const token = await tokenize();
    sim.setFaults({ latencyMs: 200 });
    const key = newKey();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        post('/v1/authorizations', { token, amount: 700, currency: 'EUR' }, key),
      ),
    );
    const fresh = answers.filter(
      (answer) => answer.status === 201 && !answer.headers.get('idempotent-replayed'),
    );
    expect(fresh).toHaveLength(1);
    for (const answer of answers) {
      if (answer.status === 409) expect(answer.body.error.code).toBe('idempotency_key_in_use');
      else expect(answer.text).toBe(fresh[0]?.text);
    }
    expect(answers.some((answer) => answer.status === 409)).toBe(true);
    sim.setFaults({ latencyMs: 0 });
    expect(await chargeCount()).toBe(1);
  });

  it('charges once when the answer is lost (slowRate) and the client retries 20 times', async () => {
    const token = await tokenize();
    sim.setFaults({ slowRate: 1, slowMs: 500 });
    const key = newKey();
    const body = { token, amount: 900, currency: 'EUR' };
    await expect(post('/v1/authorizations', body, key, AbortSignal.timeout(100))).rejects.toThrow();
    const retries = await Promise.all(
      Array.from({ length: 20 }, () => post('/v1/authorizations', body, key)),
    );
    for (const retry of retries) {
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.text).toBe(retries[0]?.text);
    }
    expect(await chargeCount()).toBe(1);
  });

  it('answers 500 without executing under errorRate, then the same key executes', async () => {
    const token = await tokenize();
    sim.setFaults({ errorRate: 1 });
    const key = newKey();
    const body = { token, amount: 100, currency: 'EUR' };
    const failed = await post('/v1/authorizations', body, key);
    expect(failed.status).toBe(500);
    expect(failed.body.error).toMatchObject({ type: 'api_error', code: 'internal_error' });
    expect(await chargeCount()).toBe(0);
    sim.setFaults({ errorRate: 0 });
    const retried = await post('/v1/authorizations', body, key);
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(await chargeCount()).toBe(1);
  });

  it('releases the key of a hanging call once its client leaves (hangRate)', async () => {
    const token = await tokenize();
    sim.setFaults({ hangRate: 1 });
    const key = newKey();
    const body = { token, amount: 100, currency: 'EUR' };
    await expect(post('/v1/authorizations', body, key, AbortSignal.timeout(300))).rejects.toThrow();
    expect(await chargeCount()).toBe(0);
    sim.setFaults({ hangRate: 0 });
    await sleep(50);
    const retried = await post('/v1/authorizations', body, key);
    expect(retried.status).toBe(201);
    expect(await chargeCount()).toBe(1);
  });
});

describe('capture, void, refund', () => {
  it('captures partially, replays an already captured state and refunds down to zero', async () => {
    const auth = (await authorize(testCards.success, 1000)).body;
    const tooMuch = await post(`/v1/authorizations/${auth.id}/capture`, { amount: 1001 });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.error.code).toBe('amount_too_large');
    const early = await post('/v1/refunds', { authorization: auth.id, amount: 1 });
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('authorization_not_captured');

    const capture = await post(`/v1/authorizations/${auth.id}/capture`, { amount: 800 });
    expect(capture.status).toBe(200);
    expect(capture.body).toEqual({
      id: auth.id,
      status: 'captured',
      amount: 1000,
      capturedAmount: 800,
      currency: 'EUR',
    });
    const again = await post(`/v1/authorizations/${auth.id}/capture`, {});
    expect(again.status).toBe(200);
    expect(again.body.capturedAmount).toBe(800);
    const voided = await post(`/v1/authorizations/${auth.id}/void`, {});
    expect(voided.status).toBe(409);
    expect(voided.body.error.code).toBe('authorization_captured');

    const refund = await post('/v1/refunds', { authorization: auth.id, amount: 300 });
    expect(refund.status).toBe(201);
    expect(refund.body).toMatchObject({ authorization: auth.id, amount: 300, status: 'succeeded' });
    expect(refund.body.id).toMatch(/^re_[0-9a-f]{24}$/);
    expect(sim.charges()[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: 300 });
    const over = await post('/v1/refunds', { authorization: auth.id, amount: 501 });
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe('amount_too_large');
    expect((await post('/v1/refunds', { authorization: auth.id, amount: 500 })).status).toBe(201);
    expect(sim.charges()[0]).toMatchObject({
      status: 'refunded',
      capturedAmount: 800,
      refundedAmount: 800,
    });
  });

  it('voids once, then refuses capture; declined ones are neither capturable nor voidable', async () => {
    const auth = (await authorize()).body;
    const voided = await post(`/v1/authorizations/${auth.id}/void`, {});
    expect(voided.body).toEqual({ id: auth.id, status: 'voided', amount: 1000, currency: 'EUR' });
    expect((await post(`/v1/authorizations/${auth.id}/void`, {})).status).toBe(200);
    const capture = await post(`/v1/authorizations/${auth.id}/capture`, {});
    expect(capture.status).toBe(409);
    expect(capture.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'authorization_not_capturable',
    });

    const declined = (await authorize(testCards.declined)).body.authorization;
    const captureDeclined = await post(`/v1/authorizations/${declined.id}/capture`, {});
    expect(captureDeclined.body.error.code).toBe('authorization_not_capturable');
    const voidDeclined = await post(`/v1/authorizations/${declined.id}/void`, {});
    expect(voidDeclined.status).toBe(409);
    expect(voidDeclined.body.error.code).toBe('authorization_not_voidable');
    const unknown = await post('/v1/authorizations/auth_nope/capture', {});
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('authorization_not_found');
  });

  it('lists charges oldest first, filtered by status', async () => {
    const first = (await authorize()).body;
    await authorize(testCards.declined);
    const third = (await authorize()).body;
    await post(`/v1/authorizations/${third.id}/capture`, {});
    const all = await call('GET', '/v1/charges');
    expect(all.body.charges.map((charge: { status: string }) => charge.status)).toEqual([
      'authorized',
      'declined',
      'captured',
    ]);
    expect(all.body.charges[0]).toMatchObject({
      id: first.id,
      last4: '4242',
      capturedAmount: 0,
      refundedAmount: 0,
    });
    const filtered = await call('GET', '/v1/charges?status=authorized,captured');
    expect(filtered.body.charges.map((charge: { id: string }) => charge.id)).toEqual([
      first.id,
      third.id,
    ]);
    expect((await call('GET', '/v1/charges?status=bogus')).status).toBe(400);
  });
});

describe('references and lookups', () => {
  it('keeps the reference on the charge and in the idempotency fingerprint', async () => {
    const token = await tokenize();
    const key = newKey();
    const body = { token, amount: 500, currency: 'EUR', reference: 'order 1/attempt 1' };
    const first = await post('/v1/authorizations', body, key);
    expect(first.status).toBe(201);
    expect(sim.charges()[0]).toMatchObject({ id: first.body.id, reference: 'order 1/attempt 1' });
    const listed = await call('GET', '/v1/charges');
    expect(listed.body.charges[0]).toMatchObject({ reference: 'order 1/attempt 1' });
    expect((await post('/v1/authorizations', body, key)).headers.get('idempotent-replayed')).toBe(
      'true',
    );
    const reused = await post('/v1/authorizations', { ...body, reference: 'order 2' }, key);
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    await authorize();
    expect(sim.charges().map((charge) => charge.reference)).toEqual(['order 1/attempt 1', null]);
  });

  it('retrieves an authorization in every state with the API key and no Idempotency-Key', async () => {
    const auth = (await authorizeReferenced('ref-a')).body;
    const retrieve = () => call('GET', `/v1/authorizations/${auth.id}`);
    const authorized = await retrieve();
    expect(authorized.status).toBe(200);
    expect(authorized.body).toEqual({
      id: auth.id,
      status: 'authorized',
      amount: 1000,
      currency: 'EUR',
      capturedAmount: 0,
      refundedAmount: 0,
      reference: 'ref-a',
      createdAt: auth.createdAt,
    });
    await post(`/v1/authorizations/${auth.id}/capture`, { amount: 600 });
    expect((await retrieve()).body).toMatchObject({ status: 'captured', capturedAmount: 600 });
    await post('/v1/refunds', { authorization: auth.id, amount: 100 });
    expect((await retrieve()).body).toMatchObject({
      status: 'partially_refunded',
      capturedAmount: 600,
      refundedAmount: 100,
    });
    await post('/v1/refunds', { authorization: auth.id, amount: 500 });
    expect((await retrieve()).body).toMatchObject({ status: 'refunded', refundedAmount: 600 });

    const unreferenced = (await authorize()).body;
    await post(`/v1/authorizations/${unreferenced.id}/void`, {});
    expect((await call('GET', `/v1/authorizations/${unreferenced.id}`)).body).toMatchObject({
      status: 'voided',
      reference: null,
    });
    for (const path of [`/v1/authorizations/${auth.id}`, '/v1/authorizations?reference=ref-a']) {
      const refused = await call('GET', path, { auth: null });
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('invalid_api_key');
    }
  });

  it('answers 404 authorization_not_found for an unknown id', async () => {
    const unknown = await call('GET', '/v1/authorizations/auth_nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'authorization_not_found',
        message: expect.any(String),
      },
    });
  });

  it('finds a declined authorization by reference, with its decline code', async () => {
    const declined = await authorizeReferenced('ref-declined', testCards.insufficientFunds);
    expect(declined.status).toBe(402);
    const retried = (await authorizeReferenced('ref-declined')).body;
    const found = await find('ref-declined');
    expect(found.status).toBe(200);
    expect(found.body.authorizations).toEqual([
      {
        id: declined.body.authorization.id,
        status: 'declined',
        amount: 1000,
        currency: 'EUR',
        capturedAmount: 0,
        refundedAmount: 0,
        reference: 'ref-declined',
        declineCode: 'insufficient_funds',
        createdAt: expect.any(String),
      },
      expect.objectContaining({ id: retried.id, status: 'authorized' }),
    ]);
    expect(found.body.authorizations[1]).not.toHaveProperty('declineCode');
    const retrieved = await call('GET', `/v1/authorizations/${declined.body.authorization.id}`);
    expect(retrieved.body).toEqual(found.body.authorizations[0]);
  });

  it('finds by reference oldest first, at most 100, and nothing for an unknown reference', async () => {
    const token = await tokenize();
    const reference = 'a b&c=d?';
    const ids: string[] = [];
    for (let i = 0; i < 101; i++) {
      const answer = await post('/v1/authorizations', {
        token,
        amount: 1 + i,
        currency: 'EUR',
        reference,
      });
      ids.push(answer.body.id as string);
    }
    await authorizeReferenced('someone else');
    const found = await find(reference);
    expect(found.body.authorizations.map((auth: { id: string }) => auth.id)).toEqual(
      ids.slice(0, 100),
    );
    expect(await find('nobody')).toMatchObject({ status: 200, body: { authorizations: [] } });
  });

  it('forgets an evicted charge in searches by reference too', async () => {
    const small = createProcessorSimulator({ apiKey: API_KEY, maxRecords: 2 });
    const url = await small.listen();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const tokens = await call('POST', '/v1/tokens', {
          body: card(testCards.success),
          base: url,
        });
        const auth = await call('POST', '/v1/authorizations', {
          body: { token: tokens.body.token, amount: 100, currency: 'EUR', reference: 'kept' },
          base: url,
        });
        ids.push(auth.body.id as string);
      }
      const found = await call('GET', '/v1/authorizations?reference=kept', { base: url });
      expect(found.body.authorizations.map((auth: { id: string }) => auth.id)).toEqual(
        ids.slice(1),
      );
    } finally {
      await small.close();
    }
  });

  it.each([
    ['too long', 'x'.repeat(256)],
    ['empty', ''],
    ['not ASCII', 'café'],
    ['a control character', 'tab\there'],
  ])(
    'refuses a reference %s with the usual 400 body, charging nothing',
    async (_name, reference) => {
      const token = await tokenize();
      const answers = [
        await post('/v1/authorizations', { token, amount: 100, currency: 'EUR', reference }),
        await find(reference),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(400);
        expect(answer.body).toEqual({
          error: {
            type: 'invalid_request_error',
            code: 'parameter_invalid',
            message: 'Invalid parameters: reference',
          },
        });
      }
      expect(await chargeCount()).toBe(0);
    },
  );

  it('refuses a search without exactly one reference', async () => {
    for (const query of ['', '?reference=a&reference=b', '?reference=a&status=declined']) {
      const answer = await call('GET', `/v1/authorizations${query}`);
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({
        type: 'invalid_request_error',
        code: 'parameter_invalid',
      });
    }
  });

  it('answers lookups under the faults aimed at retrieve; the charge listing has none', async () => {
    const auth = (await authorizeReferenced('ref-f')).body;
    const lookups = [
      (signal?: AbortSignal) =>
        call('GET', `/v1/authorizations/${auth.id}`, { ...(signal ? { signal } : {}) }),
      (signal?: AbortSignal) => find('ref-f', signal),
    ];
    for (const operations of [[], ['retrieve']] as const) {
      sim.setFaults({ errorRate: 1, operations: [...operations] });
      for (const lookup of lookups) {
        const failed = await lookup();
        expect(failed.status).toBe(500);
        expect(failed.body.error).toMatchObject({ type: 'api_error', code: 'internal_error' });
      }
    }
    expect(await chargeCount()).toBe(1);
    sim.setFaults({ errorRate: 0, hangRate: 1 });
    for (const lookup of lookups) {
      await expect(lookup(AbortSignal.timeout(300))).rejects.toThrow();
    }
    sim.setFaults({ hangRate: 0, latencyMs: 300 });
    for (const lookup of lookups) {
      const started = Date.now();
      expect((await lookup()).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    }
    sim.setFaults({ latencyMs: 0, slowRate: 1, slowMs: 300 });
    for (const lookup of lookups) {
      const started = Date.now();
      expect((await lookup()).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      await expect(lookup(AbortSignal.timeout(100))).rejects.toThrow();
    }
    sim.setFaults({ slowRate: 0, errorRate: 1, operations: ['authorize', 'capture'] });
    for (const lookup of lookups) expect((await lookup()).status).toBe(200);
  });
});

describe('faults aimed at operations', () => {
  it('a slow capture leaves authorizations and lookups fast, and still captures', async () => {
    const auth = (await authorize()).body;
    sim.setFaults({ slowRate: 1, slowMs: 5000, operations: ['capture'] });
    const started = Date.now();
    expect((await authorize()).status).toBe(201);
    expect((await call('GET', `/v1/authorizations/${auth.id}`)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(
      post(`/v1/authorizations/${auth.id}/capture`, {}, undefined, AbortSignal.timeout(300)),
    ).rejects.toThrow();
    const retrieved = await call('GET', `/v1/authorizations/${auth.id}`);
    expect(retrieved.body).toMatchObject({ status: 'captured', capturedAmount: 1000 });
  });

  it('errors, hangs and latency aimed at one operation leave the others alone', async () => {
    const token = await tokenize();
    const body = { token, amount: 100, currency: 'EUR' };
    sim.setFaults({ errorRate: 1, operations: ['authorize'] });
    expect((await post('/v1/authorizations', body)).status).toBe(500);
    expect((await post('/v1/tokens', card(testCards.success))).status).toBe(201);

    sim.setFaults({ errorRate: 0, hangRate: 1, operations: ['tokenize'] });
    await expect(
      post('/v1/tokens', card(testCards.success), undefined, AbortSignal.timeout(300)),
    ).rejects.toThrow();
    const auth = await post('/v1/authorizations', body);
    expect(auth.status).toBe(201);

    sim.setFaults({ hangRate: 0, latencyMs: 400, operations: ['refund'] });
    let started = Date.now();
    expect((await post(`/v1/authorizations/${auth.body.id}/capture`, {})).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(300);
    started = Date.now();
    expect((await post('/v1/refunds', { authorization: auth.body.id, amount: 100 })).status).toBe(
      201,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
  });
});

describe('requests refused before executing', () => {
  it('401 without the API key', async () => {
    for (const auth of [null, 'Bearer sk_wrong']) {
      const answer = await call('POST', '/v1/tokens', { body: card(testCards.success), auth });
      expect(answer.status).toBe(401);
      expect(answer.body.error).toMatchObject({
        type: 'authentication_error',
        code: 'invalid_api_key',
      });
    }
    expect((await call('GET', '/v1/charges', { auth: null })).status).toBe(401);
    // Open to anyone, and it says it is a test processor.
    expect((await call('GET', '/health', { auth: null })).body).toEqual({
      status: 'ok',
      livemode: false,
    });
  });

  it('400 without a valid Idempotency-Key', async () => {
    for (const key of [null, 'x'.repeat(256)]) {
      const answer = await call('POST', '/v1/tokens', { body: card(testCards.success), key });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({
        type: 'invalid_request_error',
        code: 'idempotency_key_required',
      });
    }
  });

  it('413 for a body over 64 KiB and 400 for malformed JSON', async () => {
    const big = await post('/v1/tokens', { ...card(testCards.success), name: 'x'.repeat(70_000) });
    expect(big.status).toBe(413);
    expect(big.body.error.type).toBe('invalid_request_error');
    const malformed = await call('POST', '/v1/tokens', { raw: '{"number": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect((await call('GET', '/health')).status).toBe(200);
  });
});

describe('fault control', () => {
  it('validates and merges fault changes over HTTP', async () => {
    const put = (body: unknown) =>
      fetch(`${base}/_control/faults`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const invalid = await put({ errorRate: 2 });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error: { code: 'parameter_invalid' } });
    const merged = await put({ latencyMs: 5, slowMs: 10 });
    expect(await merged.json()).toEqual({
      latencyMs: 5,
      errorRate: 0,
      hangRate: 0,
      slowRate: 0,
      slowMs: 10,
      operations: [],
    });
    expect(await (await fetch(`${base}/_control/faults`)).json()).toMatchObject({ latencyMs: 5 });
    expect(() => sim.setFaults({ hangRate: -1 })).toThrow();
    expect((await fetch(`${base}/_control/reset`, { method: 'POST' })).status).toBe(204);
    expect(sim.faults().latencyMs).toBe(0);
  });

  it('validates the operations a fault targets, and reset targets every operation again', async () => {
    const put = (body: unknown) =>
      fetch(`${base}/_control/faults`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const operations of [['charge'], 'capture', Array(7).fill('capture')]) {
      const invalid = await put({ operations });
      expect(invalid.status).toBe(400);
      expect(await invalid.json()).toMatchObject({ error: { code: 'parameter_invalid' } });
    }
    const targeted = await put({ errorRate: 1, operations: ['capture', 'retrieve'] });
    expect(await targeted.json()).toMatchObject({
      errorRate: 1,
      operations: ['capture', 'retrieve'],
    });
    // A change without `operations` keeps the targets it had.
    expect(sim.setFaults({ latencyMs: 1 }).operations).toEqual(['capture', 'retrieve']);
    expect((await fetch(`${base}/_control/reset`, { method: 'POST' })).status).toBe(204);
    expect(sim.faults()).toMatchObject({ errorRate: 0, operations: [] });
    sim.setFaults({ errorRate: 1, operations: ['refund'] });
    sim.reset();
    expect(sim.faults().operations).toEqual([]);
    expect((await authorize()).status).toBe(201);
  });

  it('close() resolves while a request hangs', async () => {
    const other = createProcessorSimulator({ faults: { hangRate: 1 } });
    const url = await other.listen();
    const hanging = fetch(`${url}/v1/tokens`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${API_KEY}`,
        'idempotency-key': 'k',
        'content-type': 'application/json',
      },
      body: JSON.stringify(card(testCards.success)),
    });
    const outcome = hanging.then(
      () => 'answered',
      () => 'failed',
    );
    await sleep(100);
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await outcome).toBe('failed');
  });
});
