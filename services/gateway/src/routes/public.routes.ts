import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  errorIndex,
  errorPage,
  errorPageSecurityPolicy,
  prefersHtml,
  renderErrorIndex,
  renderErrorPage,
} from '../docs/error-pages.js';

export interface PublicRoutesOptions {
  /** Where the error-code pages are: ProblemDetail `type` is `${docsUrl}/errors/<code>`. */
  readonly docsUrl: string;
}

/**
 * What the public port serves besides the API: a cheap `/health/live` (the process
 * answers) and the error-code pages, HTML for a browser and JSON otherwise (ProblemDetail
 * `type` links to them). Readiness and metrics are on the ops port.
 */
export const publicRoutes: FastifyPluginAsync<PublicRoutesOptions> = async (app, { docsUrl }) => {
  const hidden = { schema: { hide: true } };
  app.get('/health/live', hidden, () => ({ status: 'ok' }));

  const negotiated = (
    request: FastifyRequest,
    reply: FastifyReply,
    render: { html: () => string; json: () => unknown },
  ) => {
    // The same URL answers both: caches must keep them apart.
    reply.header('vary', 'Accept').header('cache-control', 'public, max-age=300');
    if (!prefersHtml(request.headers.accept)) return reply.send(render.json());
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', errorPageSecurityPolicy)
      .send(render.html());
  };

  app.get('/docs/errors', hidden, (request, reply) =>
    negotiated(request, reply, {
      html: () => renderErrorIndex(docsUrl),
      json: () => errorIndex(docsUrl),
    }),
  );

  app.get<{ Params: { errorCode: string } }>(
    '/docs/errors/:errorCode',
    hidden,
    (request, reply) => {
      const page = errorPage(request.params.errorCode, docsUrl);
      if (!page) return reply.callNotFound();
      return negotiated(request, reply, {
        html: () => renderErrorPage(page, docsUrl),
        json: () => page,
      });
    },
  );
};
