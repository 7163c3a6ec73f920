// A distribution partner in the console (docs/guide/webhooks.md, docs/guide/orders.md#an-orders-timeline):
// registers its endpoint, watches an order's deliveries fail live against a receiver that
// answers 500, go dead, and arrive once the receiver is fixed and the delivery resent; follows
// the order's timeline live while the store moves it over HTTP; rotates the secret and sees
// the next delivery verify with the new one.
import { createPlatformClient, createWebhookVerifier, type PlatformClient } from '@pcp/client';
import { randomUUID } from 'node:crypto';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from '../catalog-host.js';
import { newBuyer, sodaOrder, storeWithSodas } from '../orders.js';
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from '../webhook-receiver.js';
import { checkPage, launchBrowser, newConsoleContext, screenshotOnFailure } from './browser.js';
import { signIn } from './console.js';

type Partner = { partnerId: string; apiKey: string; client: PlatformClient };

let env: TestEnvironment;
let platform: TestPlatform;
let browser: Browser;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let receiver: WebhookReceiver;
let commerce: Partner;
let market: Partner;
let store: Awaited<ReturnType<typeof storeWithSodas>>;
let buyer: { endUser: string; paymentId: string };
let context: BrowserContext;
let page: Page;
/** Uncaught errors of the page's scripts: none, ever. */
const pageErrors: string[] = [];
/** The receiver answers 500 while this holds, 204 after. */
let failing = true;
/** The secret the console showed when the endpoint was registered. */
let firstSecret = '';
let orderId = '';

beforeAll(async () => {
  env = await createTestEnvironment();
  [platform, browser, host, receiver] = await Promise.all([
    startPlatform(env, {
      gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
      orderingEnv: {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOWLIST: '127.0.0.1/32',
        WEBHOOK_POLL_MS: '50',
        // Three tries under a second apart, then dead: each shows in the console as it lands.
        WEBHOOK_RETRY_SCHEDULE_MS: '0,800,800',
      },
    }),
    launchBrowser(),
    startCatalogHost(),
    startWebhookReceiver(),
  ]);
  receiver.answer = () => ({ status: failing ? 500 : 204 });
  const partner = async (
    kind: 'commerce' | 'distribution',
    options?: { paymentTypes: ['CARD'] },
  ): Promise<Partner> => {
    const created = await platform.newPartner(kind, options);
    return {
      ...created,
      client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: created.apiKey }),
    };
  };
  [commerce, market] = await Promise.all([
    partner('commerce'),
    partner('distribution', { paymentTypes: ['CARD'] }),
  ]);
  store = await storeWithSodas(commerce.client, host, { orderSubmissionUrl: undefined });
  buyer = await newBuyer(market.client, '4242424242424242');

  context = await newConsoleContext(browser, platform.baseUrl);
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await signIn(page, market.apiKey);
}, 90_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await receiver?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

screenshotOnFailure(() => page);
afterEach(() => expect(pageErrors).toEqual([]));

const openNav = (label: 'Orders' | 'Webhooks') =>
  page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: label }).click();

/** A delivery's row in the deliveries table, by its event type (and the order's short id). */
const deliveryRow = (type: string, subject: string): Locator =>
  page
    .getByRole('table', { name: 'Webhook deliveries, newest first' })
    .getByRole('row')
    .filter({ hasText: type })
    .filter({ hasText: subject });

const rowText = (row: Locator) => row.first().innerText();

/** Whether a request the receiver got verifies with `secret`. */
function verifies(request: ReceivedWebhook, secret: string): boolean {
  try {
    createWebhookVerifier(secret).verify(request.body, request.headers);
    return true;
  } catch {
    return false;
  }
}

