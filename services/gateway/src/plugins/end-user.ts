import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `required`: the route acts for an end user; without X-End-User-Id it is 401
     * SESSION_USER_REQUIRED. `optional`: the route acts for one when the request needs it
     * (validate with a saved addressId); the document shows the header as optional.
     */
    endUser?: 'required' | 'optional';
  }
  interface FastifyRequest {
    /** The partner's end user the request acts for (X-End-User-Id), when it names one. */
    endUserId: string | undefined;
  }
}

const END_USER_ID = /^[\x20-\x7e]{1,128}$/;

/** X-End-User-Id on authenticated requests: checked when sent, demanded where required. */
const endUser: FastifyPluginAsync = async (app) => {
  app.decorateRequest('endUserId', undefined);
  app.addHook('onRequest', async (request) => {
    if (!request.principal) return;
    const header = request.headers['x-end-user-id'];
    if (header !== undefined) {
      if (typeof header !== 'string' || !END_USER_ID.test(header)) {
        throw new AppError(
          'REQUEST_INVALID',
          'X-End-User-Id must be 1 to 128 printable ASCII characters',
        );
      }
      request.endUserId = header;
    } else if (request.routeOptions.config.endUser === 'required') {
      throw new AppError('SESSION_USER_REQUIRED', 'Send the end user as X-End-User-Id');
    }
  });
};

export default fp(endUser, { name: 'end-user', dependencies: ['auth'] });
