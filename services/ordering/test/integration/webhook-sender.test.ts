import { parseAllowlist } from '@pcp/service-kit';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSender } from '../../src/webhooks/webhook-sender.js';

const SECRET = `whsec_${Buffer.from('the current signing key, 32 bytes').toString('base64')}`;
const PREVIOUS = `whsec_${Buffer.from('the previous signing key, 32 byte').toString('base64')}`;

let receiver: http.Server;
let url: string;
let connections = 0;
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];

const senderWith = (allowlist = '127.0.0.1/32') =>
  createWebhookSender({
    allowHttp: true,
    allowlist: parseAllowlist(allowlist),
    timeoutMs: 5_000,
    connectTimeoutMs: 2_000,
    concurrency: 4,
  });

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  receiver.on('connection', () => connections++);
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
});

describe('the webhook sender', () => {
  it('signs as the standardwebhooks reference does, with every secret of a rotation', async () => {
    const send = senderWith();
    received.length = 0;
    try {
      const payload = JSON.stringify({ type: 'order.accepted', data: { note: 'é ✓' } });
      const outcome = await send({
        eventId: 'evt-1',
        payload,
        apiVersion: '2026-11-01',
        url,
        secrets: [SECRET, PREVIOUS],
      });
      expect(outcome).toEqual({ kind: 'delivered', status: 204 });
      const [{ headers, body } = { headers: {}, body: '' }] = received;
      expect(body).toBe(payload);
      // The endpoint's version, lowercase like the Standard Webhooks headers.
      expect(headers['pcp-version']).toBe('2026-11-01');
      const signed = {
        'webhook-id': String(headers['webhook-id']),
        'webhook-timestamp': String(headers['webhook-timestamp']),
        'webhook-signature': String(headers['webhook-signature']),
      };
      expect(signed['webhook-signature'].split(' ')).toHaveLength(2);
      // Either secret verifies on its own (verify throws otherwise).
      expect(new Webhook(SECRET).verify(body, signed)).toEqual(JSON.parse(payload));
      expect(new Webhook(PREVIOUS).verify(body, signed)).toEqual(JSON.parse(payload));
      const changed = `${body} `;
      expect(() => new Webhook(SECRET).verify(changed, signed)).toThrow();
    } finally {
      send.close();
    }
  });

  it('sends two deliveries to one endpoint over one connection', async () => {
    const send = senderWith();
    connections = 0;
    try {
      for (const eventId of ['evt-2', 'evt-3']) {
        const outcome = await send({
          eventId,
          payload: '{}',
          apiVersion: '2026-12-01',
          url,
          secrets: [SECRET],
        });
        expect(outcome).toEqual({ kind: 'delivered', status: 204 });
      }
      expect(connections).toBe(1);
    } finally {
      send.close();
    }
  });

  it('refuses a private address', async () => {
    const send = senderWith('');
    connections = 0;
    try {
      const outcome = await send({
        eventId: 'evt-4',
        payload: '{}',
        apiVersion: '2026-12-01',
        url: url.replace('127.0.0.1', 'localhost'),
        secrets: [SECRET],
      });
      expect(outcome).toMatchObject({ kind: 'failed', status: null });
      expect(connections).toBe(0);
    } finally {
      send.close();
    }
  });
});
