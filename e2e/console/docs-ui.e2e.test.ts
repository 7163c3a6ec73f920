import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { launchBrowser, newConsoleContext, screenshot } from './browser.js';

// Swagger UI at /docs, on the console's origin, under its own strict CSP: it still renders
// the document, and the policy refuses nothing it needs.

let env: TestEnvironment;
let platform: TestPlatform;
let browser: Browser;

beforeAll(async () => {
  env = await createTestEnvironment();
  [platform, browser] = await Promise.all([startPlatform(env), launchBrowser()]);
});

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  await env?.cleanup();
});

describe('Swagger UI under its CSP', () => {
  it('renders the API document with no violation, and blocks an injected inline script', async () => {
    const context = await newConsoleContext(browser, platform.baseUrl);
    // Injected by the DevTools protocol, which the page's CSP does not govern.
    await context.addInitScript(`{
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) =>
        window.cspViolations.push(event.violatedDirective + ' ' + event.blockedURI));
    }`);
    const page = await context.newPage();
    const response = await page.goto('/docs/');
    expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await page.locator('.swagger-ui .info .title').waitFor();
    await expect.poll(() => page.locator('.swagger-ui .opblock').count()).toBeGreaterThan(10);
    // An operation opens (React renders its parameters and responses).
    await page.locator('.swagger-ui .opblock-summary').first().click();
    await page.locator('.swagger-ui .opblock-body').first().waitFor();
    await screenshot(page, 'docs-swagger-ui');
    expect(await page.evaluate('window.cspViolations')).toEqual([]);

    await page.evaluate(`{
      const script = document.createElement('script');
      script.textContent = 'window.injectedRan = true';
      document.body.append(script);
    }`);
    await expect.poll(() => page.evaluate('window.cspViolations.length')).toBe(1);
    expect(await page.evaluate('window.injectedRan')).toBeUndefined();
    await context.close();
  });
});
