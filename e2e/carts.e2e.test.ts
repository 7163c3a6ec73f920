import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { ingestCatalog } from './ingest.js';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { partnerId: string; apiKey: string };
let distribution: { partnerId: string; apiKey: string };
let storeId: string;
let ids: ReturnType<typeof cartTestCatalog>['ids'];
/** The document first ingested for `storeId`; freshness tests re-ingest edited copies. */
let firstDocument: ReturnType<typeof cartTestCatalog>['document'];

function ingest(document: unknown) {
  return ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document,
  });
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  host = await startCatalogHost();
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
  storeId = randomUUID();
  await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile(),
  });
  const catalog = cartTestCatalog(storeId);
  ids = catalog.ids;
  firstDocument = catalog.document;
  await ingest(catalog.document);
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const cartCall = (operation: string, body: unknown) =>
  call(platform.baseUrl, 'POST', `/v1/marketfront/carts/${operation}`, {
    apiKey: distribution.apiKey,
    body,
  });

const burger = (quantity = 2) => ({
  itemId: ids.burger,
  lineItemId: randomUUID(),
  quantity,
  modifierGroups: [
    {
      modifierGroupId: ids.side,
      lineItems: [{ itemId: ids.fries, lineItemId: randomUUID(), quantity: 1 }],
    },
    {
      modifierGroupId: ids.extras,
      lineItems: [
        {
          itemId: ids.bacon,
          lineItemId: randomUUID(),
          quantity: 2,
          modifierGroups: [
            {
              modifierGroupId: ids.baconStyle,
              lineItems: [{ itemId: ids.crispy, lineItemId: randomUUID(), quantity: 1 }],
            },
          ],
        },
      ],
    },
  ],
});

