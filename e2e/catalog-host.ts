import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Route = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * A partner's catalog host on 127.0.0.1: tests put documents (or misbehaving handlers) at
 * paths and hand the URL to the notify endpoint.
 */
export async function startCatalogHost() {
  const routes = new Map<string, Route>();
  const server = createServer((request, response) => {
    const route = routes.get(request.url ?? '');
    if (route) route(request, response);
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    /** Serve `document` as JSON at `path`; returns its URL. */
    serveJson(path: string, document: unknown): string {
      const body = typeof document === 'string' ? document : JSON.stringify(document);
      routes.set(path, (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      });
      return `${base}${path}`;
    },
    /** A custom handler at `path`; returns its URL. */
    route(path: string, handler: Route): string {
      routes.set(path, handler);
      return `${base}${path}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
