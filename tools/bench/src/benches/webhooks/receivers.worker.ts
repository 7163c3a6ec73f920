// The webhook receivers, in a worker thread (receivers.ts): one HTTP server per partner, the
// last one the failing partner's. A healthy one answers 204 and keeps each delivery and every
// `sampleEvery`-th one's signature headers; the failing one reads each request and never
// answers. Each message from the bench thread is answered with one message.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

export interface Delivery {
  server: number;
  id: string;
  receivedAt: number;
  body: string;
  method: string;
}

export interface SignatureSample {
  server: number;
  body: string;
  headers: Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>;
}

export type ReceiversRequest =
  /** Start keeping a phase's deliveries; the healthy event ids it waits for. */
  | { type: 'phase'; expected: string[] }
  /** How many of those arrived. */
  | { type: 'status' }
  /** What was kept. */
  | { type: 'end' }
  | { type: 'close' };

export type ReceiversMessage =
  | { type: 'ready'; ports: number[] }
  | { type: 'phase' }
  | { type: 'status'; arrived: number; failingTries: number }
  | {
      type: 'end';
      records: Delivery[];
      samples: SignatureSample[];
      failingTries: number;
      loopDelay: { p99: number; max: number };
    }
  | { type: 'closed' };

/** Milliseconds on the monotonic clock, the same in every thread of the process. */
export const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

async function serve(port: NonNullable<typeof parentPort>, count: number, sampleEvery: number) {
  const failing = count - 1;
  // Its samples are the intervals of a 10 ms timer: the delay is what exceeds 10 ms.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  const delayMs = (ns: number) => Math.max(0, ns / 1e6 - 10);
  const sockets = new Set<Socket>();
  let records: Delivery[] = [];
  let samples: SignatureSample[] = [];
  let expected = new Set<string>();
  let arrived = 0;
  let failingTries = 0;
  const received = new Array<number>(count).fill(0);
  const post = (message: ReceiversMessage) => port.postMessage(message);

  function onRequest(server: number, request: http.IncomingMessage, response: http.ServerResponse) {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const receivedAt = nowMs();
      if (server === failing) {
        failingTries++;
        return;
      }
      response.writeHead(204).end();
      const id = String(request.headers['webhook-id']);
      const body = Buffer.concat(chunks).toString('utf8');
      records.push({ server, id, receivedAt, body, method: request.method ?? '' });
      if (expected.delete(id)) arrived++;
      if (received[server]!++ % sampleEvery === 0) {
        samples.push({
          server,
          body,
          headers: {
            'webhook-id': id,
            'webhook-timestamp': String(request.headers['webhook-timestamp']),
            'webhook-signature': String(request.headers['webhook-signature']),
          },
        });
      }
    });
  }

  const servers = await Promise.all(
    Array.from(
      { length: count },
      (_, index) =>
        new Promise<http.Server>((resolve, reject) => {
          const server = http.createServer((request, response) =>
            onRequest(index, request, response),
          );
          server.on('connection', (socket) => {
            sockets.add(socket);
            socket.once('close', () => sockets.delete(socket));
          });
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );

  port.on('message', (message: ReceiversRequest) => {
    switch (message.type) {
      case 'phase':
        records = [];
        samples = [];
        expected = new Set(message.expected);
        arrived = 0;
        failingTries = 0;
        received.fill(0);
        loopDelay.reset();
        loopDelay.enable();
        post({ type: 'phase' });
        break;
      case 'status':
        post({ type: 'status', arrived, failingTries });
        break;
      case 'end':
        loopDelay.disable();
        post({
          type: 'end',
          records,
          samples,
          failingTries,
          loopDelay: { p99: delayMs(loopDelay.percentile(99)), max: delayMs(loopDelay.max) },
        });
        records = [];
        samples = [];
        break;
      case 'close':
        for (const server of servers) server.close();
        for (const socket of sockets) socket.destroy();
        post({ type: 'closed' });
        break;
    }
  });
  post({ type: 'ready', ports: servers.map((server) => (server.address() as AddressInfo).port) });
}

if (parentPort) {
  const { count, sampleEvery } = workerData as { count: number; sampleEvery: number };
  await serve(parentPort, count, sampleEvery);
}
