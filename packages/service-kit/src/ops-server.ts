import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from './logger.js';

export type ReadinessChecks = () => Promise<Record<string, boolean>>;

/**
 * The small HTTP port every service exposes for Kubernetes probes and Prometheus:
 * `/health/live`, `/health/ready` (200 only when every check passes) and `/metrics`.
 */
export async function startOpsServer(options: {
  port: number;
  host: string;
  registry: Registry;
  readiness: ReadinessChecks;
  logger: Logger;
}): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const send = (status: number, body: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return send(405, '{"status":"method not allowed"}');
    switch (path) {
      case '/health/live':
        return send(200, '{"status":"ok"}');
      case '/health/ready':
        options
          .readiness()
          .then((checks) => {
            const ready = Object.values(checks).every(Boolean);
            send(
              ready ? 200 : 503,
              JSON.stringify({ status: ready ? 'ok' : 'unavailable', checks }),
            );
          })
          .catch((error: unknown) => {
            options.logger.error({ err: error }, 'readiness check failed');
            send(503, '{"status":"unavailable"}');
          });
        return;
      case '/metrics':
        options.registry
          .metrics()
          .then((text) => send(200, text, options.registry.contentType))
          .catch(() => send(500, ''));
        return;
      default:
        return send(404, '{"status":"not found"}');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
