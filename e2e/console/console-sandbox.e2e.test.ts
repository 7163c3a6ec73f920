/**
 * The console's Sandbox page (docs/guide/sandbox.md) for a test-mode distribution partner: the
 * fixture stores, a test order placed with a button and moved with the advance helper (to ready,
 * and another to timeout), the webhook stream showing their events as they arrive, and the
 * reset with its counts. A live session has no Sandbox page. A test-mode commerce partner places
 * a customer's test order at its own store with the test helper and advances it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { startCatalogHost } from '../catalog-host.js';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { call } from '../http.js';
import { ingestCatalog } from '../ingest.js';
import { checkPage, launchBrowser, newConsoleContext, screenshotOnFailure } from './browser.js';
import { signIn } from './console.js';

let env: TestEnvironment;
let platform: TestPlatform;
let browser: Browser;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let context: BrowserContext;
let page: Page;
/** Uncaught errors of the page's scripts: none, ever. */
const pageErrors: string[] = [];
/** How long a poll waits for the page (placing an order takes a few requests). */
const wait = { timeout: 8_000 };

beforeAll(async () => {
  env = await createTestEnvironment();
  [platform, browser, host] = await Promise.all([
    // The kitchen slowed a hundredfold: only the page's helpers move the orders here.
    startPlatform(env, { orderingEnv: { ORDERING_FIXTURE_KITCHEN_STEP_SCALE: '100' } }),
    launchBrowser(),
    startCatalogHost(),
  ]);
  context = await newConsoleContext(browser, platform.baseUrl);
  page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 60_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

screenshotOnFailure(() => page);
afterEach(() => expect(pageErrors).toEqual([]));

const nav = () => page.getByRole('navigation', { name: 'Console' });
const stream = () => page.getByRole('list', { name: 'Webhook events, newest first' });
const orderRows = () => page.locator('.test-order');

/** The stream's event types, newest first. */
const streamTypes = () => stream().locator('.stream-type').allTextContents();

async function advance(row: Locator, to: string) {
  const form = row.getByRole('form');
  await form.getByRole('combobox').selectOption(to);
  await form.getByRole('button', { name: 'Advance' }).click();
}

/** A fresh browser profile signed in with `apiKey` (the previous one closed). */
async function openConsole(apiKey: string) {
  await context.close();
  context = await newConsoleContext(browser, platform.baseUrl);
  page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await signIn(page, apiKey);
}

describe('the Sandbox page of a test-mode distribution partner', () => {
  it('places a test order at a fixture store, advances it, and shows the stream', async () => {
    const partner = await platform.newPartner('distribution', { mode: 'test' });
    await signIn(page, partner.apiKey);
    await nav().getByRole('link', { name: 'Sandbox' }).click();
    await page.getByRole('heading', { name: 'Sandbox', level: 1 }).waitFor();

    // The three fixture stores, read from the API.
    for (const name of [
      'Hudson Street Diner (test)',
      'Borough Chippy (test)',
      'Shibuya Ramen House (test)',
    ]) {
      await page.getByRole('button', { name: `Place a test order at ${name}` }).waitFor();
    }
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    await page.getByText('No events yet').waitFor();
    await checkPage(page, 'sandbox-empty');

    await page
      .getByRole('button', { name: 'Place a test order at Hudson Street Diner (test)' })
      .click();
    await page.getByText('Placed a test order at Hudson Street Diner (test).').waitFor();
    await expect.poll(() => orderRows().count(), wait).toBe(1);
    const first = orderRows().first();
    await expect.poll(() => first.getByTestId('order-status').textContent(), wait).toBe('pending');
    await expect.poll(streamTypes, wait).toEqual(['order.created']);

    await advance(first, 'ready');
    await first.getByText(/advanced to ready/).waitFor();
    await expect.poll(() => first.getByTestId('order-status').textContent(), wait).toBe('ready');
    // confirmed, preparing, ready: one webhook per step, newest first.
    await expect
      .poll(streamTypes, wait)
      .toEqual([
        'order.status_changed',
        'order.status_changed',
        'order.status_changed',
        'order.created',
      ]);
    await expect
      .poll(
        () =>
          stream()
            .getByText(/ready · v4/)
            .count(),
        wait,
      )
      .toBe(1);

    // A second order let past its acceptance window: the platform cancels it.
    await page.getByRole('button', { name: 'Place a test order at Borough Chippy (test)' }).click();
    await expect.poll(() => orderRows().count(), wait).toBe(2);
    const second = orderRows().first();
    await advance(second, 'timeout');
    await expect
      .poll(() => second.getByTestId('order-status').textContent(), wait)
      .toBe('cancelled');
    await expect.poll(async () => (await streamTypes())[0], wait).toBe('order.cancelled');
    // A move the status machine refuses shows the platform's ProblemDetail.
    await advance(orderRows().nth(1), 'confirmed');
    await orderRows()
      .nth(1)
      .getByRole('alert')
      .getByText('ORDER_STATUS_TRANSITION_INVALID', { exact: true })
      .waitFor();
    await checkPage(page, 'sandbox');

    // The reset asks first, then shows what it deleted, table by table.
    await page.getByRole('button', { name: 'Reset test data…' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm the reset' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => confirm.count(), wait).toBe(0);
    await page.getByRole('button', { name: 'Reset test data…' }).click();
    await checkPage(page, 'sandbox-reset-confirm');
    await confirm.getByRole('button', { name: 'Delete my test data' }).click();
    const counts = page.getByRole('table', { name: 'Rows deleted, by service and table' });
    await counts.waitFor();
    await expect
      .poll(() => counts.getByRole('row', { name: /ordering\.orders/ }).textContent(), wait)
      .toMatch(/ordering\.orders\s*2$/);
    await page.getByText('No test orders yet').waitFor();
    await page.getByText('No events yet').waitFor();
    await checkPage(page, 'sandbox-reset');
  }, 60_000);

  it('is not there for a live session', async () => {
    const live = await platform.newPartner('distribution');
    await openConsole(live.apiKey);
    await nav().getByRole('link', { name: 'Requests' }).waitFor();
    expect(await nav().getByRole('link', { name: 'Sandbox' }).count()).toBe(0);
    await page.goto('/console/sandbox');
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await checkPage(page, 'sandbox-live-not-found');
  });
});

describe('the Sandbox page of a test-mode commerce partner', () => {
  it("places a customer's test order at its own test store and advances it", async () => {
    const partner = await platform.newPartner('commerce', { mode: 'test' });
    // Open whenever the test runs, and taking orders without a submission URL.
    const storeId = randomUUID();
    const created = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
      apiKey: partner.apiKey,
      body: storeProfile({ availability: alwaysOpen, orderSubmissionUrl: null }),
    });
    expect(created.status, created.text).toBe(201);
    const { document } = cartTestCatalog(storeId);
    await ingestCatalog({
      baseUrl: platform.baseUrl,
      apiKey: partner.apiKey,
      storeId,
      host,
      document,
    });
    await openConsole(partner.apiKey);
    await nav().getByRole('link', { name: 'Sandbox' }).click();

    await page.getByRole('button', { name: 'Place a test order at Chicago Burgers' }).click();
    await page.getByText('Placed a test order at Chicago Burgers.').waitFor();
    const order = orderRows().first();
    await expect.poll(() => order.getByTestId('order-status').textContent(), wait).toBe('pending');
    await advance(order, 'preparing');
    await expect
      .poll(() => order.getByTestId('order-status').textContent(), wait)
      .toBe('preparing');
    await checkPage(page, 'sandbox-commerce');
  }, 60_000);
});
