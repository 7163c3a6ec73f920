import { errorCodes, parseContract, problemDetail, type ErrorCode } from '@pcp/contracts';
import { createLogger } from '@pcp/service-kit';
import Fastify, { type FastifyInstance } from 'fastify';
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorDocs } from '../../src/docs/error-docs.js';
import {
  guideDirectory,
  guideNames,
  headingAnchor,
  readGuide,
  renderGuideHtml,
} from '../../src/docs/guides.js';
import { frameworkErrorHandler, installErrorHandling } from '../../src/http/problem.js';
import { registerDocsRoutes } from '../../src/routes/docs.routes.js';
import { registerPublicRoutes } from '../../src/routes/public.routes.js';

const docsUrl = 'https://api.partner-commerce.test/docs';
const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify({ logger: false, frameworkErrors: frameworkErrorHandler(docsUrl) });
  installErrorHandling(app, docsUrl, createLogger('test', 'silent'));
  registerPublicRoutes(app, docsUrl);
  registerDocsRoutes(app, { docsUrl });
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

const get = (url: string, accept?: string) =>
  app.inject({ method: 'GET', url, headers: accept === undefined ? {} : { accept } });

/** The anchors of a guide's headings, as the served page and the repository make them. */
const anchorsOf = (markdown: string) =>
  new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((match) => headingAnchor(match[1] ?? '')));

describe('the guides', () => {
  it('are exactly the Markdown files of docs/guide', () => {
    const files = readdirSync(guideDirectory).filter((file) => file.endsWith('.md'));
    expect(files.map((file) => file.slice(0, -3)).sort()).toEqual([...guideNames].sort());
  });

  it.each(guideNames)('%s is served: Markdown to API clients, HTML to a browser', async (name) => {
    const markdown = readGuide(name);
    for (const accept of [undefined, '*/*', 'text/markdown']) {
      const response = await get(`/docs/guide/${name}`, accept);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/markdown; charset=utf-8');
      expect(response.body).toBe(markdown);
    }
    const page = await get(`/docs/guide/${name}`, browserAccept);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'",
    );
    expect(page.headers.vary).toBe('Accept');
    expect(page.body).toMatch(/^<!doctype html>/);
    expect(page.body).not.toMatch(/<script|<link|<img|src=/i);
    // Every heading is addressable, so error pages and code comments can link to a rule.
    for (const anchor of anchorsOf(markdown)) expect(page.body).toContain(`id="${anchor}"`);
  });

  it('links between guides point at the served pages', () => {
    const html = renderGuideHtml(
      'See [Idempotency](orders.md#idempotency) and [money](payments.md).',
    );
    expect(html).toContain('href="orders#idempotency"');
    expect(html).toContain('href="payments"');
  });

  it('lists every guide at /docs/guide', async () => {
    const json = (await get('/docs/guide')).json();
    expect(json.guides.map((guide: { name: string }) => guide.name)).toEqual([...guideNames]);
    expect(json.guides[0]).toEqual({
      name: 'authentication',
      title: 'Authentication',
      url: `${docsUrl}/guide/authentication`,
    });
    const html = (await get('/docs/guide', browserAccept)).body;
    for (const name of guideNames) expect(html).toContain(`href="${docsUrl}/guide/${name}"`);
  });

  it.each(['nope', 'orders.md', '__proto__', '..%2F..%2Fpackage.json', 'ORDERS'])(
    'answers an unknown guide (%s) with a 404 ProblemDetail',
    async (name) => {
      const response = await get(`/docs/guide/${name}`, browserAccept);
      expect(response.statusCode).toBe(404);
      expect(parseContract(problemDetail, response.json()).success).toBe(true);
    },
  );
});

describe('error pages link to the rules', () => {
  it.each(Object.keys(errorCodes) as ErrorCode[])(
    '%s names a heading of a guide, and its page links there',
    async (code) => {
      const { guide, heading } = errorDocs[code].rules;
      expect(anchorsOf(readGuide(guide))).toContain(headingAnchor(heading));
      const url = `${docsUrl}/guide/${guide}#${headingAnchor(heading)}`;
      expect((await get(`/docs/errors/${code}`)).json().rules).toBe(url);
      expect((await get(`/docs/errors/${code}`, browserAccept)).body).toContain(`href="${url}"`);
    },
  );
});
