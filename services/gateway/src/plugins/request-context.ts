import type { RequestContext } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** What travels with the request to the services: ids, partner, end user, trace. */
    readonly ctx: RequestContext;
  }
}

function contextOf(request: FastifyRequest): RequestContext {
  return {
    requestId: request.id,
    ...(request.principal
      ? {
          partnerId: request.principal.partnerId,
          partnerKind: request.principal.kind,
          mode: request.principal.mode,
          paymentTypes: request.principal.paymentTypes,
        }
      : {}),
    ...(request.endUserId ? { endUserId: request.endUserId } : {}),
    ...(request.idempotencyKey ? { idempotencyKey: request.idempotencyKey } : {}),
    apiVersion: request.apiVersion,
    ...(typeof request.headers.traceparent === 'string'
      ? { traceparent: request.headers.traceparent }
      : {}),
    ...(typeof request.headers.tracestate === 'string'
      ? { tracestate: request.headers.tracestate }
      : {}),
  };
}

/** `request.ctx`: the request context the routes send with each service request. */
const requestContext: FastifyPluginAsync = async (app) => {
  app.decorateRequest('ctx', {
    getter(this: FastifyRequest) {
      return contextOf(this);
    },
  });
};

export default fp(requestContext, {
  name: 'request-context',
  dependencies: ['auth', 'end-user', 'idempotency-key'],
});
