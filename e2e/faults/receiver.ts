import { createWebhookVerifier, type WebhookVerifier } from '@pcp/client';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One verified webhook, the first time its webhook-id arrived. */
export interface Arrival {
  readonly webhookId: string;
  readonly version: number;
  readonly type: string;
}

/**
 * A distribution partner's webhook endpoint: verifies each delivery (Standard Webhooks) and
 * records, per order, the distinct webhook-ids in the order they first arrived. It can go
 * down (connections refused) and come back on the same port.
 */
export class FaultReceiver {
  /** Per order, arrivals in order (redeliveries of a webhook-id already seen are not added). */
  readonly arrivals = new Map<string, Arrival[]>();
  /** Deliveries whose signature did not verify. */
  rejected = 0;
  #verifier: WebhookVerifier | undefined;
  #seen = new Set<string>();
  #server: Server;
  #port = 0;

  private constructor() {
    this.#server = this.#newServer();
  }

  static async start(): Promise<FaultReceiver> {
    const receiver = new FaultReceiver();
    await receiver.up();
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/hooks`;
  }

  set secret(secret: string) {
    this.#verifier = createWebhookVerifier(secret);
  }

  /** Listen (again, on the same port once it had one). */
  async up(): Promise<void> {
    if (this.#server.listening) return;
    this.#server = this.#newServer();
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  /** Stop listening and cut open connections: deliveries fail until `up()`. */
  async down(): Promise<void> {
    if (!this.#server.listening) return;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  #newServer(): Server {
    return createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        try {
          if (!this.#verifier) throw new Error('no secret yet');
          const event = this.#verifier.verify(Buffer.concat(chunks), request.headers);
          // The fault suite's endpoints take order events only.
          if (!('orderId' in event.data)) throw new Error(`not an order event: ${event.type}`);
          const webhookId = String(request.headers['webhook-id']);
          if (!this.#seen.has(webhookId)) {
            this.#seen.add(webhookId);
            const list = this.arrivals.get(event.data.orderId) ?? [];
            list.push({ webhookId, version: event.data.version, type: event.type });
            this.arrivals.set(event.data.orderId, list);
          }
          response.writeHead(204).end();
        } catch {
          this.rejected += 1;
          response.writeHead(400).end();
        }
      });
    });
  }
}