describe('cart helpers', () => {
  it('starts a cart and prices it from the current CatalogSet in minor units', async () => {
    const catalogSetId = (
      await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}/catalogset`, {
        apiKey: distribution.apiKey,
      })
    ).body.catalogSetId;
    const item = burger();
    const response = await cartCall('add', { item, cart: null, catalogSetId, storeId });
    expect(response.status).toBe(200);
    // 9.50 + fries 1.25 + 2 × bacon 1.10 (crispy 0) = 12.95 each; two burgers 25.90.
    expect(response.body).toMatchObject({
      catalogSetId,
      storeId,
      currency: 'USD',
      subTotal: 25.9,
      itemCount: 2,
      errors: [],
      lineItems: [
        { lineItemId: item.lineItemId, name: 'Burger', unitPrice: 12.95, totalPrice: 25.9 },
      ],
    });
  });
});

// ---------------------------------------------------------------------------------------
// Helpers for the tests below.

interface Line {
  itemId: string;
  lineItemId: string;
  quantity: number;
  modifierGroups?: { modifierGroupId: string; lineItems: Line[] }[];
}

const line = (itemId: string, quantity = 1, modifierGroups?: Line['modifierGroups']): Line => ({
  itemId,
  lineItemId: randomUUID(),
  quantity,
  ...(modifierGroups ? { modifierGroups } : {}),
});
const group = (modifierGroupId: string, ...lineItems: Line[]) => ({ modifierGroupId, lineItems });
const soda = (quantity = 1) => line(ids.soda, quantity);
/** A bacon option (quantity `quantity`) with its required style, or without it. */
const bacon = (quantity: number, style: 'crispy' | 'chewy' | 'none' = 'crispy') =>
  line(
    ids.bacon,
    quantity,
    style === 'none' ? undefined : [group(ids.baconStyle, line(ids[style]))],
  );
/** A burger with fries and the given extras. */
const burgerWith = (quantity: number, ...extras: Line[]) =>
  line(ids.burger, quantity, [group(ids.side, line(ids.fries)), group(ids.extras, ...extras)]);
const cartOf = (...lineItems: unknown[]) => ({
  catalogSetId: ids.catalogSetId,
  storeId,
  lineItems,
});
const newCart = (item: unknown) =>
  cartCall('add', { item, cart: null, catalogSetId: ids.catalogSetId, storeId });

function expectProblem(response: HttpResult, status: number, errorCode: string) {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({
    type: expect.stringMatching(new RegExp(`/errors/${errorCode}$`)),
    title: expect.any(String),
    status,
    detail: expect.any(String),
    instance: expect.stringMatching(/^\/v1\/marketfront\/carts\//),
    requestId: response.headers.get('x-request-id'),
    errorCode,
    errorCategory: expect.any(String),
    retryable: false,
  });
}

type Reported = { code: string; message: string; pointer: string | null };
const byPlace = (a: { code: string; pointer: string | null }, b: typeof a) =>
  `${a.pointer} ${a.code}`.localeCompare(`${b.pointer} ${b.code}`);

/** 400 CART_INVALID reporting exactly `expected` (in any order), each with a message. */
function expectCartErrors(response: HttpResult, expected: { code: string; pointer: string }[]) {
  expectProblem(response, 400, 'CART_INVALID');
  const errors = response.body.errors as Reported[];
  for (const error of errors) expect(error.message).toMatch(/\S/);
  expect(errors.map(({ code, pointer }) => ({ code, pointer })).sort(byPlace)).toEqual(
    [...expected].sort(byPlace),
  );
}

const pointersOf = (response: HttpResult) =>
  (response.body.errors as Reported[]).map((error) => error.pointer);
/** The code and pointer of each element error, in order. */
const placesOf = (errors: Reported[]) => errors.map(({ code, pointer }) => ({ code, pointer }));

// ---------------------------------------------------------------------------------------

describe('cart helpers on an existing cart', () => {
  it('adds to an existing cart: line ids stay stable, subTotal and itemCount recomputed', async () => {
    const first = burger(2);
    const started = await newCart(first);
    expect(started.status, started.text).toBe(200);

    const drinks = soda(3);
    const withSoda = await cartCall('add', { item: drinks, cart: started.body });
    expect(withSoda.status, withSoda.text).toBe(200);
    // Burgers 2 × 12.95 = 25.90; sodas 3 × 1.99 = 5.97; 25.90 + 5.97 = 31.87; 2 + 3 items.
    expect(withSoda.body).toMatchObject({
      catalogSetId: ids.catalogSetId,
      storeId,
      currency: 'USD',
      subTotal: 31.87,
      itemCount: 5,
      lineItems: [
        { lineItemId: first.lineItemId, quantity: 2, unitPrice: 12.95, totalPrice: 25.9 },
        { lineItemId: drinks.lineItemId, quantity: 3, unitPrice: 1.99, totalPrice: 5.97 },
      ],
    });

    const another = burger(1);
    const third = await cartCall('add', { item: another, cart: withSoda.body });
    expect(third.status, third.text).toBe(200);
    // 31.87 + 1 × 12.95 = 44.82; 5 + 1 items.
    expect(third.body).toMatchObject({ subTotal: 44.82, itemCount: 6 });
    expect(third.body.lineItems.map((priced: Line) => priced.lineItemId)).toEqual([
      first.lineItemId,
      drinks.lineItemId,
      another.lineItemId,
    ]);
    // The modifier lines keep their ids too.
    expect(third.body.lineItems[0].modifierGroups[1].lineItems[0].lineItemId).toBe(
      first.modifierGroups[1]?.lineItems[0]?.lineItemId,
    );
  });

  it('updates a quantity (totals follow) and removes the line when updated to 0', async () => {
    const main = burger(2);
    const drink = soda(1);
    const start = await cartCall('add', { item: drink, cart: cartOf(main) });
    expect(start.status, start.text).toBe(200);
    // 2 × 12.95 = 25.90 + 1.99 = 27.89; 3 items.
    expect(start.body).toMatchObject({ subTotal: 27.89, itemCount: 3 });

    const three = await cartCall('update', {
      cart: start.body,
      lineItemId: main.lineItemId,
      quantity: 3,
    });
    expect(three.status, three.text).toBe(200);
    // 3 × 12.95 = 38.85 + 1.99 = 40.84; 3 + 1 items.
    expect(three.body).toMatchObject({
      subTotal: 40.84,
      itemCount: 4,
      lineItems: [
        { lineItemId: main.lineItemId, quantity: 3, unitPrice: 12.95, totalPrice: 38.85 },
        { lineItemId: drink.lineItemId, quantity: 1, unitPrice: 1.99, totalPrice: 1.99 },
      ],
    });

    const zero = await cartCall('update', {
      cart: three.body,
      lineItemId: drink.lineItemId,
      quantity: 0,
    });
    expect(zero.status, zero.text).toBe(200);
    // Only the burgers are left: 38.85, 3 items.
    expect(zero.body).toMatchObject({ subTotal: 38.85, itemCount: 3 });
    expect(zero.body.lineItems).toHaveLength(1);
    expect(zero.body.lineItems[0].lineItemId).toBe(main.lineItemId);
  });

  it('removes a line; removing the last line gives an empty cart with subTotal 0', async () => {
    const main = burger(2);
    const drinks = soda(2);
    const start = await cartCall('add', { item: drinks, cart: cartOf(main) });
    expect(start.status, start.text).toBe(200);
    // 25.90 + 2 × 1.99 = 3.98 → 29.88; 4 items.
    expect(start.body).toMatchObject({ subTotal: 29.88, itemCount: 4 });

    const noBurger = await cartCall('remove', { cart: start.body, lineItemId: main.lineItemId });
    expect(noBurger.status, noBurger.text).toBe(200);
    expect(noBurger.body).toMatchObject({
      subTotal: 3.98,
      itemCount: 2,
      lineItems: [{ lineItemId: drinks.lineItemId, totalPrice: 3.98 }],
    });
    expect(noBurger.body.lineItems).toHaveLength(1);

    const empty = await cartCall('remove', { cart: noBurger.body, lineItemId: drinks.lineItemId });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body).toEqual({
      catalogSetId: ids.catalogSetId,
      storeId,
      currency: 'USD',
      lineItems: [],
      subTotal: 0,
      itemCount: 0,
      errors: [],
    });
  });
});

describe('read-only computed fields on input', () => {
  it('ignores name, prices, totals, currency and itemCount sent back, even wrong ones', async () => {
    const main = burger(2);
    const started = await newCart(main);
    expect(started.status, started.text).toBe(200);
    // The previous response, tampered with: every computed field is present and wrong.
    const tampered = structuredClone(started.body);
    Object.assign(tampered, {
      currency: 'EUR',
      subTotal: 999,
      itemCount: 42,
      errors: [{ code: 'ITEM_UNAVAILABLE', message: 'stale', pointer: '/lineItems/0' }],
    });
    Object.assign(tampered.lineItems[0], { name: 'Free burger', unitPrice: 0, totalPrice: 0 });
    Object.assign(tampered.lineItems[0].modifierGroups[0], { name: 'Nothing' });
    Object.assign(tampered.lineItems[0].modifierGroups[1].lineItems[0], {
      name: 'Bacon',
      unitPrice: 0,
      totalPrice: 0,
    });

    const drink = soda(1);
    const added = await cartCall('add', { item: drink, cart: tampered });
    expect(added.status, added.text).toBe(200);
    // 2 × 12.95 = 25.90 + 1.99 = 27.89; 3 items; nothing from the tampered fields survives.
    expect(added.body).toMatchObject({
      currency: 'USD',
      subTotal: 27.89,
      itemCount: 3,
      errors: [],
      lineItems: [
        {
          lineItemId: main.lineItemId,
          name: 'Burger',
          unitPrice: 12.95,
          totalPrice: 25.9,
          modifierGroups: [
            { name: 'Side' },
            { name: 'Extras', lineItems: [{ name: 'Bacon', unitPrice: 1.1, totalPrice: 2.2 }] },
          ],
        },
        { lineItemId: drink.lineItemId, name: 'Soda', unitPrice: 1.99, totalPrice: 1.99 },
      ],
    });

    // The same through update and remove.
    const updated = await cartCall('update', {
      cart: tampered,
      lineItemId: main.lineItemId,
      quantity: 1,
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({
      currency: 'USD',
      subTotal: 12.95,
      itemCount: 1,
      lineItems: [{ name: 'Burger', unitPrice: 12.95, totalPrice: 12.95 }],
    });
    const removed = await cartCall('remove', {
      cart: { ...added.body, subTotal: 999, itemCount: 0, currency: 'JPY', errors: 'none' },
      lineItemId: main.lineItemId,
    });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toMatchObject({ currency: 'USD', subTotal: 1.99, itemCount: 1 });
  });
});

describe('nested modifiers', () => {
  it('prices modifiers recursively: chewy bacon × 2 inside a burger × 3', async () => {
    const item = burgerWith(3, bacon(2, 'chewy'));
    const response = await newCart(item);
    expect(response.status, response.text).toBe(200);
    // Bacon 1.10 + chewy 0.20 = 1.30 each, × 2 = 2.60;
    // burger unit 9.50 + fries 1.25 + 2.60 = 13.35; line 3 × 13.35 = 40.05.
    expect(response.body).toMatchObject({
      subTotal: 40.05,
      itemCount: 3,
      lineItems: [
        {
          unitPrice: 13.35,
          totalPrice: 40.05,
          modifierGroups: [
            { lineItems: [{ name: 'Fries', unitPrice: 1.25, totalPrice: 1.25 }] },
            {
              lineItems: [
                {
                  name: 'Bacon',
                  quantity: 2,
                  unitPrice: 1.3,
                  totalPrice: 2.6,
                  modifierGroups: [
                    {
                      name: 'Bacon style',
                      lineItems: [{ name: 'Chewy', unitPrice: 0.2, totalPrice: 0.2 }],
                    },
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
  });

  it('adds up several option lines of one group up to its maximum', async () => {
    const item = line(ids.burger, 1, [
      group(ids.side, line(ids.salad)),
      group(ids.extras, bacon(1, 'chewy'), bacon(2, 'crispy')),
    ]);
    const response = await newCart(item);
    expect(response.status, response.text).toBe(200);
    // 9.50 + salad 0 + (1.10 + 0.20) + 2 × (1.10 + 0) = 9.50 + 1.30 + 2.20 = 13.00.
    expect(response.body).toMatchObject({
      subTotal: 13,
      itemCount: 1,
      lineItems: [{ unitPrice: 13, totalPrice: 13 }],
    });
  });
});

describe('cart errors', () => {
  it('reports a missing required side at the line item', async () => {
    expectCartErrors(await newCart(line(ids.burger, 1)), [
      { code: 'MODIFIER_REQUIRED', pointer: '/item' },
    ]);
    // Extras only: the side is still missing.
    expectCartErrors(await newCart(line(ids.burger, 1, [group(ids.extras, bacon(1))])), [
      { code: 'MODIFIER_REQUIRED', pointer: '/item' },
    ]);
  });

  it('reports more than the maximum of a group at the group', async () => {
    expectCartErrors(await newCart(burgerWith(1, bacon(4))), [
      { code: 'MODIFIER_INVALID', pointer: '/item/modifierGroups/1' },
    ]);
    // 3 + 1 across two option lines is also 4.
    expectCartErrors(await newCart(burgerWith(1, bacon(3), bacon(1, 'chewy'))), [
      { code: 'MODIFIER_INVALID', pointer: '/item/modifierGroups/1' },
    ]);
  });

  it('reports a nested required choice at the option line', async () => {
    expectCartErrors(await newCart(burgerWith(1, bacon(1, 'none'))), [
      { code: 'MODIFIER_REQUIRED', pointer: '/item/modifierGroups/1/lineItems/0' },
    ]);
  });

  it('reports an option of another group at its itemId', async () => {
    const item = line(ids.burger, 1, [group(ids.side, bacon(1), line(ids.fries))]);
    expectCartErrors(await newCart(item), [
      { code: 'MODIFIER_INVALID', pointer: '/item/modifierGroups/0/lineItems/0/itemId' },
    ]);
  });

  it('reports a modifier group that does not belong to the item', async () => {
    const item = line(ids.soda, 1, [group(ids.side, line(ids.fries))]);
    expectCartErrors(await newCart(item), [
      { code: 'MODIFIER_INVALID', pointer: '/item/modifierGroups/0/modifierGroupId' },
    ]);
  });

  it('reports unknown, sold-out and option-only items', async () => {
    expectCartErrors(await newCart(line(randomUUID())), [
      { code: 'ITEM_UNAVAILABLE', pointer: '/item/itemId' },
    ]);
    expectCartErrors(await newCart(line(ids.soldOut)), [
      { code: 'ITEM_UNAVAILABLE', pointer: '/item' },
    ]);
    expectCartErrors(await newCart(line(ids.fries)), [
      { code: 'ITEM_UNAVAILABLE', pointer: '/item' },
    ]);
  });

  it('prices an item whose catalog is closed: windows are for validate and place', async () => {
    // The breakfast menu has no opening hours at all.
    const response = await newCart(line(ids.pancakes));
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({ subTotal: 6, itemCount: 1, errors: [] });
  });

  it('reports a quantity outside 1..999 on add', async () => {
    for (const quantity of [0, 1000, -1]) {
      expectCartErrors(await newCart(soda(quantity)), [
        { code: 'QUANTITY_INVALID', pointer: '/item/quantity' },
      ]);
    }
    // The bounds themselves are fine: 999 × 1.99 = 1988.01.
    const most = await newCart(soda(999));
    expect(most.status, most.text).toBe(200);
    expect(most.body).toMatchObject({ subTotal: 1988.01, itemCount: 999 });
  });

  it('reports every problem of the added item at once, and only those', async () => {
    const item = line(ids.burger, 0, [group(ids.extras, bacon(4, 'none'))]);
    const response = await cartCall('add', {
      item,
      cart: cartOf(soda(1), line(ids.soldOut)),
    });
    expectCartErrors(response, [
      { code: 'QUANTITY_INVALID', pointer: '/item/quantity' },
      { code: 'MODIFIER_REQUIRED', pointer: '/item' },
      { code: 'MODIFIER_INVALID', pointer: '/item/modifierGroups/0' },
      { code: 'MODIFIER_REQUIRED', pointer: '/item/modifierGroups/0/lineItems/0' },
    ]);
    expect(response.body.detail).toMatch(/4/);
  });

  it('lists an existing line that cannot be priced in the returned cart, without failing', async () => {
    const added = await cartCall('add', {
      item: soda(),
      cart: cartOf(soda(), line(ids.soldOut), soda()),
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body).toMatchObject({ subTotal: 5.97, itemCount: 3 });
    expect(placesOf(added.body.errors)).toEqual([
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/1' },
    ]);
    expect(added.body.lineItems[1]).toMatchObject({
      itemId: ids.soldOut,
      name: 'Sold out special',
      unitPrice: null,
      totalPrice: null,
    });

    const nested = await cartCall('add', {
      item: soda(),
      cart: cartOf(soda(), burgerWith(1, bacon(1, 'none'))),
    });
    expect(nested.status, nested.text).toBe(200);
    expect(placesOf(nested.body.errors)).toEqual([
      { code: 'MODIFIER_REQUIRED', pointer: '/lineItems/1/modifierGroups/1/lineItems/0' },
    ]);
  });

  it('lists an existing line with a quantity outside 1..999 without failing the add', async () => {
    const response = await cartCall('add', { item: soda(), cart: cartOf(soda(0), soda(1000)) });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({ subTotal: 1.99, itemCount: 1 });
    expect(placesOf(response.body.errors)).toEqual([
      { code: 'QUANTITY_INVALID', pointer: '/lineItems/0/quantity' },
      { code: 'QUANTITY_INVALID', pointer: '/lineItems/1/quantity' },
    ]);
    expect(response.body.lineItems[0]).toMatchObject({ unitPrice: null, totalPrice: null });
  });

  it("points the returned cart's problems at its own lines, after a remove too", async () => {
    const [first, second] = [soda(), soda()];
    const cart = cartOf(first, second, line(ids.soldOut), line(ids.burger, 1));
    const afterRemove = [
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/1' },
      { code: 'MODIFIER_REQUIRED', pointer: '/lineItems/2' },
    ];
    for (const response of [
      await cartCall('remove', { cart, lineItemId: first.lineItemId }),
      await cartCall('update', { cart, lineItemId: second.lineItemId, quantity: 0 }),
    ]) {
      expect(response.status, response.text).toBe(200);
      expect(placesOf(response.body.errors)).toEqual(afterRemove);
    }
    const updated = await cartCall('update', { cart, lineItemId: second.lineItemId, quantity: 4 });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ subTotal: 9.95, itemCount: 5 });
    expect(placesOf(updated.body.errors)).toEqual([
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/2' },
      { code: 'MODIFIER_REQUIRED', pointer: '/lineItems/3' },
    ]);
  });

  it('fails an update for a problem of the updated line', async () => {
    const burgerLine = line(ids.burger, 1);
    const response = await cartCall('update', {
      cart: cartOf(soda(), burgerLine),
      lineItemId: burgerLine.lineItemId,
      quantity: 2,
    });
    expectCartErrors(response, [{ code: 'MODIFIER_REQUIRED', pointer: '/cart/lineItems/1' }]);
  });

  it('refuses a duplicate lineItemId on add', async () => {
    const existing = soda();
    const item = { ...soda(2), lineItemId: existing.lineItemId };
    expectCartErrors(await cartCall('add', { item, cart: cartOf(existing) }), [
      { code: 'LINE_ITEM_DUPLICATE', pointer: '/item/lineItemId' },
    ]);
  });

  it('refuses an unknown lineItemId on remove and update', async () => {
    const cart = cartOf(soda());
    expectCartErrors(await cartCall('remove', { cart, lineItemId: randomUUID() }), [
      { code: 'LINE_ITEM_NOT_FOUND', pointer: '/lineItemId' },
    ]);
    expectCartErrors(await cartCall('update', { cart, lineItemId: randomUUID(), quantity: 2 }), [
      { code: 'LINE_ITEM_NOT_FOUND', pointer: '/lineItemId' },
    ]);
  });

  it('refuses an update quantity outside 0..999', async () => {
    const drink = soda();
    for (const quantity of [-1, 1000]) {
      expectCartErrors(
        await cartCall('update', { cart: cartOf(drink), lineItemId: drink.lineItemId, quantity }),
        [{ code: 'QUANTITY_INVALID', pointer: '/quantity' }],
      );
    }
    const most = await cartCall('update', {
      cart: cartOf(drink),
      lineItemId: drink.lineItemId,
      quantity: 999,
    });
    expect(most.status, most.text).toBe(200);
    expect(most.body).toMatchObject({ subTotal: 1988.01, itemCount: 999 });
  });

  it('needs catalogSetId (CATALOGSET_REQUIRED) and storeId for a new cart', async () => {
    for (const body of [
      { item: soda(), cart: null, storeId },
      { item: soda(), cart: null, catalogSetId: null, storeId },
      { item: soda(), storeId },
    ]) {
      expectCartErrors(await cartCall('add', body), [
        { code: 'CATALOGSET_REQUIRED', pointer: '/catalogSetId' },
      ]);
    }
    for (const body of [
      { item: soda(), cart: null, catalogSetId: ids.catalogSetId },
      { item: soda(), cart: null, catalogSetId: ids.catalogSetId, storeId: null },
    ]) {
      const response = await cartCall('add', body);
      expect(response.status, response.text).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(pointersOf(response)).toEqual(['/storeId']);
    }
  });

  it('refuses a catalogSetId that is not the current one: CATALOGSET_NOT_FOUND inside CART_INVALID', async () => {
    const fresh = await cartCall('add', {
      item: soda(),
      cart: null,
      catalogSetId: randomUUID(),
      storeId,
    });
    expectCartErrors(fresh, [{ code: 'CATALOGSET_NOT_FOUND', pointer: '/catalogSetId' }]);
    const drink = soda();
    const stale = { ...cartOf(drink), catalogSetId: randomUUID() };
    expectCartErrors(await cartCall('add', { item: soda(), cart: stale }), [
      { code: 'CATALOGSET_NOT_FOUND', pointer: '/cart/catalogSetId' },
    ]);
    expectCartErrors(await cartCall('remove', { cart: stale, lineItemId: drink.lineItemId }), [
      { code: 'CATALOGSET_NOT_FOUND', pointer: '/cart/catalogSetId' },
    ]);
  });

  it('answers 404 STORE_NOT_FOUND for an unknown storeId, every time', async () => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const response = await cartCall('add', {
        item: soda(),
        cart: null,
        catalogSetId: ids.catalogSetId,
        storeId: randomUUID(),
      });
      expectProblem(response, 404, 'STORE_NOT_FOUND');
    }
  });

  it('refuses a store with no catalog yet the same way', async () => {
    const emptyStore = randomUUID();
    const created = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${emptyStore}`, {
      apiKey: commerce.apiKey,
      body: storeProfile(),
    });
    expect(created.status).toBeLessThan(300);
    const response = await cartCall('add', {
      item: soda(),
      cart: null,
      catalogSetId: ids.catalogSetId,
      storeId: emptyStore,
    });
    expectCartErrors(response, [{ code: 'CATALOGSET_NOT_FOUND', pointer: '/catalogSetId' }]);
  });

  it('holds at most 100 lines (CART_LIMIT_EXCEEDED at the added /item)', async () => {
    const ninetyNine = Array.from({ length: 99 }, () => soda());
    const hundred = await cartCall('add', { item: soda(), cart: cartOf(...ninetyNine) });
    expect(hundred.status, hundred.text).toBe(200);
    // 100 × 1.99 = 199.00.
    expect(hundred.body).toMatchObject({ subTotal: 199, itemCount: 100 });

    expectCartErrors(await cartCall('add', { item: soda(), cart: hundred.body }), [
      { code: 'CART_LIMIT_EXCEEDED', pointer: '/item' },
    ]);
  });
});

