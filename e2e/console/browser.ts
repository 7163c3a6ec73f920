/**
 * The console's browser harness: Debian's Chromium driven by playwright-core (which downloads
 * no browser of its own), axe-core run inside each page, a screenshot of each page under
 * test-results/console/.
 */
import type { AxeResults } from 'axe-core';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterEach, expect } from 'vitest';

/** Debian's `chromium` package (`.ci/run` installs it); CHROMIUM_PATH names another. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Chromium as root, on a machine whose network is closed: no sandbox (root), no GPU, and no
 * background connections (component updates, sync, QUIC probes) that would be refused.
 * playwright-core starts each browser on a fresh, empty user-data-dir of its own.
 */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const SCREENSHOT_DIR = resolve(import.meta.dirname, '..', '..', 'test-results', 'console');

export function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`No Chromium at ${CHROMIUM}: install it with apt-get install -y chromium`);
  }
  // headless: true is Chromium's own --headless.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
}

/** A context (its own cookies and storage, like a fresh profile) on the console's origin. */
export async function newConsoleContext(
  browser: Browser,
  baseUrl: string,
  options: { phone?: boolean } = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({
    baseURL: baseUrl,
    viewport: options.phone ? { width: 390, height: 844 } : { width: 1280, height: 860 },
    ...(options.phone ? { isMobile: true, hasTouch: true } : {}),
    colorScheme: 'light',
    reducedMotion: 'reduce',
  });
  // A step that waits longer than this is a failure with its locator named, not a test timeout.
  context.setDefaultTimeout(8_000);
  return context;
}

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);

/**
 * axe-core on the page as it is now: no serious or critical violation. Its source is
 * evaluated through the DevTools protocol, which the page's CSP does not govern.
 */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  await page.evaluate(axeSource);
  const results = await page.evaluate<AxeResults>(
    "axe.run(document, { resultTypes: ['violations'] })",
  );
  const serious = results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} at ` +
        violation.nodes.map((node) => node.target.join(' ')).join(', '),
    );
  expect(serious, `axe-core on ${name}`).toEqual([]);
}

/** Write a full-page screenshot to test-results/console/<name>.png and print its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot of ${name}: ${path}`);
  return path;
}

/** Every page the tests visit: accessible, and photographed. */
export async function checkPage(page: Page, name: string): Promise<void> {
  await expectAccessible(page, name);
  await screenshot(page, name);
}

/** Everything the page keeps in storage and its readable cookies, as one string to search. */
export async function pageStorage(page: Page): Promise<string> {
  const web = await page.evaluate<string>(
    'JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie])',
  );
  const cookies = await page.context().cookies();
  const state = await page.context().storageState();
  return JSON.stringify({ web, cookies, state, url: page.url() });
}

/** After each failed test of the file, a screenshot of `page()` as the test left it. */
export function screenshotOnFailure(page: () => Page | undefined): void {
  afterEach(async (context) => {
    const current = page();
    if (context.task.result?.state !== 'fail' || !current || current.isClosed()) return;
    const name = context.task.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 60);
    await screenshot(current, `failed-${name}`);
  });
}
