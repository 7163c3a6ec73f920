import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

/**
 * A route's `area` and `testOnly` (see the auth plugin): a key of the other kind of partner,
 * or a live key on a test helper, gets 403 FORBIDDEN. After the rate limit, so a refused
 * request spends the partner's budget like any other (docs/guide/authentication.md#rate-limits).
 */
const areaAccess: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', async (request) => {
    const { principal } = request;
    if (!principal) return;
    const { area, testOnly } = request.routeOptions.config;
    if (area && principal.kind !== area) {
      throw new AppError('FORBIDDEN', `This endpoint is for ${area} partners`);
    }
    if (testOnly && principal.mode !== 'test') {
      throw new AppError('FORBIDDEN', 'This endpoint is for test keys (pcp_test_…) only');
    }
  });
};

export default fp(areaAccess, { name: 'area-access', dependencies: ['auth', 'rate-limit'] });
