/**
 * The console's Requests and Account pages (docs/guide/requests.md), for both kinds of partner:
 * a call that failed over HTTP with the partner's key is read in the request log with its
 * errorCode (linked to its page), requestId (copied) and Idempotency-Key; the recent errors
 * group it by code, link the code's page and filter the log; the keys (never a secret) and the
 * rate-limit usage show on the Account page.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call } from '../http.js';
import { checkPage, launchBrowser, newConsoleContext, screenshotOnFailure } from './browser.js';
import { signIn } from './console.js';

let env: TestEnvironment;
let platform: TestPlatform;
let browser: Browser;
let context: BrowserContext | undefined;
let page: Page | undefined;
/** Uncaught errors of the page's scripts: none, ever. */
const pageErrors: string[] = [];
/** How long a poll waits for the page (placing an order takes a few requests). */
const wait = { timeout: 8_000 };

beforeAll(async () => {
  env = await createTestEnvironment();
  [platform, browser] = await Promise.all([startPlatform(env), launchBrowser()]);
}, 60_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await platform?.stop();
  await env?.cleanup();
});

screenshotOnFailure(() => page);

/** A fresh browser profile signed in with `apiKey` (the previous test's closed). */
async function openConsole(apiKey: string): Promise<Page> {
  await context?.close();
  context = await newConsoleContext(browser, platform.baseUrl);
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const opened = await context.newPage();
  opened.on('pageerror', (error) => pageErrors.push(error.message));
  page = opened;
  await signIn(opened, apiKey);
  return opened;
}

const navLink = (name: string) =>
  page!.getByRole('navigation', { name: 'Console' }).getByRole('link', { name });
afterEach(() => expect(pageErrors).toEqual([]));

const kinds = [
  {
    kind: 'commerce',
    area: 'commerce',
    // A store whose body is cut short: 400 REQUEST_INVALID.
    failing: { method: 'PUT', path: `/v1/commerce/stores/${randomUUID()}` },
    buckets: ['Reads', 'Writes'],
  },
  {
    kind: 'distribution',
    area: 'marketfront',
    failing: { method: 'POST', path: '/v1/marketfront/orders/place' },
    buckets: ['Reads', 'Writes', 'Discovery'],
  },
] as const;

describe.each(kinds)('a $kind partner in the console', ({ kind, area, failing, buckets }) => {
  it('reads a failed call in the request log and its error grouped by code', async () => {
    const partner = await platform.newPartner(kind);
    const requestId = randomUUID();
    const idempotencyKey = `key-${randomUUID()}`;
    const answer = await call(platform.baseUrl, failing.method, failing.path, {
      apiKey: partner.apiKey,
      rawBody: '{"name": ',
      headers: {
        'x-request-id': requestId,
        'idempotency-key': idempotencyKey,
        'x-end-user-id': 'console-e2e',
      },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.errorCode).toBe('REQUEST_INVALID');
    // The log takes it within about a second; the page reads it once it is there.
    await expect
      .poll(
        async () =>
          (
            await call(platform.baseUrl, 'GET', `/v1/${area}/requests/errors`, {
              apiKey: partner.apiKey,
            })
          ).body.groups,
        wait,
      )
      .toEqual([expect.objectContaining({ errorCode: 'REQUEST_INVALID', count: 1 })]);
    const docsUrl = answer.body.type as string;

    const page = await openConsole(partner.apiKey);
    await navLink('Requests').click();

    // The failed call, as the platform answered it.
    const row = page.getByRole('row', { name: new RegExp(requestId) });
    await row.waitFor();
    expect(await row.getByText(failing.method, { exact: true }).count()).toBe(1);
    expect(await row.getByText(failing.path, { exact: true }).count()).toBe(1);
    expect(await row.getByText('400', { exact: true }).count()).toBe(1);
    expect(await row.getByText(idempotencyKey).count()).toBe(1);
    expect(await row.getByText(/^\d+ ms$/).count()).toBe(1);
    expect(await row.getByRole('link', { name: 'REQUEST_INVALID' }).getAttribute('href')).toBe(
      docsUrl,
    );
    await row.getByRole('button', { name: `Copy request id ${requestId}` }).click();
    await row.getByRole('status').getByText('Copied').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(requestId);

    // The recent errors: one REQUEST_INVALID, its page linked.
    const errors = page.getByRole('article', { name: 'Recent errors' });
    expect(
      await errors.getByRole('link', { name: 'What REQUEST_INVALID means' }).getAttribute('href'),
    ).toBe(docsUrl);
    // (The console's own reads may add their codes, such as a distribution partner's
    // WEBHOOK_NOT_FOUND on the overview.)
    const group = errors.getByRole('listitem').filter({ hasText: 'REQUEST_INVALID' });
    await group.getByText('1 request', { exact: true }).waitFor();
    await checkPage(page, `requests-${kind}`);

    // Choosing the group filters the log to its code: the successful reads drop out.
    const logRows = page.locator('.request-table tbody tr');
    await expect.poll(() => logRows.count(), wait).toBeGreaterThan(1);
    await errors.getByRole('button', { name: 'REQUEST_INVALID' }).click();
    await expect.poll(() => logRows.count(), wait).toBe(1);
    await row.waitFor();
    expect(await page.getByLabel('Error code').inputValue()).toBe('REQUEST_INVALID');
    await page.getByRole('button', { name: 'Show all' }).click();
    await expect.poll(() => logRows.count(), wait).toBeGreaterThan(1);
    // A filter typed in: none of these answered 503.
    await page.getByLabel('Status').selectOption('503');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.getByText('No request matches this filter.').waitFor();
    await checkPage(page, `requests-filtered-${kind}`);
  }, 60_000);

  it('shows its keys without their secret, and its rate-limit usage', async () => {
    const partner = await platform.newPartner(kind);
    // pcp_<mode>_<keyId>_<secret>: the base64url secret may itself hold '_'.
    const [, , keyId] = partner.apiKey.split('_');
    const secret = partner.apiKey.slice(`pcp_live_${keyId}_`.length);
    const page = await openConsole(partner.apiKey);
    await navLink('Account').click();

    const key = page.getByRole('row', { name: new RegExp(keyId!) });
    await key.waitFor();
    await key.getByText("This session's key").waitFor();
    await key.getByText('Active').waitFor();
    expect(await key.getByText('LIVE').count()).toBe(1);
    for (const bucket of buckets) {
      const meter = page.getByRole('meter', { name: bucket });
      await meter.waitFor();
      expect(Number(await meter.getAttribute('max'))).toBeGreaterThan(0);
    }
    await page
      .getByText(/^\d+ of \d+ used · \d+ left · resets /)
      .first()
      .waitFor();
    expect(secret).toHaveLength(43);
    expect(await page.content()).not.toContain(secret);
    await checkPage(page, `account-${kind}`);
    // The sandbox is test mode's: a live session has no such page.
    expect(await navLink('Sandbox').count()).toBe(0);
  });
});
