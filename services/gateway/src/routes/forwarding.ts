import type { SubjectDefinition } from '@pcp/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';

/**
 * Send a service's result bytes as the response body, unparsed (the service's handler is
 * typed by the same contract the route documents).
 */
export function forwardJson(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(body);
}

/**
 * Register routes whose JSON body goes to a service unchanged (the NATS payload is the
 * body): in their scope an application/json body stays the bytes that arrived, and the
 * service parses it by the same rules as Fastify (`parseJsonBytes`: forbidden keys, empty
 * and invalid JSON answer the same ProblemDetail) and validates it against the contract the
 * route documents, with the same pointers. Parsing and validating here too, then
 * serializing again for NATS, would triple the work on the busiest routes.
 */
export function registerForwardingRoutes(
  app: FastifyInstance,
  register: (scope: FastifyInstance) => void,
): void {
  void app.register((scope, _options, done) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser(
      'application/json',
      { parseAs: 'buffer' },
      (_request, body, parsed) => {
        parsed(null, body);
      },
    );
    scope.setValidatorCompiler(() => (value: unknown) => ({ value }));
    register(scope);
    done();
  });
}

/**
 * The handler of a route registered by `registerForwardingRoutes`: the unparsed body goes
 * to `definition`'s service and its result bytes come back as they are.
 */
export function forwardBody(definition: SubjectDefinition<z.ZodType, z.ZodType>) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    // A request without a body (and so without a content type) has none to forward.
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    return forwardJson(reply, await request.server.bus.requestRaw(definition, body, request.ctx));
  };
}
