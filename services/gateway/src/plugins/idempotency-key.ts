import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route takes an Idempotency-Key (place, docs/guide/orders.md#idempotency), demanded by
     * this plugin: the document shows the header as required, the idempotency codes and
     * Idempotent-Replayed.
     */
    idempotencyKey?: 'required';
  }
  interface FastifyRequest {
    /** The request's Idempotency-Key, on a route that takes one. */
    idempotencyKey: string | undefined;
  }
}

/** RFC 9110 token characters a header value may carry; a UUID v4 is the advised key. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Idempotency-Key on the routes whose config requires it. Checked just before the handler
 * (after the body is read), where the handler checked it before.
 */
const idempotencyKey: FastifyPluginAsync = async (app) => {
  app.decorateRequest('idempotencyKey', undefined);
  app.addHook('preHandler', async (request) => {
    if (request.routeOptions.config.idempotencyKey !== 'required') return;
    const key = request.headers['idempotency-key'];
    if (key === undefined) {
      throw new AppError(
        'MISSING_IDEMPOTENCY_KEY',
        'Send an Idempotency-Key header: a fresh UUID for each order attempt',
      );
    }
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
      throw new AppError(
        'REQUEST_INVALID',
        'Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is advised)',
      );
    }
    request.idempotencyKey = key;
  });
};

export default fp(idempotencyKey, { name: 'idempotency-key' });
