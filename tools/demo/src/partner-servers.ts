// The partners' own servers on this machine: the commerce partner's catalog host and the
// distribution partner's webhook receiver.
import type { OrderWebhookEvent, WebhookEvent, WebhookVerifier } from '@pcp/client';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { check } from './output.js';

const WEBHOOK_WAIT_MS = 15_000;

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    );
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** Serves one JSON document at `/catalog.json`. */
export async function startCatalogHost(document: unknown) {
  const body = JSON.stringify(document);
  const server = createServer((request, response) => {
    if (request.url !== '/catalog.json') return response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  const base = await listen(server);
  return { server, url: `${base}/catalog.json` };
}

export interface WebhookReceiver {
  server: Server;
  url: string;
  /** Set once the endpoint's secret is known; until then every delivery is refused. */
  verifier: WebhookVerifier | undefined;
  events: { id: string; event: OrderWebhookEvent }[];
  rejected: string[];
}

/**
 * Receives webhooks at `/webhooks`, verifying each with the client's verifier: 204 and
 * recorded when it verifies (once per webhook-id: delivery is at least once), 400 and
 * recorded as a failure when it does not.
 */
function isOrderEvent(event: WebhookEvent): event is OrderWebhookEvent {
  return (
    event.type === 'order.created' ||
    event.type === 'order.status_changed' ||
    event.type === 'order.cancelled'
  );
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const seen = new Set<string>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // A delivery is a few hundred bytes; anything this large is not one.
      if (size > 1_000_000) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        if (request.url !== '/webhooks' || !receiver.verifier) throw new Error('not expected');
        const event = receiver.verifier.verify(raw, request.headers);
        // The demo's endpoint subscribes to order events only.
        if (!isOrderEvent(event)) throw new Error(`not an order event: ${event.type}`);
        const id = String(request.headers['webhook-id']);
        if (!seen.has(id)) {
          seen.add(id);
          receiver.events.push({ id, event });
        }
        response.writeHead(204).end();
      } catch (error) {
        receiver.rejected.push(`${request.url}: ${(error as Error).message}`);
        response.writeHead(400).end();
      }
    });
  });
  const receiver: WebhookReceiver = {
    server,
    url: '',
    verifier: undefined,
    events: [],
    rejected: [],
  };
  receiver.url = `${await listen(server)}/webhooks`;
  return receiver;
}

/** The next webhook after the `index` first ones, once it arrived (a failure after a while). */
export async function nextWebhook(receiver: WebhookReceiver, index: number, expected: string) {
  const deadline = Date.now() + WEBHOOK_WAIT_MS;
  while (receiver.events.length <= index) {
    check(receiver.rejected.length === 0, 'every webhook verified', receiver.rejected[0]);
    check(
      Date.now() < deadline,
      `a webhook for ${expected} within ${WEBHOOK_WAIT_MS / 1000} s`,
      `none (${receiver.events.length} webhooks so far)`,
    );
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return receiver.events[index]!;
}
