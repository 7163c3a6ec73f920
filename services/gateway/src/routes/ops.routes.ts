import { serviceNames, healthSubject } from '@pcp/contracts';
import type { BusClient, ServiceMetrics } from '@pcp/service-kit';
import type { FastifyInstance } from 'fastify';
import type { NatsConnection } from 'nats';
import { errorDocument } from '../http/problem.js';

const SERVICE_PING_TIMEOUT_MS = 1_000;

/**
 * `/health/live` (the process answers), `/health/ready` (NATS, Redis, the gateway's
 * database and every service answering its health subject) and `/metrics`.
 */
export function registerOpsRoutes(
  app: FastifyInstance,
  deps: {
    nc: NatsConnection;
    bus: BusClient;
    metrics: ServiceMetrics;
    pingRedis: () => Promise<boolean>;
    pingDatabase: () => Promise<boolean>;
  },
): void {
  const hidden = { schema: { hide: true } };
  app.get('/health/live', hidden, () => ({ status: 'ok' }));

  app.get('/health/ready', hidden, async (request, reply) => {
    const services = await Promise.all(
      serviceNames.map(async (service) => {
        try {
          await deps.bus.request(
            healthSubject(service),
            {},
            { requestId: request.id },
            {
              timeoutMs: SERVICE_PING_TIMEOUT_MS,
            },
          );
          return [service, true] as const;
        } catch {
          return [service, false] as const;
        }
      }),
    );
    const checks: Record<string, boolean> = {
      nats: !deps.nc.isClosed() && !deps.nc.isDraining(),
      redis: await deps.pingRedis(),
      database: await deps.pingDatabase(),
      ...Object.fromEntries(services),
    };
    const ready = Object.values(checks).every(Boolean);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks });
  });

  app.get('/metrics', hidden, async (_request, reply) =>
    reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics()),
  );

  app.get<{ Params: { errorCode: string } }>(
    '/docs/errors/:errorCode',
    hidden,
    (request, reply) => {
      const document = errorDocument(request.params.errorCode);
      return document ? document : reply.callNotFound();
    },
  );
}
