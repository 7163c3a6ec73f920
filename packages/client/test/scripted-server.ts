import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the server got, in arrival order. */
export interface ScriptedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * An answer: a status with headers and a JSON body, `drop` (the connection is cut) or
 * `hang` (no answer until the server closes).
 */
export type ScriptedAnswer =
  { status: number; headers?: Record<string, string>; body?: unknown } | 'drop' | 'hang';

export interface ScriptedServer {
  readonly baseUrl: string;
  readonly requests: ScriptedRequest[];
  close(): Promise<void>;
}

/**
 * A platform stand-in on loopback answering request by request as the test scripts it: a
 * list (the last answer repeats) or a function of the request and its index.
 */
export async function startScriptedServer(
  script: ScriptedAnswer[] | ((request: ScriptedRequest, index: number) => ScriptedAnswer),
): Promise<ScriptedServer> {
  const requests: ScriptedRequest[] = [];
  const answerTo = (request: ScriptedRequest, index: number): ScriptedAnswer =>
    typeof script === 'function'
      ? script(request, index)
      : script[Math.min(index, script.length - 1)]!;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received: ScriptedRequest = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      requests.push(received);
      const answer = answerTo(received, requests.length - 1);
      if (answer === 'hang') return;
      if (answer === 'drop') {
        request.socket.destroy();
        return;
      }
      const body = answer.body === undefined ? '' : JSON.stringify(answer.body);
      response
        .writeHead(answer.status, {
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...answer.headers,
        })
        .end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A ProblemDetail as the platform sends it, for scripting answers. */
export function problem(status: number, errorCode: string, retryable = false) {
  return {
    type: `https://docs.example.com/errors/${errorCode}`,
    title: errorCode,
    status,
    detail: `${errorCode} happened`,
    instance: '/v1/marketfront/orders/place',
    requestId: 'req-1',
    timestamp: new Date().toISOString(),
    errorCode,
    errorCategory: 'order',
    retryable,
  };
}
