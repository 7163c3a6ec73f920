import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from '../catalog-host.js';
import { call } from '../http.js';
import { createStore, ingestCatalog } from '../ingest.js';
import {
  checkPage,
  launchBrowser,
  newConsoleContext,
  screenshot,
  screenshotOnFailure,
} from './browser.js';
import { signIn } from './console.js';

let env: TestEnvironment;
let platform: TestPlatform;
let browser: Browser;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { apiKey: string };
let distribution: { apiKey: string };
let store: { storeId: string; catalogSetId: string; soda: string };
let context: BrowserContext;
let page: Page;
/** The X-CSRF-Token of every unsafe request the console sent. */
const csrfTokens: (string | undefined)[] = [];
/** Uncaught errors of the page's scripts: none, ever. */
const pageErrors: string[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  [platform, browser, host] = await Promise.all([
    startPlatform(env),
    launchBrowser(),
    startCatalogHost(),
  ]);
  [commerce, distribution] = await Promise.all([
    platform.newPartner('commerce'),
    platform.newPartner('distribution'),
  ]);
  const storeId = await createStore(platform.baseUrl, commerce.apiKey);
  // A catalog whose soda is on an always-open menu with no required options: carts take it.
  const { document, ids } = cartTestCatalog(storeId);
  await ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document,
  });
  store = { storeId, catalogSetId: ids.catalogSetId, soda: ids.soda };

  context = await newConsoleContext(browser, platform.baseUrl);
  page = await context.newPage();
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    // Every write but the sign-in itself, which has no session yet.
    if (request.method() !== 'GET' && path.startsWith('/v1/') && path !== '/v1/sessions') {
      csrfTokens.push(request.headers()['x-csrf-token']);
    }
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await signIn(page, commerce.apiKey);
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

screenshotOnFailure(() => page);
afterEach(() => expect(pageErrors).toEqual([]));

const storeApi = (path = '') =>
  call(platform.baseUrl, 'GET', `/v1/commerce/stores/${store.storeId}${path}`, {
    apiKey: commerce.apiKey,
  });

const cartAdd = (itemId: string) =>
  call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
    apiKey: distribution.apiKey,
    body: {
      catalogSetId: store.catalogSetId,
      storeId: store.storeId,
      item: { itemId, lineItemId: randomUUID(), quantity: 1 },
    },
  });

const statusBadge = () => page.getByTestId('store-status').textContent();

const openStores = () =>
  page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Stores' }).click();

async function openStoreTab(tab: 'Status' | 'Hours' | 'Item availability') {
  await openStores();
  await page.getByRole('link', { name: 'Chicago Burgers' }).click();
  await page.getByRole('navigation', { name: 'Store' }).getByRole('link', { name: tab }).click();
}

