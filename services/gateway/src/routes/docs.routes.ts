import type { FastifyInstance } from 'fastify';
import {
  errorPageSecurityPolicy,
  escapeHtml,
  htmlDocument,
  prefersHtml,
} from '../docs/error-pages.js';
import {
  guideNames,
  guideTitle,
  guideUrl,
  isGuideName,
  readGuide,
  renderGuideHtml,
  type GuideName,
} from '../docs/guides.js';

interface ServedGuide {
  readonly title: string;
  readonly markdown: string;
  readonly html: string;
}

/**
 * The partner guides (`docs/guide/*.md`) on the public port: `/docs/guide` lists them and
 * `/docs/guide/<name>` serves one, as HTML to a browser and as its Markdown source
 * (`text/markdown`) otherwise. They are read and rendered once, here: a gateway whose image
 * lacks them fails at start rather than on a partner's request.
 */
export function registerDocsRoutes(app: FastifyInstance, options: { docsUrl: string }): void {
  const guides = new Map<GuideName, ServedGuide>(
    guideNames.map((name) => {
      const markdown = readGuide(name);
      const title = guideTitle(markdown);
      return [name, { title, markdown, html: htmlDocument(title, renderGuideHtml(markdown)) }];
    }),
  );
  const index = guideNames.map((name) => ({
    name,
    title: guides.get(name)?.title ?? name,
    url: guideUrl(options.docsUrl, name),
  }));
  const indexHtml = htmlDocument(
    'Guides',
    '<h1>Guides</h1><p>The rules of the API, one guide per area. Every error code has a page ' +
      `of its own: <a href="${escapeHtml(`${options.docsUrl}/errors`)}">error codes</a>.</p><ul>` +
      index
        .map(
          (guide) => `<li><a href="${escapeHtml(guide.url)}">${escapeHtml(guide.title)}</a></li>`,
        )
        .join('') +
      '</ul>',
  );

  const hidden = { schema: { hide: true } };
  app.get('/docs/guide', hidden, (request, reply) => {
    reply.header('vary', 'Accept').header('cache-control', 'public, max-age=300');
    if (!prefersHtml(request.headers.accept)) return reply.send({ guides: index });
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', errorPageSecurityPolicy)
      .send(indexHtml);
  });

  app.get<{ Params: { name: string } }>('/docs/guide/:name', hidden, (request, reply) => {
    const { name } = request.params;
    const guide = isGuideName(name) ? guides.get(name) : undefined;
    if (!guide) return reply.callNotFound();
    reply.header('vary', 'Accept').header('cache-control', 'public, max-age=300');
    if (!prefersHtml(request.headers.accept)) {
      return reply.type('text/markdown; charset=utf-8').send(guide.markdown);
    }
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', errorPageSecurityPolicy)
      .send(guide.html);
  });
}
