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
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.auth !== null) headers.authorization = options.auth ?? `Bearer ${API_KEY}`;
  if (method === 'POST' && options.key !== null)
    headers['idempotency-key'] = options.key ?? newKey();
  const body =
    options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
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
    expect(first.text).not.toContain('987');
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
    expect((await call('GET', '/health', { auth: null })).body).toEqual({ status: 'ok' });
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
    });
    expect(await (await fetch(`${base}/_control/faults`)).json()).toMatchObject({ latencyMs: 5 });
    expect(() => sim.setFaults({ hangRate: -1 })).toThrow();
    expect((await fetch(`${base}/_control/reset`, { method: 'POST' })).status).toBe(204);
    expect(sim.faults().latencyMs).toBe(0);
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
