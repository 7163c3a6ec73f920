import { session, sessionCreateInput } from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { clearedSessionCookie, sessionCookie } from '../auth/session-cookie.js';
import { emptyResponse, jsonResponse, problemResponses } from '../openapi/responses.js';

const tags = ['Console sessions'];
/** `{"apiKey":"…"}` is about 90 bytes: anything much larger is not a sign-in. */
const SIGN_IN_BODY_LIMIT = 1_024;

/**
 * Console sessions (docs/guide/authentication.md#console-sessions): an API key exchanged for
 * a session cookie, read back by a reloaded page, and ended by sign-out. The auth plugin
 * authenticates them (`config.session`).
 */
export const sessionRoutes: FastifyPluginAsync = async (gateway) => {
  const app = gateway.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/v1/sessions',
    {
      bodyLimit: SIGN_IN_BODY_LIMIT,
      config: { session: 'sign-in', rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'createSession',
        summary: 'Sign in: exchange an API key for a console session cookie',
        description:
          'Answers the session and sets it as the __Host-pcp_session cookie (HttpOnly, ' +
          'Secure, SameSite=Strict). The session acts as the key (its partner, kind and mode) ' +
          'on every /v1 operation of that kind, until it is idle for an hour, twelve hours ' +
          'pass, the key is revoked or the partner suspended, or it is signed out. Writes by ' +
          'cookie need X-CSRF-Token: csrfToken. A wrong key is 401 UNAUTHORIZED and counts ' +
          "against the address's failed authentications.",
        security: [],
        body: sessionCreateInput,
        response: {
          201: jsonResponse(session, 'The session, also set as the cookie', ['Set-Cookie']),
          ...problemResponses(
            'UNAUTHORIZED',
            'REQUEST_INVALID',
            'RATE_LIMITED',
            'INTERNAL',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      // The auth plugin authenticated the body's key.
      const created = await app.consoleSessions.create(request.principal!);
      const maxAgeMs = Date.parse(created.session.expiresAt) - Date.now();
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .header('set-cookie', sessionCookie(created.token, maxAgeMs))
        .send(created.session);
    },
  );

  app.get(
    '/v1/sessions/current',
    {
      config: { session: 'current', rateClass: 'reads' },
      schema: {
        tags,
        operationId: 'getCurrentSession',
        summary: 'The console session of the cookie, with its CSRF token',
        description:
          'What sign-in answered, for a page loaded again. Without a live session cookie: ' +
          '401 UNAUTHORIZED.',
        security: [{ cookieAuth: [] }],
        response: { 200: jsonResponse(session, 'The session') },
      },
    },
    async (request, reply) =>
      reply.header('cache-control', 'no-store').send(request.consoleSession!.session),
  );

  app.delete(
    '/v1/sessions/current',
    {
      config: { session: 'current', rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'deleteCurrentSession',
        summary: 'Sign out: end the console session',
        description:
          'Ends the session on every gateway and clears the cookie. Needs X-CSRF-Token ' +
          'like every write of a session.',
        security: [{ cookieAuth: [], csrfToken: [] }],
        response: {
          204: emptyResponse('Signed out; the cookie is cleared', ['Set-Cookie']),
        },
      },
    },
    async (request, reply) => {
      await app.consoleSessions.end(request.consoleSession!.token);
      return reply.code(204).header('set-cookie', clearedSessionCookie()).send(null);
    },
  );
};
