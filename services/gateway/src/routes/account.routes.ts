import {
  apiKeyList,
  apiVersionChangeResult,
  apiVersionChangeInput,
  apiVersionPin,
  rateLimitUsage,
  requestErrorGroups,
  requestLogPage,
  requestLogQuery,
} from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AccountReads } from '../http/account-reads.js';
import type { ApiVersionPins } from '../http/api-version-pins.js';
import { jsonResponse, problemResponses } from '../openapi/responses.js';

export const ACCOUNT_TAG = 'Account: requests, keys, rate limits and API version';

/** `{"version":"2026-12-01"}` is 24 bytes: anything much larger is not a version change. */
const API_VERSION_BODY_LIMIT = 1_024;

/** Each kind of partner reads its own account under its own prefix. */
const areas = [
  { area: 'commerce', prefix: '/v1/commerce', name: 'Commerce' },
  { area: 'distribution', prefix: '/v1/marketfront', name: 'Marketfront' },
] as const;

/**
 * The caller's request log, API keys and rate-limit usage (docs/guide/requests.md): each of
 * the caller's tenant (its partner and mode) only, by construction. And its partner's API
 * version pin, which both its modes share.
 */
export const accountRoutes: FastifyPluginAsync<{
  reads: AccountReads;
  pins: ApiVersionPins;
}> = async (gateway, { reads, pins }) => {
  const app = gateway.withTypeProvider<ZodTypeProvider>();
  const tags = [ACCOUNT_TAG];
  for (const { area, prefix, name } of areas) {
    const config = { area, rateClass: 'reads' } as const;

    app.get(
      `${prefix}/requests`,
      {
        config,
        schema: {
          tags,
          operationId: `list${name}Requests`,
          summary: 'List your recent requests, newest first',
          description:
            'Each authenticated request of your key’s mode: time, method, path (without the ' +
            'query string), status, errorCode, requestId, Idempotency-Key and latency; never ' +
            'bodies or headers. Kept 30 days, the newest 50,000 per mode; a request shows up ' +
            'within a second. limit is 1..100 (default 50); status is error (400 and above) or ' +
            'a status code; errorCode one code; apiVersion one API version (the requests read ' +
            'and answered in it). nextCursor is absent on the last page; ' +
            'otherwise send it back as before (it is opaque: one that was not issued is 400 ' +
            'REQUEST_INVALID at /before). Unknown parameters are 400 REQUEST_INVALID.',
          querystring: requestLogQuery,
          response: { 200: jsonResponse(requestLogPage, 'A page of your requests') },
        },
      },
      async (request) => reads.requests(request.principal!, request.query),
    );

    // The reads without parameters: each the caller's principal in, its answer out.
    const plainReads = [
      {
        path: '/requests/errors',
        operationId: `list${name}RequestErrors`,
        summary: 'Your errors of the last 24 hours, by error code',
        description:
          'For each errorCode answered to your key’s mode in the last 24 hours (at most 100 ' +
          'codes, the latest first): how many, the latest one’s time, requestId and status, ' +
          'and the code’s page (the ProblemDetail type).',
        response: jsonResponse(requestErrorGroups, 'Your recent errors by code'),
        read: reads.errors,
      },
      {
        path: '/keys',
        operationId: `list${name}Keys`,
        summary: 'List your API keys of this mode',
        description:
          'Your keys of the calling key’s mode (live or test), newest first, revoked ones ' +
          'included (at most 100): their public key id, creation, last use (to the minute, ' +
          'written within a second) and revocation. Never a secret.',
        response: jsonResponse(apiKeyList, 'Your keys of this mode'),
        read: reads.keys,
      },
      {
        path: '/rate-limits',
        operationId: `get${name}RateLimits`,
        summary: 'Read your rate-limit usage',
        description:
          'Each budget your routes count against (reads, writes; discovery for marketfront ' +
          'partners) in your key’s mode: its limit per minute, the requests counted in the ' +
          'current one-minute window (this one included), what remains and when the window ' +
          'ends. Reading it counts as one read.',
        response: jsonResponse(rateLimitUsage, 'Your rate-limit usage'),
        read: reads.rateLimits,
      },
    ];
    for (const { path, response, read, ...documented } of plainReads) {
      app.get(
        `${prefix}${path}`,
        { config, schema: { tags, ...documented, response: { 200: response } } },
        async (request) => read(request.principal!),
      );
    }

    app.get(
      `${prefix}/api-version`,
      {
        config,
        schema: {
          tags,
          operationId: `get${name}ApiVersion`,
          summary: 'Read your API version pin and the newer versions',
          description:
            'apiVersion is the dated API version your partner is pinned to (your live and ' +
            'test keys share it); latestVersion the newest; newerVersions the versions after ' +
            'your pin, oldest first, which POST …/api-version can move it to.',
          response: { 200: jsonResponse(apiVersionPin, 'Your pin and the newer versions') },
        },
      },
      async (request) => pins.read(request.principal!),
    );

    app.post(
      `${prefix}/api-version`,
      {
        bodyLimit: API_VERSION_BODY_LIMIT,
        config: { area, rateClass: 'writes' },
        schema: {
          tags,
          operationId: `upgrade${name}ApiVersion`,
          summary: 'Move your API version pin forward',
          description:
            'Pins your partner to version, which must exist and be your pin or a newer one: ' +
            'your pin again changes nothing and answers the same. An older one is 409 ' +
            'API_VERSION_DOWNGRADE (the operator can move a pin back); one that does not exist ' +
            'is 400 REQUEST_INVALID. A test key is 403 FORBIDDEN: the pin is also what your ' +
            'live integration runs. Your next request, on any server, runs under the new pin.',
          body: apiVersionChangeInput,
          response: {
            200: jsonResponse(apiVersionChangeResult, 'Your pin now, and the one before'),
            ...problemResponses('API_VERSION_DOWNGRADE'),
          },
        },
      },
      async (request) => {
        const principal = request.principal!;
        if (principal.mode === 'test') {
          throw new AppError(
            'FORBIDDEN',
            'A test key cannot move your API version pin, which your live keys share: use a ' +
              'live key (try a version in test mode with PCP-Version)',
          );
        }
        return pins.moveForward(principal, request.body.version);
      },
    );
  }
};
