/**
 * The console's catalog pages: a store's ingest runs (followed live until they end), a run's
 * errors at their JSON pointers, the dry run of a CatalogSet URL and "Notify a change".
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from '../catalog-host.js';
import { call } from '../http.js';
import { createStore, ingestCatalog } from '../ingest.js';
import { checkPage, launchBrowser, newConsoleContext, screenshotOnFailure } from './browser.js';
import { signIn } from './console.js';

let env: TestEnvironment;
let platform: TestPlatform;
let browser: Browser;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { apiKey: string };
let distribution: { apiKey: string };
let storeId: string;
let catalog: ReturnType<typeof cartTestCatalog>;
let context: BrowserContext;
let page: Page;
/** Uncaught errors of the page's scripts: none, ever. */
const pageErrors: string[] = [];
/** Dialogs the page opened (hostile input must not open any). */
const dialogs: string[] = [];

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
  storeId = await createStore(platform.baseUrl, commerce.apiKey);
  catalog = cartTestCatalog(storeId);
  await ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document: catalog.document,
  });

  context = await newConsoleContext(browser, platform.baseUrl);
  page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
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
afterEach(() => {
  expect(pageErrors).toEqual([]);
  expect(dialogs).toEqual([]);
});

const MISSING_ITEM = 'deadbeef-0000-4000-9000-000000000000';

/**
 * The cart catalog with three mistakes, and the pointers the platform reports them at: a
 * soda price finer than USD allows, a required side group whose maximum is below its
 * minimum, and a section listing an item that is not in the document.
 */
function badCatalog() {
  const { ids } = catalog;
  const document = structuredClone(catalog.document);
  document.items[ids.soda]!.basePrice = 1.999;
  document.modifierGroups[ids.side]!.minimumAllowed = 2;
  document.sections[ids.mains]!.itemIds.push(MISSING_ITEM);
  const pointers = [
    `/items/${ids.soda}/basePrice`,
    `/modifierGroups/${ids.side}/maximumAllowed`,
    `/sections/${ids.mains}/itemIds/3`,
  ].sort();
  return { document, pointers };
}

const runsTable = () => page.getByRole('table', { name: /catalog ingest runs/ });
/** The newest run's row (the header row is row 0). */
const newestRun = () => runsTable().getByRole('row').nth(1);
const newestState = () => newestRun().getByRole('cell').first().textContent();
const runCount = async () => (await runsTable().getByRole('row').count()) - 1;

/** The pointers an errors table shows, as the page renders them, sorted. */
async function shownPointers(tableName: RegExp): Promise<string[]> {
  const table = page.getByRole('table', { name: tableName });
  await table.waitFor();
  return (await table.getByRole('rowheader').allTextContents()).sort();
}

async function openCatalog() {
  await page.goto(`/console/stores/${storeId}`);
  await page
    .getByRole('navigation', { name: 'Store' })
    .getByRole('link', { name: 'Catalog' })
    .click();
  await runsTable().waitFor();
}

const activeCatalog = () => page.getByTestId('active-catalog').textContent();

