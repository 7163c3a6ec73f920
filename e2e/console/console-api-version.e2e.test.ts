/**
 * The console's API version card (docs/guide/requests.md#api-version): a partner pinned to an
 * older version sees its pin and the newer versions, and upgrades only after a confirm step,
 * with a live session; a test session sees the pin but cannot move it.
 */
import { API_VERSION_CHANGES } from '@pcp/contracts';
import { createKey, setApiVersion } from '@pcp/gateway/admin';
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
const pageErrors: string[] = [];

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
afterEach(() => expect(pageErrors).toEqual([]));

async function openAccount(apiKey: string): Promise<Page> {
  await context?.close();
  context = await newConsoleContext(browser, platform.baseUrl);
  const opened = await context.newPage();
  opened.on('pageerror', (error) => pageErrors.push(error.message));
  page = opened;
  await signIn(opened, apiKey);
  await opened
    .getByRole('navigation', { name: 'Console' })
    .getByRole('link', { name: 'Account' })
    .click();
  return opened;
}

/** A partner pinned to the first version, as one that built against it would be. */
async function oldPartner() {
  const partner = await platform.newPartner('distribution');
  await setApiVersion(platform.gatewayDb, partner.partnerId, '2026-11-01');
  return partner;
}

const pinOf = async (apiKey: string) =>
  (await call(platform.baseUrl, 'GET', '/v1/marketfront/api-version', { apiKey })).body.apiVersion;

describe('the API version card', () => {
  it('shows the pin and the newer versions, and upgrades after a confirm step', async () => {
    const partner = await oldPartner();
    const opened = await openAccount(partner.apiKey);
    const card = opened.getByRole('article', { name: 'API version' });
    await card.getByText('Pinned to 2026-11-01.').waitFor();
    await card.getByText('Newer versions: 2026-12-01. Upgrading to the newest changes:').waitFor();
    // Each change the upgrade brings, as the changelog names it.
    const changes = card.getByRole('listitem');
    expect(await changes.allTextContents()).toEqual(
      API_VERSION_CHANGES['2026-12-01'].map(
        (change) => `2026-12-01 ${change.name}: ${change.description}`,
      ),
    );

    // Cancelled: nothing moves.
    await card.getByRole('button', { name: 'Upgrade to 2026-12-01…' }).click();
    const confirm = card.getByRole('group', {
      name: /Move your pin from 2026-11-01 to 2026-12-01/,
    });
    await confirm.waitFor();
    await checkPage(opened, 'account-api-version-confirm');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await confirm.count()).toBe(0);
    expect(await pinOf(partner.apiKey)).toBe('2026-11-01');

    await card.getByRole('button', { name: 'Upgrade to 2026-12-01…' }).click();
    await confirm.getByRole('button', { name: 'Upgrade to 2026-12-01' }).click();
    await card.getByRole('status').getByText('Your partner is pinned to 2026-12-01.').waitFor();
    await card.getByText('Pinned to 2026-12-01, the newest version.').waitFor();
    expect(await card.getByRole('button', { name: /Upgrade/ }).count()).toBe(0);
    expect(await pinOf(partner.apiKey)).toBe('2026-12-01');
    await checkPage(opened, 'account-api-version-upgraded');
  }, 60_000);

  it('shows a test session the pin it shares, without an upgrade', async () => {
    const partner = await oldPartner();
    const test = await createKey(platform.gatewayDb, partner.partnerId, { mode: 'test' });
    const opened = await openAccount(test.apiKey);
    const card = opened.getByRole('article', { name: 'API version' });
    await card.getByText('Pinned to 2026-11-01.').waitFor();
    await card.getByText(/Sign in with a live key to upgrade/).waitFor();
    expect(await card.getByRole('button').count()).toBe(0);
    expect(await pinOf(partner.apiKey)).toBe('2026-11-01');
  }, 60_000);
});