describe('malformed and hostile input', () => {
  /** A line with modifiers nested `levels` deep below it. */
  const nested = (levels: number): Line =>
    levels === 0
      ? line(ids.crispy)
      : line(ids.bacon, 1, [group(ids.baconStyle, nested(levels - 1))]);

  it('answers a body that is not JSON with 400 REQUEST_INVALID, as routes parsed by the gateway do', async () => {
    // Cart bodies reach ordering unparsed; a store profile is parsed by the gateway itself.
    const storePath = `/v1/commerce/stores/${randomUUID()}`;
    for (const [rawBody, detail] of [
      ['{"item": ', 'The body is not valid JSON'],
      ['not json', 'The body is not valid JSON'],
      ['{"item": 1} trailing', 'The body is not valid JSON'],
      ['', 'The JSON body is empty'],
    ] as const) {
      const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
        apiKey: distribution.apiKey,
        rawBody,
      });
      expectProblem(response, 400, 'REQUEST_INVALID');
      expect(response.body.detail).toBe(detail);
      const parsedByGateway = await call(platform.baseUrl, 'PUT', storePath, {
        apiKey: commerce.apiKey,
        rawBody,
      });
      expect(parsedByGateway.status).toBe(400);
      expect(parsedByGateway.body).toMatchObject({ errorCode: 'REQUEST_INVALID', detail });
    }
  });

  it('answers JSON nested 200,000 levels deep with 400, never a 500', async () => {
    for (const rawBody of [
      '['.repeat(200_000) + ']'.repeat(200_000),
      `{"item":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`,
    ]) {
      const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/update', {
        apiKey: distribution.apiKey,
        rawBody,
      });
      expectProblem(response, 400, 'REQUEST_INVALID');
    }
  });

  it('reads a body with a byte-order mark like one without', async () => {
    const body = JSON.stringify({
      item: soda(),
      cart: null,
      catalogSetId: ids.catalogSetId,
      storeId,
    });
    const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
      apiKey: distribution.apiKey,
      rawBody: `\uFEFF${body}`,
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.lineItems).toHaveLength(1);
  });

  it('answers wrong types with 400 REQUEST_INVALID and pointers', async () => {
    const response = await cartCall('add', {
      item: { ...soda(), quantity: '2', itemId: 'soda' },
      cart: null,
      catalogSetId: ids.catalogSetId,
      storeId,
    });
    expectProblem(response, 400, 'REQUEST_INVALID');
    expect(pointersOf(response)).toEqual(
      expect.arrayContaining(['/item/quantity', '/item/itemId']),
    );

    const update = await cartCall('update', {
      cart: cartOf({ ...soda(), quantity: 1.5 }),
      lineItemId: 'x',
      quantity: '3',
    });
    expectProblem(update, 400, 'REQUEST_INVALID');
    expect(pointersOf(update)).toEqual(
      expect.arrayContaining(['/cart/lineItems/0/quantity', '/lineItemId', '/quantity']),
    );
    const missing = await cartCall('remove', { lineItemId: randomUUID() });
    expectProblem(missing, 400, 'REQUEST_INVALID');
    expect(pointersOf(missing)).toContain('/cart');
  });

  it('refuses modifiers nested too deep with 400 REQUEST_INVALID, never a 500', async () => {
    // Burger → extras → bacon → style → … 7 levels below the item.
    const sevenDeep = await newCart(line(ids.burger, 1, [group(ids.extras, nested(6))]));
    expectProblem(sevenDeep, 400, 'REQUEST_INVALID');
    expect(JSON.stringify(sevenDeep.body.errors)).toMatch(/nest/i);
    // Six levels is refused too; five (the catalog's own limit) reaches the pricing rules.
    expectProblem(
      await newCart(line(ids.burger, 1, [group(ids.extras, nested(5))])),
      400,
      'REQUEST_INVALID',
    );
    expectProblem(
      await newCart(line(ids.burger, 1, [group(ids.extras, nested(4))])),
      400,
      'CART_INVALID',
    );
    // Thousands of levels, as raw text (JSON.stringify itself would overflow the stack here).
    const levels = 3_000;
    const open = `{"itemId":"${ids.bacon}","lineItemId":"${randomUUID()}","quantity":1,"modifierGroups":[{"modifierGroupId":"${ids.baconStyle}","lineItems":[`;
    const rawBody = `{"cart":null,"catalogSetId":"${ids.catalogSetId}","storeId":"${storeId}","item":${open.repeat(levels)}${']}]}'.repeat(levels)}}`;
    const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
      apiKey: distribution.apiKey,
      rawBody,
    });
    expectProblem(response, 400, 'REQUEST_INVALID');
  });

  it('answers a 2 MB body with 413', async () => {
    const response = await cartCall('add', {
      item: soda(),
      cart: null,
      catalogSetId: ids.catalogSetId,
      storeId,
      padding: 'x'.repeat(2 * 1024 * 1024),
    });
    expectProblem(response, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('answers a commerce key with 403 and no key with 401', async () => {
    const body = { item: soda(), cart: null, catalogSetId: ids.catalogSetId, storeId };
    for (const operation of ['add', 'remove', 'update']) {
      const path = `/v1/marketfront/carts/${operation}`;
      const forbidden = await call(platform.baseUrl, 'POST', path, {
        apiKey: commerce.apiKey,
        body,
      });
      expectProblem(forbidden, 403, 'FORBIDDEN');
      const anonymous = await call(platform.baseUrl, 'POST', path, { body });
      expectProblem(anonymous, 401, 'UNAUTHORIZED');
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
      // Authentication comes before body validation.
      const garbage = await call(platform.baseUrl, 'POST', path, { rawBody: '{' });
      expectProblem(garbage, 401, 'UNAUTHORIZED');
    }
  });

  it('refuses __proto__ and constructor.prototype keys with 400', async () => {
    const item = JSON.stringify(soda());
    for (const rawBody of [
      `{"__proto__": {"admin": true}, "item": ${item}, "cart": null, "catalogSetId": "${ids.catalogSetId}", "storeId": "${storeId}"}`,
      `{"item": {"__proto__": {"quantity": 5}, "itemId": "${ids.soda}", "lineItemId": "${randomUUID()}", "quantity": 1}, "cart": null, "catalogSetId": "${ids.catalogSetId}", "storeId": "${storeId}"}`,
      `{"constructor": {"prototype": {"admin": true}}, "item": ${item}, "cart": null, "catalogSetId": "${ids.catalogSetId}", "storeId": "${storeId}"}`,
    ]) {
      const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
        apiKey: distribution.apiKey,
        rawBody,
      });
      expectProblem(response, 400, 'REQUEST_INVALID');
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });
});