describe('a distribution partner’s webhooks in the console', () => {
  it('registers the endpoint with its events; the secret is shown once, with a copy button', async () => {
    await openNav('Webhooks');
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page.getByText('No endpoint yet.').waitFor();
    await page.getByLabel('URL').fill(receiver.url);
    // The order events are chosen by default; a store event is one more checkbox.
    expect(await page.getByRole('checkbox', { name: /order\.created/ }).isChecked()).toBe(true);
    await page.getByRole('checkbox', { name: /store\.status_changed/ }).check();
    await page.getByRole('button', { name: 'Register endpoint' }).click();

    const secretField = page.getByRole('textbox', { name: 'Signing secret' });
    await secretField.waitFor();
    firstSecret = await secretField.inputValue();
    expect(firstSecret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(firstSecret);
    await expect.poll(() => page.getByTestId('endpoint-status').textContent()).toBe('Active');

    const { data } = await market.client.GET('/v1/marketfront/webhooks');
    expect(data).toMatchObject({
      url: receiver.url,
      status: 'active',
      events: expect.arrayContaining([
        'order.created',
        'order.status_changed',
        'order.cancelled',
        'store.status_changed',
      ]),
    });
    expect(data!.events).toHaveLength(4);
    await checkPage(page, 'webhooks');

    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await secretField.count()).toBe(0);
  });

  it('shows the failing tries live, the delivery dead, then delivered once resent', async () => {
    const placed = await market.client.POST('/v1/marketfront/orders/place', {
      params: { header: { 'X-End-User-Id': buyer.endUser, 'Idempotency-Key': randomUUID() } },
      body: sodaOrder(store.ids, store.storeId, buyer.paymentId),
    });
    expect(placed.response.status).toBe(201);
    orderId = placed.data!.orderId;

    // The page is not reloaded: each try reaches it over the live stream.
    const row = deliveryRow('order.created', orderId.slice(0, 8));
    await expect.poll(() => rowText(row), { timeout: 10_000 }).toMatch(/Failed[\s\S]*HTTP 500/);
    await expect.poll(() => rowText(row), { timeout: 10_000 }).toMatch(/Dead\s+3\s+HTTP 500/);
    expect(receiver.received.filter((one) => one.payload?.data?.orderId === orderId)).toHaveLength(
      3,
    );

    await row.getByRole('button', { name: 'Tries' }).click();
    const tries = page.getByRole('table', { name: 'Tries of order.created v1' });
    await expect
      .poll(async () => (await tries.getByRole('row').allInnerTexts()).slice(1))
      .toEqual([
        expect.stringMatching(/^1\s.*Failed\s+HTTP 500\s+\d+ ms\s+the endpoint answered HTTP 500/),
        expect.stringMatching(/^2\s.*Failed\s+HTTP 500\s+\d+ ms/),
        expect.stringMatching(/^3\s.*Dead\s+HTTP 500\s+\d+ ms/),
      ]);
    await checkPage(page, 'webhook-deliveries-dead');

    failing = false;
    await row.getByRole('button', { name: 'Resend' }).click();
    await expect.poll(() => rowText(row), { timeout: 10_000 }).toMatch(/Delivered\s+1\s+HTTP 204/);
    // The resend's try joins the list; the same webhook-id, signed with the secret shown.
    await expect.poll(async () => (await tries.getByRole('row').allInnerTexts()).length).toBe(5);
    const sent = receiver.received.filter((one) => one.payload?.data?.orderId === orderId);
    expect(sent).toHaveLength(4);
    expect(new Set(sent.map((one) => one.headers['webhook-id'])).size).toBe(1);
    expect(verifies(sent[3]!, firstSecret)).toBe(true);
    expect(await row.getByRole('button', { name: 'Resend' }).count()).toBe(0);
  });

  it('shows the order’s timeline with each try, and each status live as the store moves it', async () => {
    await openNav('Orders');
    const orderLink = page.getByRole('link', { name: new RegExp(`order ${orderId}`) });
    await orderLink.waitFor();
    expect(await page.getByRole('row').filter({ has: orderLink }).innerText()).toMatch(/Pending/);
    await checkPage(page, 'orders');

    await orderLink.click();
    const timeline = page.getByRole('list', { name: 'Timeline' });
    const steps = () => timeline.getByRole('listitem').allInnerTexts();
    await expect
      .poll(steps)
      .toEqual([
        expect.stringMatching(/Placed/),
        expect.stringMatching(/Payment authorized\s+\$23\.64/),
        expect.stringMatching(/Payment captured\s+\$23\.64/),
        expect.stringMatching(/Pending\s+version 1/),
        expect.stringMatching(/order\.created v1, try 1:\s+Failed\s+HTTP 500/),
        expect.stringMatching(/order\.created v1, try 2:\s+Failed\s+HTTP 500/),
        expect.stringMatching(/order\.created v1, try 3:\s+Dead\s+HTTP 500/),
        expect.stringMatching(/order\.created v1, try 1:\s+Delivered\s+HTTP 204/),
      ]);
    await page.getByText('Live', { exact: true }).waitFor();

    // Each move, made over HTTP by the store, shows here with its delivery before the next.
    const moves = [
      [{ status: 'confirmed' }, 2, 'Confirmed'],
      [{ status: 'preparing' }, 3, 'Preparing'],
      [{ status: 'ready' }, 4, 'Ready'],
      [{ state: 'completed' }, 5, 'Completed'],
    ] as const;
    for (const [body, version, label] of moves) {
      const moved = await commerce.client.POST('/v1/commerce/orders/{orderId}/status', {
        params: { path: { orderId } },
        body,
      });
      expect(moved.response.status).toBe(200);
      await expect
        .poll(async () => (await steps()).join('\n'), { timeout: 10_000 })
        .toMatch(
          new RegExp(
            `${label}\\s+version ${version}[^\\n]*\\n(.*\\n)*.*order\\.status_changed v${version}, try 1:\\s+Delivered\\s+HTTP 204`,
          ),
        );
      await expect.poll(() => page.getByTestId('order-status').textContent()).toBe(label);
    }
    expect((await steps()).join('\n')).toMatch(/The store accepted it/);
    await checkPage(page, 'order-timeline');
  });

  it('rotates the secret: the new one is shown once, and the next delivery verifies with it', async () => {
    await openNav('Webhooks');
    await page.getByRole('button', { name: 'Rotate secret…' }).click();
    await page.getByRole('button', { name: 'Rotate now' }).click();
    const secretField = page.getByRole('textbox', { name: 'Signing secret' });
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(firstSecret);
    await page.getByText(/The previous secret keeps working too until .* \(24 hours\)/).waitFor();
    await checkPage(page, 'webhooks-rotated');

    // A store event: its delivery, and its try, show live like an order's.
    const paused = await commerce.client.POST('/v1/commerce/stores/{storeId}/status', {
      params: { path: { storeId: store.storeId } },
      body: { status: 'paused', reason: 'too_busy' },
    });
    expect(paused.response.status).toBe(200);
    const [delivered] = await receiver.waitFor(
      1,
      (one) => one.payload?.type === 'store.status_changed',
    );
    expect(verifies(delivered!, secret)).toBe(true);
    // The previous secret signs it too, until the overlap ends.
    expect(verifies(delivered!, firstSecret)).toBe(true);
    expect(String(delivered!.headers['webhook-signature']).split(' ')).toHaveLength(2);

    const row = deliveryRow('store.status_changed', `Store ${store.storeId.slice(0, 8)}`);
    await expect.poll(() => rowText(row), { timeout: 10_000 }).toMatch(/Delivered\s+1\s+HTTP 204/);
    await row.getByRole('button', { name: 'Tries' }).click();
    await expect
      .poll(async () =>
        (
          await page
            .getByRole('table', { name: /^Tries of store\.status_changed/ })
            .getByRole('row')
            .allInnerTexts()
        ).slice(1),
      )
      .toEqual([expect.stringMatching(/^1\s.*Delivered\s+HTTP 204\s+\d+ ms/)]);

    // Shown once: leave the page and come back, and it is gone.
    await openNav('Orders');
    await openNav('Webhooks');
    await page.getByRole('button', { name: 'Rotate secret…' }).waitFor();
    expect(await secretField.count()).toBe(0);
    await page.getByText(/The previous secret also signs deliveries until/).waitFor();
  });
});
