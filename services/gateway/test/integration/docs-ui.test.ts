import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// Swagger UI at /docs shares the console's origin (and its session cookie): it has a strict
// CSP of its own, on the page and on each of its files.

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db);
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

describe('Swagger UI at /docs', () => {
  it('sends a strict CSP with the page and each of its files', async () => {
    const page = await fetch(`${gateway.url()}/docs/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const policy = page.headers.get('content-security-policy') ?? '';
    const directives = new Map(
      policy.split(/;\s*/).map((directive) => {
        const [name, ...values] = directive.trim().split(' ');
        return [name, values.join(' ')];
      }),
    );
    expect(Object.fromEntries(directives)).toMatchObject({
      'default-src': "'none'",
      'script-src': "'self'",
      'connect-src': "'self'",
      'frame-ancestors': "'none'",
      'form-action': "'none'",
      'base-uri': "'none'",
      'object-src': "'none'",
    });
    expect(policy).not.toContain('unsafe-');

    // Nothing inline for the policy to need a hash for: every script is a file of its own.
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\bsrc="/);
      expect(body!.trim()).toBe('');
    }
    const files = [...html.matchAll(/(?:src|href)="(\.\/[^"]+|\/docs\/[^"]+)"/g)].map(
      ([, path]) => new URL(path!, `${gateway.url()}/docs/`).pathname,
    );
    expect(files).toEqual(
      expect.arrayContaining(['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-ui.css']),
    );
    for (const path of ['/docs', '/docs/', ...files, '/docs/static/swagger-initializer.js']) {
      const answer = await fetch(`${gateway.url()}${path}`, { redirect: 'manual' });
      await answer.arrayBuffer();
      expect(answer.status, path).toBeLessThan(400);
      expect(answer.headers.get('content-security-policy'), path).toBe(policy);
    }
    // The page itself keeps its referrer and its window to itself, as the console does.
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