function readCatalogSet() {
  return call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}/catalogset`, {
    apiKey: distribution.apiKey,
  });
}

describe('the catalog of a store in the console', () => {
  // A real ingest run, followed by polling (2 s, then backing off): more than the default.
  it(
    'watches a bad CatalogSet fail its ingest and reads each error at its pointer',
    { timeout: 40_000 },
    async () => {
      await openCatalog();
      expect(await runCount()).toBe(1);
      expect(await newestState()).toBe('Succeeded');
      expect(await activeCatalog()).toBe(catalog.ids.catalogSetId);
      await checkPage(page, 'store-catalog');

      const bad = badCatalog();
      const url = host.serveJson(`/${randomUUID()}.json`, bad.document);
      await page.getByLabel('CatalogSet URL').fill(url);
      await page.getByRole('button', { name: 'Notify a change' }).click();
      await page.getByText(/Ingest queued as run/).waitFor();
      // The console follows the run it started: no reload, no click.
      await expect.poll(runCount).toBe(2);
      await expect.poll(newestState, { timeout: 20_000 }).toBe('Failed');
      await newestRun().getByRole('link', { name: '3 errors' }).waitFor();
      await checkPage(page, 'store-catalog-run-failed');

      await newestRun().getByRole('link', { name: '3 errors' }).click();
      const errors = /3 errors: the active catalog did not change/;
      expect(await shownPointers(errors)).toEqual(bad.pointers);
      const table = page.getByRole('table', { name: errors });
      const price = table.getByRole('row').filter({ hasText: `/items/${catalog.ids.soda}` });
      expect(await price.getByRole('cell').textContent()).toMatch(
        /^PRECISION_EXCEEDED basePrice 1\.999 of item .+ more fraction digits than USD allows/,
      );
      expect(await price.locator('.error-code').textContent()).toBe('PRECISION_EXCEEDED');
      expect(
        await table
          .getByRole('row')
          .filter({ hasText: `/sections/${catalog.ids.mains}/itemIds/3` })
          .getByRole('cell')
          .textContent(),
      ).toContain(`references item ${MISSING_ITEM}, which is not in items`);
      expect(await page.getByText('Failed', { exact: true }).count()).toBe(1);
      await checkPage(page, 'store-catalog-run-errors');

      // Nothing changed for readers.
      const store = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}`, {
        apiKey: commerce.apiKey,
      });
      expect(store.body.catalogSetId).toBe(catalog.ids.catalogSetId);
    },
  );

  it("reads a failed run's errors on a phone, in the dark theme", async () => {
    // The page the last test left: the failed run. The pointers wrap, the table keeps its headers.
    const errors = /3 errors: the active catalog did not change/;
    const phone = await newConsoleContext(browser, platform.baseUrl, { phone: true });
    try {
      const phonePage = await phone.newPage();
      await signIn(phonePage, commerce.apiKey);
      await phonePage.getByRole('button', { name: 'Use the dark theme' }).click();
      await phonePage.goto(page.url());
      await phonePage.getByRole('table', { name: errors }).waitFor();
      await checkPage(phonePage, 'store-catalog-run-errors-phone-dark');
    } finally {
      await phone.close();
    }
  });

  it('shows a good catalog, ingested through the API, succeed with its change summary', async () => {
    await openCatalog();
    await page.getByText('Live', { exact: true }).waitFor();
    const runsBefore = await runCount();

    // One item added and the burger repriced: the page learns of it from the live stream.
    const { ids } = catalog;
    const document = structuredClone(catalog.document);
    const shake = randomUUID();
    document.items[shake] = { itemId: shake, name: 'Shake', basePrice: 4.5 };
    document.sections[ids.mains]!.itemIds.push(shake);
    document.items[ids.burger]!.basePrice = 10.25;
    await ingestCatalog({
      baseUrl: platform.baseUrl,
      apiKey: commerce.apiKey,
      storeId,
      host,
      document,
    });

    await expect.poll(runCount).toBe(runsBefore + 1);
    await expect.poll(newestState).toBe('Succeeded');
    expect(await newestRun().getByRole('cell').last().textContent()).toBe(
      '1 added · 0 removed · 1 price changed' + '10 items · 2 sections · 3 modifier groups',
    );
    await checkPage(page, 'store-catalog-run-succeeded');

    await newestRun().getByRole('rowheader').getByRole('link').click();
    await page
      .getByRole('heading', { name: 'Changes against the catalog active before' })
      .waitFor();
    expect(await page.getByTestId('change-summary').textContent()).toBe(
      '1 added · 0 removed · 1 price changed',
    );
    await checkPage(page, 'store-catalog-run-detail');
    await page.getByRole('link', { name: 'All ingest runs' }).click();
    await runsTable().waitFor();
  });

  it('dry-runs a bad URL: its errors at their pointers, and the active catalog unchanged', async () => {
    await openCatalog();
    const before = await readCatalogSet();
    expect(before.status).toBe(200);
    const runsBefore = await runCount();

    const bad = badCatalog();
    await page
      .getByLabel('CatalogSet URL')
      .fill(host.serveJson(`/${randomUUID()}.json`, bad.document));
    await page.getByRole('button', { name: 'Dry run' }).click();
    await page.getByText('Invalid: 3 errors. An ingest would fail.').waitFor();
    expect(await shownPointers(/Errors of the dry run/)).toEqual(bad.pointers);
    await checkPage(page, 'store-catalog-dry-run-invalid');

    const after = await readCatalogSet();
    expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
    expect(await runCount()).toBe(runsBefore);
    const listed = await call(
      platform.baseUrl,
      'GET',
      `/v1/commerce/stores/${storeId}/catalog-ingests`,
      { apiKey: commerce.apiKey },
    );
    expect(listed.body.ingests).toHaveLength(runsBefore);

    // The active document itself: valid, and nothing would change.
    await page
      .getByLabel('CatalogSet URL')
      .fill(host.serveJson(`/${randomUUID()}.json`, after.body));
    await page.getByRole('button', { name: 'Dry run' }).click();
    await page.getByText('Valid: an ingest of this document would succeed.').waitFor();
    expect(await page.getByTestId('change-summary').textContent()).toBe(
      '0 added · 0 removed · 0 prices changed',
    );
    await checkPage(page, 'store-catalog-dry-run-valid');
  });

  it("shows the API's ProblemDetail for a huge or garbage URL", async () => {
    await openCatalog();
    const field = page.getByLabel('CatalogSet URL');
    await field.fill(`https://partner.example/${'a'.repeat(10_000)}.json`);
    await page.getByRole('button', { name: 'Dry run' }).click();
    const problem = page.getByRole('alert');
    await problem.waitFor();
    expect(await problem.locator('.problem-code').textContent()).toBe('REQUEST_INVALID');
    expect(await problem.locator('.problem-errors code').textContent()).toBe('/callbackUrl');
    await checkPage(page, 'store-catalog-dry-run-problem');

    // A NUL is refused at its pointer, not sent on.
    await field.fill('https://partner.example/\u0000.json');
    await page.getByRole('button', { name: 'Dry run' }).click();
    await expect
      .poll(() => problem.locator('.problem-errors').textContent())
      .toBe('/callbackUrl Must not contain the NUL character (U+0000)');

    // Markup in a URL the platform cannot download from is shown as text, with the
    // download's failure against the whole document.
    const markup = 'https://127.0.0.1:1/<img src=x onerror=alert(1)>.json';
    await field.fill(markup);
    await page.getByRole('button', { name: 'Dry run' }).click();
    await page.getByText('Invalid: 1 error. An ingest would fail.').waitFor();
    expect(await page.locator('.verdict-url code').textContent()).toBe(markup);
    expect(await shownPointers(/Errors of the dry run/)).toEqual(['The whole document']);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    await checkPage(page, 'store-catalog-dry-run-unreachable');
  });

  it('pages older runs with Load older', async () => {
    // Notifications in a row: the queued ones are superseded, the last one is ingested.
    const url = host.serveJson(`/${randomUUID()}.json`, catalog.document);
    for (let i = 0; i < 20; i++) {
      const accepted = await call(
        platform.baseUrl,
        'POST',
        `/v1/commerce/catalogset-notification?storeId=${storeId}`,
        { apiKey: commerce.apiKey, body: { callbackUrl: url } },
      );
      expect(accepted.status).toBe(202);
    }
    const listAll = async () =>
      (
        await call(
          platform.baseUrl,
          'GET',
          `/v1/commerce/stores/${storeId}/catalog-ingests?limit=100`,
          { apiKey: commerce.apiKey },
        )
      ).body.ingests as { state: string }[];
    await expect
      .poll(
        async () => (await listAll()).every((run) => ['succeeded', 'failed'].includes(run.state)),
        {
          timeout: 20_000,
        },
      )
      .toBe(true);
    const total = (await listAll()).length;
    expect(total).toBeGreaterThan(20);

    await openCatalog();
    expect(await runCount()).toBe(20);
    const older = page.getByRole('button', { name: 'Load older' });
    await older.click();
    await expect.poll(runCount).toBe(total);
    expect(await older.count()).toBe(0);
    await checkPage(page, 'store-catalog-all-runs');
  });
});