describe('a commerce partner in the console', () => {
  it('sees the stores with their status, and pauses, makes busy and resumes one', async () => {
    await openStores();
    const row = page.getByRole('row', { name: /Chicago Burgers/ });
    await row.waitFor();
    expect(await row.getByText('Online').count()).toBe(1);
    await checkPage(page, 'stores');

    await openStoreTab('Status');
    await expect.poll(statusBadge).toBe('Online');
    await checkPage(page, 'store-status');

    await page.getByLabel('Reason').selectOption('too_busy');
    await page.getByRole('button', { name: 'Pause the store' }).click();
    await expect.poll(statusBadge).toBe('Paused');
    expect((await storeApi('/status')).body).toMatchObject({
      status: 'paused',
      reason: 'too_busy',
      pausedBy: 'partner',
    });
    await checkPage(page, 'store-paused');

    await page.getByRole('button', { name: 'Resume: go online' }).click();
    await expect.poll(statusBadge).toBe('Online');
    expect((await storeApi('/status')).body.status).toBe('online');

    await page.getByLabel('Extra minutes per order').fill('20');
    await page.getByRole('button', { name: 'Mark as busy' }).click();
    await expect.poll(statusBadge).toBe('Busy');
    expect((await storeApi('/status')).body).toMatchObject({
      status: 'busy',
      extraPrepMinutes: 20,
    });
    await page.getByRole('button', { name: 'Resume: go online' }).click();
    await expect.poll(statusBadge).toBe('Online');

    expect(csrfTokens.length).toBeGreaterThanOrEqual(3);
    for (const token of csrfTokens) expect(token).toMatch(/.{16,}/);
  });

  it('sets weekly and special hours', async () => {
    await openStoreTab('Hours');
    await page.getByRole('heading', { name: 'Weekly hours' }).waitFor();
    await checkPage(page, 'store-hours');

    await page.getByRole('button', { name: 'Add hours on Sunday' }).click();
    await page.getByLabel('Sunday window 1 opens').fill('10:00');
    await page.getByLabel('Sunday window 1 closes').fill('15:30');
    await page.getByRole('button', { name: 'Save weekly hours' }).click();
    await page.getByText('Weekly hours saved.').waitFor();
    expect((await storeApi()).body.availability).toContainEqual({
      dayOfWeek: 'Sunday',
      start: '10:00:00',
      end: '15:30:00',
    });

    const date = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('Date').fill(date);
    await page.getByRole('button', { name: 'Add special hours' }).click();
    await page.getByText(`Special hours for ${date} saved.`).waitFor();
    expect((await storeApi('/special-hours')).body.days).toEqual([{ date, closed: true }]);
    await page
      .getByRole('listitem')
      .filter({ hasText: date })
      .getByText('Closed all day')
      .waitFor();
    await checkPage(page, 'store-special-hours');
  });

  it('86s an item until tonight: the cart refuses it, and the switch puts it back', async () => {
    const itemId = store.soda;
    expect((await cartAdd(itemId)).status).toBe(200);

    await openStoreTab('Item availability');
    await page.getByText('Every item of the active catalog is available.').waitFor();
    await checkPage(page, 'store-items');

    await page.getByLabel(/Item ids/).fill(itemId);
    await page.getByRole('button', { name: '86 these items' }).click();
    const toggle = page.getByRole('switch', { name: `Item ${itemId} available` });
    await toggle.waitFor();
    expect(await toggle.getAttribute('aria-checked')).toBe('false');
    const overrides = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${store.storeId}/item-availability`,
      { apiKey: distribution.apiKey },
    );
    const [override] = overrides.body.items;
    expect(override).toMatchObject({ itemId, available: false });
    // Tonight: the next midnight in the store's zone (America/Chicago), within a day.
    const until = new Date(override.until).getTime();
    expect(until).toBeGreaterThan(Date.now());
    expect(until - Date.now()).toBeLessThanOrEqual(25 * 3_600_000);
    expect(
      new Intl.DateTimeFormat('en-US', {
        timeZone: 'America/Chicago',
        hourCycle: 'h23',
        hour: '2-digit',
        minute: '2-digit',
      }).format(until),
    ).toBe('00:00');
    await checkPage(page, 'store-item-86d');

    await expect
      .poll(async () => (await cartAdd(itemId)).body?.errors?.[0]?.code)
      .toBe('ITEM_UNAVAILABLE');

    await toggle.click();
    await page.getByText(`Item ${itemId} is available again.`).waitFor();
    await expect.poll(async () => (await cartAdd(itemId)).status).toBe(200);
  });

  it("shows the API's ProblemDetail with its code, pointer and docs link", async () => {
    await openStoreTab('Item availability');
    const notInCatalog = randomUUID();
    await page.getByLabel(/Item ids/).fill(notInCatalog);
    await page.getByRole('button', { name: '86 these items' }).click();
    const problem = page.getByRole('alert');
    await problem.waitFor();
    expect(await problem.locator('.problem-code').textContent()).toBe('REQUEST_INVALID');
    expect(await problem.getByText('/items/0/itemId').count()).toBe(1);
    expect(
      await problem.getByRole('link', { name: 'What REQUEST_INVALID means' }).getAttribute('href'),
    ).toMatch(/\/docs\/errors\/REQUEST_INVALID$/);
    await checkPage(page, 'store-items-problem');
  });

  it('answers an unknown console address with a page of its own', async () => {
    await page.goto('/console/stores/not-a-store/anything');
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await checkPage(page, 'not-found');
    await page.getByRole('link', { name: 'Go to the overview' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
  });

  it('works on a phone and in the dark theme', async () => {
    const phone = await newConsoleContext(browser, platform.baseUrl, { phone: true });
    const phonePage = await phone.newPage();
    await signIn(phonePage, commerce.apiKey);
    await phonePage.getByRole('row', { name: /Chicago Burgers/ }).waitFor();
    await checkPage(phonePage, 'stores-phone');
    await phone.close();

    await openStoreTab('Status');
    await expect.poll(statusBadge).toBe('Online');
    await page.getByRole('button', { name: 'Use the dark theme' }).click();
    expect(await page.locator('html').getAttribute('data-theme')).toBe('dark');
    await checkPage(page, 'store-status-dark');
    // Keyboard: after a reload (the theme stays), the skip link is the first stop.
    await page.reload();
    await expect.poll(statusBadge).toBe('Online');
    expect(await page.locator('html').getAttribute('data-theme')).toBe('dark');
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string>('document.activeElement.textContent')).toBe(
      'Skip to content',
    );
    await screenshot(page, 'focus-skip-link');
  });
});
