import { errorCodes, parseContract, problemDetail, type ErrorCode } from '@pcp/contracts';
import { createLogger } from '@pcp/service-kit';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorDocs } from '../../src/docs/error-docs.js';
import { escapeHtml, prefersHtml } from '../../src/docs/error-pages.js';
import { frameworkErrorHandler, installErrorHandling } from '../../src/http/problem.js';
import { registerPublicRoutes } from '../../src/routes/public.routes.js';

const docsUrl = 'https://api.partner-commerce.test/docs';
const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const allCodes = Object.keys(errorCodes) as ErrorCode[];

let app: FastifyInstance;

beforeAll(async () => {
  // As the gateway builds it (app.ts): errors before routing are ProblemDetail too.
  app = Fastify({ logger: false, frameworkErrors: frameworkErrorHandler(docsUrl) });
  installErrorHandling(app, docsUrl, createLogger('test', 'silent'));
  registerPublicRoutes(app, docsUrl);
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

const get = (url: string, accept?: string) =>
  app.inject({ method: 'GET', url, headers: accept === undefined ? {} : { accept } });

describe('GET /docs/errors/<code>', () => {
  it.each(allCodes)(
    '%s has a page: JSON with an example ProblemDetail of the code',
    async (code) => {
      const response = await get(`/docs/errors/${code}`, 'application/json');
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      const page = response.json();
      expect(Object.keys(page).sort()).toEqual(
        [
          'action',
          'category',
          'description',
          'errorCode',
          'example',
          'retryable',
          'rules',
          'status',
          'title',
        ].sort(),
      );
      const info = errorCodes[code];
      expect(page).toMatchObject({ errorCode: code, ...info });
      expect(page.description.length).toBeGreaterThan(20);
      expect(page.action.length).toBeGreaterThan(20);
      // The example is a ProblemDetail as the platform sends it, pointing back at this page.
      expect(parseContract(problemDetail, page.example).success).toBe(true);
      expect(page.example).toMatchObject({
        type: `${docsUrl}/errors/${code}`,
        errorCode: code,
        status: info.status,
        title: info.title,
        errorCategory: info.category,
        retryable: info.retryable,
      });
    },
  );

  it('answers JSON to API clients and HTML to a browser (Accept negotiation)', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'text/html;q=0.5, */*']) {
      const response = await get('/docs/errors/STORE_NOT_FOUND', accept);
      expect(response.headers['content-type'], String(accept)).toMatch(/^application\/json/);
      expect(response.json().errorCode).toBe('STORE_NOT_FOUND');
    }
    for (const accept of [browserAccept, 'text/html', 'text/*;q=0.9, application/json;q=0.5']) {
      const response = await get('/docs/errors/STORE_NOT_FOUND', accept);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type'], accept).toBe('text/html; charset=utf-8');
      expect(response.headers['content-security-policy']).toBe(
        "default-src 'none'; style-src 'unsafe-inline'",
      );
      expect(response.body).toContain('<h1><code>STORE_NOT_FOUND</code></h1>');
    }
    const page = await get('/docs/errors/STORE_NOT_FOUND', browserAccept);
    expect(page.headers.vary).toBe('Accept');
  });

  it('shows a person what happened, what to do, whether to retry and an example', async () => {
    const html = (await get('/docs/errors/IDEMPOTENCY_KEY_IN_PROGRESS', browserAccept)).body;
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<h2>What happened</h2>');
    expect(html).toContain('<h2>What to do</h2>');
    expect(html).toContain('same Idempotency-Key');
    expect(html).toContain('Retry-After');
    // The example ProblemDetail, as escaped JSON.
    expect(html).toContain('&quot;errorCode&quot;: &quot;IDEMPOTENCY_KEY_IN_PROGRESS&quot;');
    // No script and nothing loaded from elsewhere.
    expect(html).not.toMatch(/<script|<link|<img|src=/i);
  });

  it('escapes the texts it renders', async () => {
    // UNAUTHORIZED's texts name the header form `Authorization: Bearer <key>`.
    expect(errorDocs.UNAUTHORIZED.action).toContain('<key>');
    const html = (await get('/docs/errors/UNAUTHORIZED', browserAccept)).body;
    expect(html).toContain('Bearer &lt;key&gt;');
    expect(html).not.toContain('<key>');
    expect(escapeHtml(`<script>alert("x")</script>&'`)).toBe(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;',
    );
  });

  it.each([
    ['an unknown code', '/docs/errors/NO_SUCH_CODE'],
    ['a lower-case code', '/docs/errors/store_not_found'],
    ['a prototype key', '/docs/errors/__proto__'],
    ['an inherited property', '/docs/errors/constructor'],
    ['a path traversal', '/docs/errors/..%2F..%2Fetc%2Fpasswd'],
    ['markup', '/docs/errors/%3Cscript%3Ealert(1)%3C%2Fscript%3E'],
    ['a very long code', `/docs/errors/${'A'.repeat(5_000)}`],
    ['a NUL', '/docs/errors/STORE%00NOT_FOUND'],
  ])('answers %s with a 404 ProblemDetail, even to a browser', async (_name, url) => {
    for (const accept of [undefined, browserAccept]) {
      const response = await get(url, accept);
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = response.json();
      expect(parseContract(problemDetail, problem).success).toBe(true);
      expect(problem.errorCode).toBe('NOT_FOUND');
      expect(response.body).not.toContain('<script>');
    }
  });
});

