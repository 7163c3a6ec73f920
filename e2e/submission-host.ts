/** A store's order-submission endpoint whose answers a test sets. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SubmissionAnswer {
  status: number;
  body?: unknown;
  /** Answer this long after the request arrived (past place's timeout: an answer it loses). */
  delayMs?: number;
}

export interface SubmissionHost {
  url: string;
  /** The answers of the next requests, in order; `answer` once they are used up. */
  next: SubmissionAnswer[];
  answer: SubmissionAnswer;
  received: { headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

export async function startSubmissionHost(): Promise<SubmissionHost> {
  const host: Omit<SubmissionHost, 'url' | 'close'> = {
    next: [],
    answer: { status: 200 },
    received: [],
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      host.received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() });
      const answer = host.next.shift() ?? host.answer;
      const respond = () => {
        if (response.destroyed) return;
        response.writeHead(answer.status, { 'content-type': 'application/json' });
        response.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      };
      if (answer.delayMs) setTimeout(respond, answer.delayMs);
      else respond();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(host, {
    url: `http://127.0.0.1:${port}/orders`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
