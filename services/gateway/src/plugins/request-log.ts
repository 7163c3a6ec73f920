import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { RequestRecorder } from '../http/request-recorder.js';

/** The longest path and Idempotency-Key the log keeps (a key is at most 255 when valid). */
const MAX_PATH_CHARS = 1_000;
const MAX_IDEMPOTENCY_KEY_CHARS = 255;

/**
 * Record every answered request that had a principal (docs/guide/requests.md) under its
 * tenant: its path without the query string (queries may carry personal data), never a body.
 * Whatever is buffered is written when the gateway closes.
 */
const requestLog: FastifyPluginAsync<{ recorder: RequestRecorder }> = async (app, { recorder }) => {
  app.addHook('onResponse', (request, reply, done) => {
    const { principal } = request;
    if (principal) {
      const idempotencyKey = request.headers['idempotency-key'];
      recorder.record({
        tenant_id: principal.partnerId,
        at: new Date(Date.now() - reply.elapsedTime),
        method: request.method,
        path: (request.url.split('?', 1)[0] ?? '/').slice(0, MAX_PATH_CHARS),
        status: reply.statusCode,
        error_code: reply.errorCode ?? null,
        request_id: request.id,
        client_request_id: request.clientRequestId ?? null,
        idempotency_key:
          typeof idempotencyKey === 'string'
            ? idempotencyKey.slice(0, MAX_IDEMPOTENCY_KEY_CHARS)
            : null,
        latency_ms: Math.round(reply.elapsedTime),
        key_id: principal.keyId,
        api_version: request.apiVersion,
      });
    }
    done();
  });
  app.addHook('onClose', () => recorder.close());
};

export default fp(requestLog, { name: 'request-log', dependencies: ['auth', 'api-version'] });
