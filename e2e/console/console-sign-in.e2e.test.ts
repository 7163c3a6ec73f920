import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call } from '../http.js';
import { checkPage, launchBrowser, newConsoleContext, pageStorage, screenshot } from './browser.js';
import { signIn } from './console.js';

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

describe('the console signed out', () => {
  it('shows the sign-in page, accessible, and says what is wrong with a key', async () => {
    const context = await newConsoleContext(browser, platform.baseUrl);
    const page = await context.newPage();
    const response = await page.goto('/console');
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByRole('heading', { name: 'Sign in to the partner console' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await checkPage(page, 'sign-in');

    const field = page.getByLabel('API key');
    await field.fill('not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.locator('#api-key-error').textContent())
      .toContain('pcp_live_ or pcp_test_');

    const wrongKey = `pcp_live_${'x'.repeat(40)}`;
    await field.fill(wrongKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const problem = page.getByRole('alert');
    await problem.waitFor();
    expect(await problem.locator('.problem-code').textContent()).toBe('UNAUTHORIZED');
    const docs = problem.getByRole('link', { name: 'What UNAUTHORIZED means' });
    expect(await docs.getAttribute('href')).toMatch(/\/docs\/errors\/UNAUTHORIZED$/);
    await checkPage(page, 'sign-in-refused');
    expect(await field.inputValue()).toBe('');
    expect(await pageStorage(page)).not.toContain(wrongKey);
    await context.close();
  });

  it("blocks an injected inline script with the page's CSP", async () => {
    const context = await newConsoleContext(browser, platform.baseUrl);
    const page = await context.newPage();
    await page.goto('/console');
    await page.getByRole('heading', { name: 'Sign in to the partner console' }).waitFor();
    await page.evaluate(
      `window.violations = [];
       document.addEventListener('securitypolicyviolation', (event) =>
         window.violations.push(event.effectiveDirective));`,
    );
    await page.addScriptTag({ content: 'window.injected = true;' }).catch(() => undefined);
    await expect
      .poll(() => page.evaluate<string[]>('window.violations'))
      .toContain('script-src-elem');
    expect(await page.evaluate('window.injected')).toBeUndefined();
    await context.close();
  });
});

describe('signing in', () => {
  it.each([
    ['commerce', 'live'],
    ['commerce', 'test'],
    ['distribution', 'live'],
    ['distribution', 'test'],
  ] as const)(
    'as a %s partner in %s mode: the header says so and the key is kept nowhere',
    async (kind, mode) => {
      const partner = await platform.newPartner(kind, { mode });
      const context = await newConsoleContext(browser, platform.baseUrl);
      const page = await context.newPage();
      await signIn(page, partner.apiKey);

      await page
        .getByRole('heading', { name: kind === 'commerce' ? 'Stores' : 'Overview' })
        .waitFor();
      const header = page.getByRole('banner');
      expect(await header.locator('.kind').textContent()).toBe(
        kind === 'commerce' ? 'Commerce' : 'Distribution',
      );
      expect(await header.locator('.mode-badge').textContent()).toBe(mode.toUpperCase());
      const nav = page.getByRole('navigation', { name: 'Console' });
      // The kind's own pages, then the account's; the Sandbox page in test mode only.
      expect(await nav.getByRole('link').allTextContents()).toEqual([
        ...(kind === 'commerce' ? ['Overview', 'Stores'] : ['Overview', 'Orders', 'Webhooks']),
        'Requests',
        'Account',
        ...(mode === 'test' ? ['Sandbox'] : []),
      ]);
      expect(await pageStorage(page)).not.toContain(partner.apiKey);
      expect(await pageStorage(page)).not.toContain(partner.apiKey.slice(-20));

      // A reload keeps the session (the cookie) and reads its CSRF token again.
      await page.getByRole('link', { name: 'Overview' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      await page.reload();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      expect(await page.getByText(partner.keyId).count()).toBe(1);
      await checkPage(page, `overview-${kind}-${mode}`);
      await context.close();
    },
  );

  it('signing out ends the session on the server: its cookie is refused afterwards', async () => {
    const partner = await platform.newPartner('commerce');
    const context = await newConsoleContext(browser, platform.baseUrl);
    const page = await context.newPage();
    await signIn(page, partner.apiKey);
    await page.getByRole('heading', { name: 'Stores' }).waitFor();
    const cookies = await context.cookies();
    const cookieHeader = cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
    const before = await call(platform.baseUrl, 'GET', '/v1/commerce/stores', {
      headers: { cookie: cookieHeader },
    });
    expect(before.status).toBe(200);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the partner console' }).waitFor();
    await screenshot(page, 'signed-out');
    const after = await call(platform.baseUrl, 'GET', '/v1/commerce/stores', {
      headers: { cookie: cookieHeader },
    });
    expect(after.status).toBe(401);
    expect(after.body.errorCode).toBe('UNAUTHORIZED');
    expect(await page.evaluate<number>("fetch('/v1/commerce/stores').then((r) => r.status)")).toBe(
      401,
    );
    await context.close();
  });

  it('a session ended in another tab sends this one back to sign in, saying why', async () => {
    const partner = await platform.newPartner('commerce');
    const context = await newConsoleContext(browser, platform.baseUrl);
    const [first, second] = [await context.newPage(), await context.newPage()];
    await signIn(first, partner.apiKey);
    await second.goto('/console/overview');
    await second.getByRole('heading', { name: 'Overview' }).waitFor();

    await first.getByRole('button', { name: 'Sign out' }).click();
    await first.getByRole('heading', { name: 'Sign in to the partner console' }).waitFor();
    await second
      .getByRole('navigation', { name: 'Console' })
      .getByRole('link', { name: 'Stores' })
      .click();
    await second.getByText('Your session has ended. Sign in again to go on.').waitFor();
    await checkPage(second, 'session-ended');
    await context.close();
  });
});