describe('the priced cart', () => {
  it('has the contract shape: USD, names and prices on every line, named modifier groups', async () => {
    const item = burger(2);
    const response = await newCart(item);
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    const [side, extras] = item.modifierGroups;
    const fries = side?.lineItems[0];
    const baconLine = extras?.lineItems[0];
    const crispy =
      baconLine && 'modifierGroups' in baconLine
        ? baconLine.modifierGroups[0]?.lineItems[0]
        : undefined;
    // Burger 9.50 + fries 1.25 + 2 × (bacon 1.10 + crispy 0) = 12.95; × 2 = 25.90.
    expect(response.body).toEqual({
      catalogSetId: ids.catalogSetId,
      storeId,
      currency: 'USD',
      subTotal: 25.9,
      itemCount: 2,
      errors: [],
      lineItems: [
        {
          itemId: ids.burger,
          lineItemId: item.lineItemId,
          quantity: 2,
          name: 'Burger',
          unitPrice: 12.95,
          totalPrice: 25.9,
          modifierGroups: [
            {
              modifierGroupId: ids.side,
              name: 'Side',
              lineItems: [
                {
                  itemId: ids.fries,
                  lineItemId: fries?.lineItemId,
                  quantity: 1,
                  name: 'Fries',
                  unitPrice: 1.25,
                  totalPrice: 1.25,
                  modifierGroups: [],
                },
              ],
            },
            {
              modifierGroupId: ids.extras,
              name: 'Extras',
              lineItems: [
                {
                  itemId: ids.bacon,
                  lineItemId: baconLine?.lineItemId,
                  quantity: 2,
                  name: 'Bacon',
                  unitPrice: 1.1,
                  totalPrice: 2.2,
                  modifierGroups: [
                    {
                      modifierGroupId: ids.baconStyle,
                      name: 'Bacon style',
                      lineItems: [
                        {
                          itemId: ids.crispy,
                          lineItemId: crispy?.lineItemId,
                          quantity: 1,
                          name: 'Crispy',
                          unitPrice: 0,
                          totalPrice: 0,
                          modifierGroups: [],
                        },
                      ],
                    },
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
  });
});

// Last: these re-ingest the shared store's catalog (and restore it at the end).
describe('freshness', () => {
  /** A copy of the first document (same catalogSetId and ids) with another burger price. */
  function withBurgerPrice(basePrice: number) {
    const document = structuredClone(firstDocument);
    const item = document.items[ids.burger];
    if (!item) throw new Error('the burger is missing from the test catalog');
    item.basePrice = basePrice;
    return document;
  }

  it('prices with the new catalog right after its ingest succeeded', async () => {
    const main = burger(2);
    const before = await newCart(main);
    expect(before.status, before.text).toBe(200);
    expect(before.body).toMatchObject({ subTotal: 25.9 });

    const reprice = () =>
      cartCall('update', { cart: before.body, lineItemId: main.lineItemId, quantity: 2 });

    await ingest(withBurgerPrice(10));
    const ten = await reprice();
    expect(ten.status, ten.text).toBe(200);
    // 10.00 + 1.25 + 2 × 1.10 = 13.45; × 2 = 26.90.
    expect(ten.body).toMatchObject({
      catalogSetId: ids.catalogSetId,
      subTotal: 26.9,
      lineItems: [{ unitPrice: 13.45, totalPrice: 26.9 }],
    });

    await ingest(withBurgerPrice(10.5));
    const tenFifty = await newCart(burger(1));
    expect(tenFifty.status, tenFifty.text).toBe(200);
    // 10.50 + 1.25 + 2.20 = 13.95.
    expect(tenFifty.body).toMatchObject({ subTotal: 13.95 });

    await ingest(firstDocument);
    const back = await reprice();
    expect(back.status, back.text).toBe(200);
    // Back to 9.50: 12.95 × 2 = 25.90.
    expect(back.body).toMatchObject({ subTotal: 25.9 });
  });

  it('lets a partner remove each of two lines the new catalog no longer prices', async () => {
    const [main, drink, other] = [burger(1), soda(2), soda(1)];
    const before = await cartCall('add', { item: other, cart: cartOf(main, drink) });
    expect(before.status, before.text).toBe(200);

    // The burger and the soda become unavailable: both lines of the partner's cart break.
    const document = structuredClone(firstDocument);
    const items = document.items as Record<string, { isAvailable?: boolean }>;
    items[ids.burger]!.isAvailable = false;
    items[ids.soda]!.isAvailable = false;
    await ingest(document);
    try {
      const withoutBurger = await cartCall('remove', {
        cart: before.body,
        lineItemId: main.lineItemId,
      });
      expect(withoutBurger.status, withoutBurger.text).toBe(200);
      expect(withoutBurger.body).toMatchObject({ subTotal: 0, itemCount: 0 });
      expect(placesOf(withoutBurger.body.errors)).toEqual([
        { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/0' },
        { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/1' },
      ]);
      const withoutDrink = await cartCall('remove', {
        cart: withoutBurger.body,
        lineItemId: drink.lineItemId,
      });
      expect(withoutDrink.status, withoutDrink.text).toBe(200);
      const empty = await cartCall('remove', {
        cart: withoutDrink.body,
        lineItemId: other.lineItemId,
      });
      expect(empty.status, empty.text).toBe(200);
      expect(empty.body).toMatchObject({ lineItems: [], errors: [], subTotal: 0 });
    } finally {
      await ingest(firstDocument);
    }
  });
});