describe('errors before routing (frameworkErrorHandler)', () => {
  it('answers malformed percent-encoding with a 400 ProblemDetail and its request id', async () => {
    const response = await get('/docs/errors/%E0%A4%A', browserAccept);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = response.json();
    expect(problem.errorCode).toBe('REQUEST_INVALID');
    expect(response.headers['x-request-id']).toBe(problem.requestId);
  });

  it('answers a path parameter over the router limit with a 404 ProblemDetail', async () => {
    const response = await get(`/docs/errors/${'A'.repeat(5_000)}`);
    expect(response.statusCode).toBe(404);
    const problem = response.json();
    expect(problem.errorCode).toBe('NOT_FOUND');
    expect(response.headers['x-request-id']).toBe(problem.requestId);
  });
});

describe('GET /docs/errors', () => {
  it('lists every code with its page, as JSON or HTML', async () => {
    const json = (await get('/docs/errors')).json();
    expect(json.errors.map((entry: { errorCode: string }) => entry.errorCode)).toEqual(allCodes);
    expect(json.errors[0]).toEqual({
      errorCode: 'UNAUTHORIZED',
      status: 401,
      title: 'Unauthorized',
      retryable: false,
      url: `${docsUrl}/errors/UNAUTHORIZED`,
    });
    const html = (await get('/docs/errors', browserAccept)).body;
    for (const code of allCodes) expect(html).toContain(`href="${docsUrl}/errors/${code}"`);
  });
});

describe('prefersHtml', () => {
  it('prefers HTML only when text/html ranks above JSON', () => {
    expect(prefersHtml(undefined)).toBe(false);
    expect(prefersHtml('')).toBe(false);
    expect(prefersHtml('*/*')).toBe(false);
    expect(prefersHtml('application/json, text/html')).toBe(false);
    expect(prefersHtml('text/html;q=0')).toBe(false);
    expect(prefersHtml('text/html;q=nonsense')).toBe(false);
    expect(prefersHtml(browserAccept)).toBe(true);
    expect(prefersHtml('TEXT/HTML')).toBe(true);
    expect(prefersHtml('application/json;q=0.1, text/*')).toBe(true);
  });

  it('reads a bounded number of media ranges of a hostile header', () => {
    const hostile = `${'x/y;q=1,'.repeat(100_000)}text/html`;
    const started = performance.now();
    expect(prefersHtml(hostile)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
