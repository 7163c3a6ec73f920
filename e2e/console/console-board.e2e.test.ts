// The order board of the console (store › Orders): a distribution partner places orders over
// HTTP, the commerce partner watches them arrive live, accepts one and moves it to completed
// (each move reaching the distribution partner's webhook receiver, signed), denies another
// with an item that ran out, and sees an order the platform cancelled leave the board.
import {
  createPlatformClient,
  createWebhookVerifier,
  type PlaceOrderRequest,
  type PlatformClient,
} from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import type { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from '../catalog-host.js';
import { newBuyer, storeWithSodas } from '../orders.js';
import { startWebhookReceiver, type WebhookReceiver } from '../webhook-receiver.js';
import { checkPage, launchBrowser, newConsoleContext, screenshotOnFailure } from './browser.js';
import { signIn } from './console.js';

type Partner = { partnerId: string; apiKey: string; client: PlatformClient };
type LineItem = PlaceOrderRequest['cart']['lineItems'][number];

// The platform's clock (stores and ordering): the last test moves it past a deadline.
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let receiver: WebhookReceiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let commerce: Partner;
let market: Partner;
let store: { storeId: string; ids: ReturnType<typeof cartTestCatalog>['ids'] };
let buyer: { endUser: string; paymentId: string };
let verify: (request: { body: string; headers: Record<string, unknown> }) => unknown;
/** Uncaught errors of the page's scripts: none, ever. */
const pageErrors: string[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  [platform, browser, host, receiver] = await Promise.all([
    startPlatform(env, {
      clock,
      gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
      orderingEnv: {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOWLIST: '127.0.0.1/32',
        WEBHOOK_POLL_MS: '50',
      },
    }),
    launchBrowser(),
    startCatalogHost(),
    startWebhookReceiver(),
  ]);
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
  // No submission URL: orders wait, pending, for the store's answer on the board.
  store = await storeWithSodas(commerce.client, host, { orderSubmissionUrl: undefined });
  buyer = await newBuyer(market.client, '4242424242424242');
  const endpoint = await market.client.PUT('/v1/marketfront/webhooks', {
    body: {
      url: receiver.url,
      events: ['order.created', 'order.status_changed', 'order.cancelled'],
    },
  });
  expect(endpoint.response.status).toBe(201);
  const verifier = createWebhookVerifier(endpoint.data!.secret!);
  verify = (request) => verifier.verify(request.body, request.headers as Record<string, string>);

  context = await newConsoleContext(browser, platform.baseUrl);
  page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await signIn(page, commerce.apiKey);
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

const soda = (quantity: number): LineItem => ({
  itemId: store.ids.soda,
  lineItemId: randomUUID(),
  quantity,
});
const burgerWithFries = (): LineItem => ({
  itemId: store.ids.burger,
  lineItemId: randomUUID(),
  quantity: 1,
  modifierGroups: [
    {
      modifierGroupId: store.ids.side,
      lineItems: [{ itemId: store.ids.fries, lineItemId: randomUUID(), quantity: 1 }],
    },
  ],
});

/** Place an order as the distribution partner would: validate for the total, then place. */
async function placeOrder(lineItems: LineItem[], specialInstructions?: string): Promise<string> {
  const body = {
    cart: { catalogSetId: store.ids.catalogSetId, storeId: store.storeId, lineItems },
    fulfillment: { mode: 'PICKUP' as const, scheduleType: 'ASAP' as const },
    client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
    customer: {
      firstName: 'Pat',
      lastName: 'Doe',
      phone: '+13125550100',
      email: 'pat@example.com',
    },
    paymentType: 'CARD' as const,
    paymentId: buyer.paymentId,
    ...(specialInstructions ? { specialInstructions } : {}),
  };
  const headers = { 'X-End-User-Id': buyer.endUser };
  const validated = await market.client.POST('/v1/marketfront/orders/validate', {
    params: { header: headers },
    body,
  });
  expect(validated.data?.errors).toEqual([]);
  const placed = await market.client.POST('/v1/marketfront/orders/place', {
    params: { header: { ...headers, 'Idempotency-Key': randomUUID() } },
    body: { ...body, amounts: { total: validated.data!.amounts!.total } },
  });
  expect(placed.response.status).toBe(201);
  expect(placed.data!.status).toBe('pending');
  return placed.data!.orderId;
}

const label = (orderId: string) => `Order #${orderId.slice(-6).toUpperCase()}`;
const board = () => page.getByRole('region', { name: 'Open orders' });
const lane = (name: string) => board().getByRole('region', { name: new RegExp(`^${name} \\d+$`) });
const card = (orderId: string, within: Locator = board()) =>
  within.getByRole('article', { name: label(orderId) });

/** The order's webhooks, verified with the endpoint's secret, until one has `status`. */
async function webhookWith(orderId: string, status: string) {
  const [request] = await receiver.waitFor(
    1,
    (seen) => seen.payload?.data?.orderId === orderId && seen.payload.data.status === status,
  );
  expect(verify(request!)).toEqual(request!.payload);
  return request!.payload as { type: string; data: { version: number; status: string } };
}

async function openBoard(target = page) {
  await target.goto(`/console/stores/${store.storeId}/orders`);
  await target
    .getByRole('status')
    .filter({ hasText: /^Live$/ })
    .waitFor();
}

describe('the order board of a store', () => {
  it('shows a new order live with its countdown; accept and every move to completed', async () => {
    await openBoard();
    await lane('Pending').getByText('No pending orders.').waitFor();
    await checkPage(page, 'store-orders-empty');

    const orderId = await placeOrder([soda(3)], 'No ice, please');
    const pending = card(orderId, lane('Pending'));
    await pending.waitFor();
    expect(await pending.getByRole('listitem').allTextContents()).toEqual(['3 × Soda']);
    await pending.getByText('Customer notes: No ice, please').waitFor();
    await pending.getByText(/Pat Doe/).waitFor();
    await pending.getByText(/Total \$\d+\.\d\d/).waitFor();
    // mm:ss to the store's 10-minute window, ticking; screen readers get the deadline once.
    const countdown = pending.getByTestId('countdown');
    const first = await countdown.textContent();
    expect(first).toMatch(/^(10:00|09:[0-5]\d)$/);
    await expect.poll(() => countdown.textContent(), { timeout: 5_000 }).not.toBe(first);
    expect(await countdown.getAttribute('aria-hidden')).toBe('true');
    await pending.getByText(/^Accept by /).waitFor({ state: 'attached' });
    expect(await pending.locator('.countdown-urgent').count()).toBe(0);
    await checkPage(page, 'store-orders-pending');

    expect(await webhookWith(orderId, 'pending')).toMatchObject({
      type: 'order.created',
      data: { version: 1 },
    });
    const moves = [
      { button: 'Accept', lane: 'Confirmed', status: 'confirmed' },
      { button: 'Start preparing', lane: 'Preparing', status: 'preparing' },
      { button: 'Mark ready', lane: 'Ready', status: 'ready' },
    ];
    for (const [index, move] of moves.entries()) {
      await card(orderId).getByRole('button', { name: move.button }).click();
      await card(orderId, lane(move.lane)).waitFor();
      expect(await card(orderId, lane(move.lane)).getByRole('button').allTextContents()).toEqual(
        move.status === 'ready'
          ? ['Complete (picked up)', 'Cancel order']
          : [moves[index + 1]!.button, 'Cancel order'],
      );
      expect(await webhookWith(orderId, move.status)).toMatchObject({
        type: 'order.status_changed',
        data: { version: index + 2 },
      });
      await checkPage(page, `store-orders-${move.status}`);
    }

    await card(orderId).getByRole('button', { name: 'Complete (picked up)' }).click();
    const completed = page.getByRole('region', { name: 'Completed' });
    await completed.getByRole('row', { name: new RegExp(label(orderId).slice(6)) }).waitFor();
    expect(await card(orderId).count()).toBe(0);
    expect(await webhookWith(orderId, 'completed')).toMatchObject({
      type: 'order.status_changed',
      data: { version: 5 },
    });
    await checkPage(page, 'store-orders-completed');

    // Moves made elsewhere (another tab, the partner's own system) reach the board live.
    const second = await placeOrder([soda(3)]);
    await card(second, lane('Pending')).waitFor();
    const moved = await commerce.client.POST('/v1/commerce/orders/{orderId}/status', {
      params: { path: { orderId: second } },
      body: { status: 'confirmed' },
    });
    expect(moved.response.status).toBe(200);
    // Moved elsewhere: the board follows the live event.
    await card(second, lane('Confirmed')).waitFor();
    const cancelled = await commerce.client.POST('/v1/commerce/orders/{orderId}/status', {
      params: { path: { orderId: second } },
      body: { state: 'cancelled', cancelReason: 'Closing early' },
    });
    expect(cancelled.response.status).toBe(200);
    await page
      .getByRole('region', { name: 'Cancelled' })
      .getByRole('row', { name: /Closing early/ })
      .waitFor();
    expect(await card(second).count()).toBe(0);
  }, 120_000);

  it('denies an order with the item that ran out: it is unavailable, and the timeline says so', async () => {
    await openBoard();
    const orderId = await placeOrder([burgerWithFries(), soda(2)]);
    const pending = card(orderId, lane('Pending'));
    await pending.waitFor();
    expect(await pending.getByRole('listitem').allTextContents()).toEqual([
      '1 × Burger (Fries)',
      '2 × Soda',
    ]);

    await pending.getByRole('button', { name: 'Deny' }).click();
    const form = pending.getByRole('form', { name: `Deny ${label(orderId).toLowerCase()}` });
    // The reason is required: the browser keeps an empty one from being sent.
    await form.getByRole('button', { name: 'Deny order' }).click();
    expect(await pending.isVisible()).toBe(true);
    await form.getByLabel(/^Reason/).fill('Out of soda');
    await form.getByRole('checkbox', { name: 'Soda' }).check();
    expect(await form.getByRole('checkbox', { name: 'Burger' }).isChecked()).toBe(false);
    await checkPage(page, 'store-orders-deny');
    await form.getByRole('button', { name: 'Deny order' }).click();

    await page
      .getByRole('region', { name: 'Cancelled' })
      .getByRole('row', { name: /Out of soda/ })
      .waitFor();
    expect(await card(orderId).count()).toBe(0);
    expect(await webhookWith(orderId, 'cancelled')).toMatchObject({ type: 'order.cancelled' });

    const availability = await commerce.client.GET(
      '/v1/commerce/stores/{storeId}/item-availability',
      { params: { path: { storeId: store.storeId } } },
    );
    expect(availability.data!.items).toEqual([
      { itemId: store.ids.soda, available: false, until: expect.any(String) as string },
    ]);
    const timeline = await market.client.GET('/v1/marketfront/orders/{orderId}/timeline', {
      params: { path: { orderId } },
    });
    expect(timeline.data!.events.filter((event) => event.kind === 'store')).toEqual([
      expect.objectContaining({
        action: 'denied',
        reason: 'Out of soda',
        unavailableItemIds: [store.ids.soda],
      }),
    ]);
    // Soda back on: the next tests order it.
    const cleared = await commerce.client.PUT('/v1/commerce/stores/{storeId}/item-availability', {
      params: { path: { storeId: store.storeId } },
      body: { items: [{ itemId: store.ids.soda, available: true }] },
    });
    expect(cleared.response.status).toBe(200);
    await checkPage(page, 'store-orders-denied');
  }, 60_000);

  it('shows a move the order no longer allows as the API refused it', async () => {
    // A second tab that hears no live events: its board stays as it was read.
    const stale = await context.newPage();
    await stale.route('**/events', (route) => route.abort());
    const orderId = await placeOrder([soda(5)]);
    await stale.goto(`/console/stores/${store.storeId}/orders`);
    const staleCard = stale
      .getByRole('region', { name: 'Open orders' })
      .getByRole('article', { name: label(orderId) });
    await staleCard.waitFor();

    const cancelled = await commerce.client.POST('/v1/commerce/orders/{orderId}/status', {
      params: { path: { orderId } },
      body: { state: 'cancelled', cancelReason: 'Kitchen closed' },
    });
    expect(cancelled.response.status).toBe(200);
    await staleCard.getByRole('button', { name: 'Accept' }).click();
    const problem = staleCard.getByRole('alert');
    await problem.waitFor();
    expect(await problem.locator('.problem-code').textContent()).toBe(
      'ORDER_STATUS_TRANSITION_INVALID',
    );
    expect(await problem.textContent()).toMatch(/HTTP 409/);
    await checkPage(stale, 'store-orders-refused');
    await stale.close();
  }, 60_000);

  it('loses an order the platform cancelled; on a phone the board is one list', async () => {
    await openBoard();
    const orderId = await placeOrder([soda(4)]);
    await card(orderId, lane('Pending')).waitFor();

    const phone = await newConsoleContext(browser, platform.baseUrl, { phone: true });
    const phonePage = await phone.newPage();
    phonePage.on('pageerror', (error) => pageErrors.push(error.message));
    await signIn(phonePage, commerce.apiKey);
    await openBoard(phonePage);
    const phoneCard = phonePage.getByRole('article', { name: label(orderId) });
    await phoneCard.waitFor();
    // One column: each lane below the one before it, as wide as the page.
    const lanes = await phonePage
      .locator('.lane')
      .evaluateAll((nodes) =>
        nodes
          .map((node) => node.getBoundingClientRect())
          .map(({ x, y, width }) => ({ x, y, width })),
      );
    expect(new Set(lanes.map((box) => box.x)).size).toBe(1);
    expect(lanes.map((box) => box.y)).toEqual([...lanes.map((box) => box.y)].sort((a, b) => a - b));
    expect(await phonePage.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
      390,
    );
    await checkPage(phonePage, 'store-orders-phone');
    await phone.close();

    // Under a minute left (this tab's clock run ahead): the countdown turns urgent.
    const ahead = await context.newPage();
    ahead.on('pageerror', (error) => pageErrors.push(error.message));
    await ahead.clock.install();
    await openBoard(ahead);
    const urgent = ahead.getByRole('article', { name: label(orderId) });
    await urgent.waitFor();
    const deadline = Date.parse((await urgent.locator('time').getAttribute('datetime'))!);
    await ahead.clock.fastForward(deadline - (await ahead.evaluate<number>('Date.now()')) - 30_000);
    await urgent.locator('.countdown-urgent').waitFor();
    expect(await urgent.getByTestId('countdown').textContent()).toMatch(/^00:[0-5]\d$/);
    await urgent.getByText(/less than a minute left$/).waitFor({ state: 'attached' });
    await checkPage(ahead, 'store-orders-urgent');
    await ahead.close();

    // Past its acceptBy: the platform cancels it, and the board lets it go.
    offsetMs = 11 * 60_000;
    await platform.ordering.sweepAcceptance();
    await page
      .getByRole('region', { name: 'Cancelled' })
      .getByRole('row', { name: /not accepted in time \(by the platform\)/ })
      .waitFor();
    expect(await card(orderId).count()).toBe(0);
    expect(await webhookWith(orderId, 'cancelled')).toMatchObject({
      data: { cancelledBy: 'platform' },
    });
    await checkPage(page, 'store-orders-timed-out');
  }, 60_000);
});
