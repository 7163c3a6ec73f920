import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Events, type NatsConnection } from 'nats';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from './logger.js';

export type ReadinessChecks = () => Promise<Record<string, boolean>>;

const READINESS_METRIC = 'pcp_readiness_check';

/**
 * The `nats` readiness check: false while the connection is lost and nats.js reconnects
 * (`isClosed()` stays false then, so it alone would keep an isolated pod ready), and once it
 * drains or closes.
 */
export function natsReadiness(nc: NatsConnection): () => boolean {
  let connected = true;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect) connected = false;
      else if (status.type === Events.Reconnect) connected = true;
    }
  })();
  return () => connected && !nc.isClosed() && !nc.isDraining();
}

/**
 * The small HTTP port every service exposes for Kubernetes probes and Prometheus:
 * `/health/live`, `/health/ready` (200 only when every check passes) and `/metrics`, which
 * also reports each readiness check (`pcp_readiness_check`), so alerts see a process that
 * runs but cannot serve.
 */
export async function startOpsServer(options: {
  port: number;
  host: string;
  registry: Registry;
  readiness: ReadinessChecks;
  logger: Logger;
}): Promise<{ port: number; close(): Promise<void> }> {
  new Gauge({
    name: READINESS_METRIC,
    help: 'Each readiness check of the process, read on scrape: 1 passes, 0 fails',
    labelNames: ['check'],
    registers: [options.registry],
    async collect() {
      this.reset();
      const checks = await options.readiness().catch((error: unknown) => {
        options.logger.error({ err: error }, 'readiness check failed');
        return { readiness: false };
      });
      for (const [check, passes] of Object.entries(checks)) this.set({ check }, passes ? 1 : 0);
    },
  });
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
  }).catch((error: unknown) => {
    options.registry.removeSingleMetric(READINESS_METRIC);
    throw error;
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        options.registry.removeSingleMetric(READINESS_METRIC);
        server.close(() => resolve());
        // It closes last, as the process exits: a probe or scrape still open only learns it a
        // moment sooner, and a keep-alive one must not hold the exit up.
        server.closeAllConnections();
      }),
  };
}
