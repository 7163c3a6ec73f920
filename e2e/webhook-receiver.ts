import { events, type OrderStatus } from '@pcp/contracts';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestEnvironment } from '@pcp/testing/environment';

/** One request a receiver got, in arrival order. */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed payload: `{type, timestamp, data}`. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  payload: any;
  at: number;
}

/** How the receiver answers a request: a status (with headers), or never (`hang`). */
export type ReceiverAnswer = { status: number; headers?: Record<string, string> } | 'hang';

/**
 * A partner's webhook endpoint on loopback whose answers the test decides, request by
 * request; it records everything it got.
 */
export interface WebhookReceiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  answer: (request: ReceivedWebhook, index: number) => ReceiverAnswer;
  /** Resolves once `count` requests matching `where` arrived (or rejects after `timeoutMs`). */
  waitFor(
    count: number,
    where?: (request: ReceivedWebhook) => boolean,
    timeoutMs?: number,
  ): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const hanging = new Set<() => void>();
  let answer: WebhookReceiver['answer'] = () => ({ status: 204 });
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        payload = undefined;
      }
      const entry: ReceivedWebhook = { headers: request.headers, body, payload, at: Date.now() };
      received.push(entry);
      const decided = answer(entry, received.length - 1);
      if (decided === 'hang') {
        const end = () => response.destroy();
        hanging.add(end);
        response.on('close', () => hanging.delete(end));
        return;
      }
      response.writeHead(decided.status, decided.headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    get answer() {
      return answer;
    },
    set answer(decide) {
      answer = decide;
    },
    async waitFor(count, where = () => true, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = received.filter(where);
        if (matching.length >= count) return matching;
        if (Date.now() > deadline) {
          throw new Error(`waited for ${count} webhooks, got ${matching.length}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const end of hanging) end();
        server.close(() => resolve());
      }),
  };
  return receiver;
}

/** The statuses of an order's versions 1, 2, 3, 4; later versions keep to the last. */
const STATUSES: OrderStatus[] = ['pending', 'confirmed', 'preparing', 'ready'];
const statusOf = (version: number) => STATUSES[Math.min(version, STATUSES.length) - 1]!;

/** The envelope ordering's outbox publishes for one version of an order's status change. */
export function orderEventEnvelope(event: {
  partnerId: string;
  orderId: string;
  storeId: string;
  version: number;
}) {
  const { version } = event;
  return {
    id: randomUUID(),
    type: 'ordering.v1.order-status-changed',
    occurredAt: new Date().toISOString(),
    version,
    data: {
      event: version === 1 ? 'order.created' : 'order.status_changed',
      orderId: event.orderId,
      storeId: event.storeId,
      partnerId: event.partnerId,
      state: 'open',
      status: statusOf(version),
      previousStatus: version === 1 ? null : statusOf(version - 1),
    },
  };
}

/**
 * Publish one version of an order's order-status-changed event on the test's events stream,
 * as ordering's outbox does; resolves the event's id (its webhook-id).
 */
export async function publishOrderEvent(
  env: TestEnvironment,
  event: { partnerId: string; orderId: string; storeId: string; version: number },
): Promise<string> {
  const envelope = orderEventEnvelope(event);
  await env.nc
    .jetstream()
    .publish(`${env.prefix}.${events.orderStatusChanged.subject}`, JSON.stringify(envelope), {
      msgID: envelope.id,
    });
  return envelope.id;
}
