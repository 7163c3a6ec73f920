import { parseAllowlist } from '@pcp/service-kit';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createStoreSubmitter,
  type StoreSubmitterOptions,
} from '../../src/place/store-submitter.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const order = {
  orderId: randomUUID(),
  body: { orderId: 'o-1', amounts: { total: 12.5 }, note: 'Café ☕' },
};

/** What the store answers on a path; `undefined` never answers. */
type StoreAnswer = (res: http.ServerResponse) => void;
const json = (status: number, body: unknown): StoreAnswer => {
  return (res) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};

const received: { path: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
let answers: Record<string, StoreAnswer | undefined> = {};
let server: http.Server;
let base: string;

function submitter(overrides: Partial<StoreSubmitterOptions> = {}) {
  return createStoreSubmitter({
    allowHttp: true,
    allowlist: parseAllowlist('127.0.0.1/32'),
    timeoutMs: 2_000,
    connectTimeoutMs: 1_000,
    ...overrides,
  });
}

function submit(path: string, overrides: Partial<StoreSubmitterOptions> = {}) {
  return submitter(overrides).submit({ url: `${base}${path}`, secrets: [secret] }, order);
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString() });
      answers[path]?.(res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  received.length = 0;
  answers = {};
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('store submitter', () => {
  it('POSTs the order as JSON, signed so the store can verify it', async () => {
    answers['/orders'] = json(200, {});
    const before = Math.floor(Date.now() / 1000);
    expect(await submit('/orders')).toEqual({ outcome: 'accepted' });

    const request = received[0]!;
    expect(request.body).toBe(JSON.stringify(order.body));
    expect(request.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'pcp-order-submission/1',
      'webhook-id': order.orderId,
    });
    const timestamp = Number(request.headers['webhook-timestamp']);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    const headers = Object.fromEntries(
      ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
        name,
        String(request.headers[name]),
      ]),
    );
    expect(new Webhook(secret).verify(request.body, headers)).toEqual(order.body);
    const otherSecret = `whsec_${randomBytes(24).toString('base64')}`;
    expect(() => new Webhook(otherSecret).verify(request.body, headers)).toThrow();
  });

  it('sends a retried submission of one order with the same webhook-id', async () => {
    answers['/orders'] = json(202, {});
    await submit('/orders');
    await submit('/orders');
    expect(received.map((request) => request.headers['webhook-id'])).toEqual([
      order.orderId,
      order.orderId,
    ]);
  });

  // 409: the store already has this order (the answer to a resubmission after a lost answer).
  it.each([200, 201, 202, 204, 409])('takes HTTP %i as accepted', async (status) => {
    answers['/orders'] = (res) => res.writeHead(status).end();
    expect(await submit('/orders')).toEqual({ outcome: 'accepted' });
  });

  it("maps the store's errors, sanitizing codes and pointers and bounding the list", async () => {
    const long = 'é'.repeat(600);
    const listed = [
      { code: 'ITEM_UNAVAILABLE', message: 'Out of fries', pointer: '/cart/items/0' },
      { code: 'lower_case', message: 'bad code', pointer: 'cart/items/0' },
      { code: `A${'B'.repeat(64)}`, message: long, pointer: `/${'x'.repeat(500)}` },
      { code: 42, message: { text: 'not a string' }, pointer: 7 },
      'not an object',
      null,
      ['nor an array'],
      ...Array.from({ length: 25 }, (_, index) => ({
        code: 'TOO_MANY',
        message: `${index}`,
        pointer: null,
      })),
    ];
    answers['/orders'] = json(422, { errors: listed });

    const submission = await submit('/orders');
    expect(submission).toMatchObject({ outcome: 'rejected', status: 422 });
    const errors = submission.outcome === 'rejected' ? submission.errors : [];
    expect(errors).toHaveLength(20);
    expect(errors.slice(0, 4)).toEqual([
      { code: 'ITEM_UNAVAILABLE', message: 'Out of fries', pointer: '/cart/items/0' },
      { code: 'STORE_REJECTED', message: 'bad code', pointer: null },
      { code: 'STORE_REJECTED', message: long.slice(0, 500), pointer: null },
      { code: 'STORE_REJECTED', message: 'The store did not accept the order', pointer: null },
    ]);
    expect(errors[4]).toEqual({ code: 'TOO_MANY', message: '0', pointer: null });
  });

  it('never cuts a message inside a surrogate pair', async () => {
    answers['/orders'] = json(422, {
      errors: [{ code: 'CLOSED', message: `a${'😀'.repeat(300)}` }],
    });
    const submission = await submit('/orders');
    const message = submission.outcome === 'rejected' ? submission.errors[0]!.message : '';
    expect(message).toBe(`a${'😀'.repeat(249)}`);
  });

  it.each([
    ['no body', (res: http.ServerResponse) => res.writeHead(400).end()],
    ['a body that is not JSON', (res: http.ServerResponse) => res.writeHead(400).end('nope')],
    ['an empty errors array', json(400, { errors: [] })],
    ['errors that are not objects', json(400, { errors: ['closed', 3] })],
  ])('answers a rejection with %s with one generic error', async (_, answer) => {
    answers['/orders'] = answer;
    expect(await submit('/orders')).toEqual({
      outcome: 'rejected',
      status: 400,
      errors: [
        { code: 'STORE_REJECTED', message: 'The store did not accept the order', pointer: null },
      ],
    });
  });

  it("takes a rejection's message from its detail, else its message", async () => {
    answers['/detail'] = json(410, { detail: 'The kitchen is closed', message: 'closed' });
    answers['/message'] = json(403, { message: 'x'.repeat(501) });
    expect(await submit('/detail')).toEqual({
      outcome: 'rejected',
      status: 410,
      errors: [{ code: 'STORE_REJECTED', message: 'The kitchen is closed', pointer: null }],
    });
    const fromMessage = await submit('/message');
    expect(fromMessage).toMatchObject({ outcome: 'rejected', status: 403 });
    expect(fromMessage.outcome === 'rejected' && fromMessage.errors[0]!.message).toBe(
      'x'.repeat(500),
    );
  });

  it('takes a redirect as a rejection without following it', async () => {
    answers['/orders'] = (res) => res.writeHead(302, { location: `${base}/elsewhere` }).end();
    expect(await submit('/orders')).toMatchObject({ outcome: 'rejected', status: 302 });
    expect(received.map((request) => request.path)).toEqual(['/orders']);
  });

  it.each([400, 401, 403, 404, 405, 410, 413, 422])(
    'takes HTTP %i as a rejection',
    async (status) => {
      answers['/orders'] = json(status, {});
      expect(await submit('/orders')).toMatchObject({ outcome: 'rejected', status });
    },
  );

  // Said nothing of the order (timed out, too early, too busy, failed): resubmit to learn it.
  it.each([408, 425, 429, 500, 502, 503])('takes HTTP %i as unavailable', async (status) => {
    answers['/orders'] = json(status, { errors: [{ code: 'DOWN', message: 'down' }] });
    expect(await submit('/orders')).toEqual({
      outcome: 'unavailable',
      reason: `the store answered HTTP ${status}`,
    });
  });

  it('gives up on a store that never answers within the timeout', async () => {
    const started = Date.now();
    const submission = await submit('/silent', { timeoutMs: 300 });
    expect(submission).toMatchObject({
      outcome: 'unavailable',
      reason: expect.stringMatching(/^timeout/),
    });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(received).toHaveLength(1);
  });

  it('does not reach a private address that is not allow-listed', async () => {
    const refused = await submit('/orders', { allowlist: parseAllowlist('') });
    expect(refused).toMatchObject({
      outcome: 'unavailable',
      reason: expect.stringMatching(/^address_not_allowed/),
    });
    const literal = await submitter().submit(
      { url: 'http://10.0.0.1/orders', secrets: [secret] },
      order,
    );
    expect(literal).toMatchObject({ outcome: 'unavailable' });
    expect(received).toHaveLength(0);
  });

  it('takes an unreachable or invalid URL as unavailable', async () => {
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const store = submitter();
    for (const url of [
      `http://127.0.0.1:${port}/orders`,
      'not a url',
      `https://${base.slice(7)}/`,
    ]) {
      expect(await store.submit({ url, secrets: [secret] }, order)).toMatchObject({
        outcome: 'unavailable',
      });
    }
    expect(
      await submitter({ allowHttp: false }).submit(
        { url: `${base}/orders`, secrets: [secret] },
        order,
      ),
    ).toMatchObject({
      outcome: 'unavailable',
      reason: expect.stringMatching(/^scheme_not_allowed/),
    });
  });

  it('stops reading a huge rejection body at the cap and answers generically', async () => {
    let written = 0;
    let streamClosed: Promise<void> = Promise.resolve();
    answers['/huge'] = (res) => {
      streamClosed = new Promise((resolve) => res.on('close', () => resolve()));
      res.writeHead(422, { 'content-type': 'application/json' });
      // An endless JSON array, written as fast as the client reads it.
      res.write('{"errors":[');
      const chunk = Buffer.from('{"code":"X","message":"y","pointer":null},'.repeat(400));
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
      };
      res.on('drain', pump);
      pump();
    };
    answers['/declared'] = (res) => {
      res.writeHead(422, { 'content-length': 100 * 1024 * 1024 }).write('{"errors":[');
    };

    for (const path of ['/huge', '/declared']) {
      expect(await submit(path)).toEqual({
        outcome: 'rejected',
        status: 422,
        errors: [
          { code: 'STORE_REJECTED', message: 'The store did not accept the order', pointer: null },
        ],
      });
    }
    await expect(streamClosed).resolves.toBeUndefined();
    // The client hung up early: the store wrote no more than socket buffers hold.
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });
});
