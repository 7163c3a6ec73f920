import { createDatabase } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { GATEWAY_SCHEMA, type GatewayDatabase, type GatewayService } from '../../src/app.js';
import { consoleSecurityPolicy, loadConsoleFiles } from '../../src/routes/console.routes.js';
import { createLoneGateway } from '../support/lone-gateway.js';

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<GatewayDatabase>({
    url: env.databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: 'test-gateway',
  });
  gateway = createLoneGateway(env, db);
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A GET of `path` exactly as written: no URL normalization of `..` or `%2e` on the way. */
function rawGet(path: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const { hostname, port } = new URL(gateway.url());
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: hostname, port, path, method: 'GET', headers }, (answer) => {
      let body = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => (body += chunk));
      answer.on('end', () =>
        resolve({ status: answer.statusCode ?? 0, headers: answer.headers, body }),
      );
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

function expectConsoleHeaders(answer: RawAnswer) {
  expect(answer.headers['content-security-policy']).toBe(consoleSecurityPolicy);
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(answer.headers['referrer-policy']).toBe('no-referrer');
}

describe('the partner console at /console', () => {
  it('serves index.html at /console and for client routes, uncached, with a strict CSP', async () => {
    const index = await rawGet('/console');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.headers['cache-control']).toBe('no-cache');
    expectConsoleHeaders(index);
    expect(consoleSecurityPolicy).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; " +
        "frame-ancestors 'none'",
    );
    // Nothing the CSP would block: every script has a src, no <style>, no style attribute.
    const scripts = [...index.body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, content] of scripts) {
      expect(attributes).toMatch(/\bsrc="\/console\/assets\/[^"]+\.js"/);
      expect(content).toBe('');
    }
    expect(index.body).not.toMatch(/<style\b|\sstyle=/);

    for (const route of ['/console/', '/console/stores', '/console/stores/4f1c-9a/hours']) {
      const answer = await rawGet(route);
      expect(answer.status, route).toBe(200);
      expect(answer.body).toBe(index.body);
      expectConsoleHeaders(answer);
    }
  });

  it('serves the hashed assets immutable, and answers 304 to a matching If-None-Match', async () => {
    const index = await rawGet('/console');
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(index.body)![1]!;
    const style = /href="(\/console\/assets\/[^"]+\.css)"/.exec(index.body)![1]!;
    const js = await rawGet(script);
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expectConsoleHeaders(js);
    const css = await rawGet(style);
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');

    const etag = String(js.headers.etag);
    const again = await rawGet(script, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
  });

  it.each([
    '/console/../package.json',
    '/console/..%2fpackage.json',
    '/console/%2e%2e/package.json',
    '/console/%2e%2e%2f%2e%2e%2fpackage.json',
    '/console/%252e%252e%252fpackage.json',
    '/console/assets/../../package.json',
    '/console/assets/..%5c..%5cpackage.json',
    '/console/..\\package.json',
    '/console/%00',
    '/console/assets/missing.js',
    '/console/index.html%00.js',
    '/console/.vite/manifest.json',
  ])('answers 404 to %s, never a file outside the build', async (path) => {
    const answer = await rawGet(path);
    expect(answer.status).toBe(404);
    expect(answer.body).not.toContain('"workspaces"');
    expect(answer.body).not.toContain('<div id="app">');
  });

  it('does not start without a console build', () => {
    const empty = mkdtempSync(join(tmpdir(), 'pcp-console-'));
    try {
      expect(() => loadConsoleFiles(empty)).toThrow(/partner console is not built/);
      expect(() => loadConsoleFiles(join(empty, 'missing'))).toThrow(/not built/);
    } finally {
      rmSync(empty, { recursive: true });
    }
  });
});
