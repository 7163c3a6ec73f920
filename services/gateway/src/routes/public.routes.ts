import type { FastifyInstance } from 'fastify';
import { errorDocument } from '../http/problem.js';

/**
 * What the public port serves besides the API: a cheap `/health/live` (the process
 * answers) and the error-code pages. Readiness and metrics are on the ops port.
 */
export function registerPublicRoutes(app: FastifyInstance): void {
  const hidden = { schema: { hide: true } };
  app.get('/health/live', hidden, () => ({ status: 'ok' }));

  app.get<{ Params: { errorCode: string } }>(
    '/docs/errors/:errorCode',
    hidden,
    (request, reply) => {
      const document = errorDocument(request.params.errorCode);
      return document ? document : reply.callNotFound();
    },
  );
}
