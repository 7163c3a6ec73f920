import {
  catalogSetDocument,
  type CartInput,
  type LineItemInput,
  type PricedLineItem,
} from '@pcp/contracts';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateCatalogSet, type GeneratedCatalogSet } from '@pcp/testing/catalog-generator';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { addItem, removeItem } from '../../src/carts/cart-operations.js';
import { compileCatalog, type CompiledCatalog } from '../../src/catalog/compiled-catalog.js';
import { priceCart, type CartPricing, type PricingContext } from '../../src/catalog/pricing.js';

const STORE = '5a1e0000-0000-4000-8000-0000000000a1';
/** A Monday, noon UTC: cartTestCatalog's all-day menu is open. */
const MONDAY_NOON_UTC = new Date('2024-01-08T12:00:00Z');
const NUM_RUNS = 150;

/** A canonical uuid for a small number, readable in failures. */
function uuid(n: number, prefix = '00000000'): string {
  return `${prefix}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

type Window = { dayOfWeek: string; start: string; end: string };
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const EVERY_DAY: Window[] = DAYS.map((dayOfWeek) => ({
  dayOfWeek,
  start: '00:00:00',
  end: '00:00:00',
}));

function compile(document: unknown): CompiledCatalog {
  return compileCatalog(catalogSetDocument.parse(document), 'version-1');
}

/** cartTestCatalog compiled, with a context where its all-day menu is open. */
function testCatalog(prices: { burger?: number; soda?: number } = {}) {
  const { document, ids } = cartTestCatalog(STORE, prices);
  const catalog = compile(document);
  const context: PricingContext = {
    catalog,
    orderTime: { timezone: 'UTC', at: MONDAY_NOON_UTC },
  };
  return { document, ids, catalog, context };
}

/** One catalog with one section of modifier-free items at the given prices. */
function flatCatalog(currency: string, prices: number[], availability: Window[] = EVERY_DAY) {
  const catalogId = uuid(1);
  const sectionId = uuid(2);
  const itemIds = prices.map((_, index) => uuid(100 + index));
  const document = {
    catalogSetId: uuid(3),
    storeId: STORE,
    currency,
    catalogs: { [catalogId]: { catalogId, name: 'Menu', sectionIds: [sectionId], availability } },
    sections: { [sectionId]: { sectionId, name: 'All', itemIds } },
    items: Object.fromEntries(
      itemIds.map((itemId, index) => [
        itemId,
        { itemId, name: `Item ${index}`, basePrice: prices[index]! },
      ]),
    ),
    modifierGroups: {},
  };
  return { document, itemIds, catalog: compile(document) };
}

function line(
  itemId: string,
  quantity = 1,
  modifierGroups?: LineItemInput['modifierGroups'],
): LineItemInput {
  return { itemId, lineItemId: randomUUID(), quantity, modifierGroups };
}

function cartOf(catalog: CompiledCatalog, lineItems: LineItemInput[]): CartInput {
  return { catalogSetId: catalog.catalogSetId, storeId: STORE, lineItems };
}

/** Every problem of a priced cart, the cart's own first. */
function allErrors(result: CartPricing) {
  return [...result.cartErrors, ...result.lineErrors.flat()];
}

function okResult(result: CartPricing) {
  const errors = allErrors(result);
  if (errors.length > 0) throw new Error(`expected a priced cart, got ${JSON.stringify(errors)}`);
  return result;
}

function errorsOf(result: CartPricing): { code: string; pointer: string | null }[] {
  const errors = allErrors(result);
  if (errors.length === 0) throw new Error('expected pricing errors, got a priced cart');
  return errors.map(({ code, pointer }) => ({ code, pointer }));
}

describe('priceCart: examples on the cart test catalog', () => {
  it('prices 3 × 1.10 as exactly 3.30', () => {
    const { ids, catalog, context } = testCatalog({ soda: 1.1 });
    const result = okResult(priceCart(cartOf(catalog, [line(ids.soda, 3)]), context));
    expect(result.subTotalMinor).toBe(330);
    expect(result.cart).toMatchObject({
      currency: 'USD',
      subTotal: 3.3,
      itemCount: 3,
      lineItems: [{ itemId: ids.soda, name: 'Soda', quantity: 3, unitPrice: 1.1, totalPrice: 3.3 }],
    });
  });

  it('prices nested modifiers: unit = base + Σ option unit × option quantity', () => {
    const { ids, catalog, context } = testCatalog();
    const burger = line(ids.burger, 2, [
      { modifierGroupId: ids.side, lineItems: [line(ids.fries)] },
      {
        modifierGroupId: ids.extras,
        lineItems: [
          line(ids.bacon, 2, [{ modifierGroupId: ids.baconStyle, lineItems: [line(ids.chewy)] }]),
        ],
      },
    ]);
    const soda = line(ids.soda);
    const result = okResult(priceCart(cartOf(catalog, [burger, soda]), context));
    // bacon 1.10 + chewy 0.20 = 1.30, × 2 = 2.60; burger 9.50 + fries 1.25 + 2.60 = 13.35.
    expect(result.cart.subTotal).toBe(28.69); // 13.35 × 2 + 1.99
    expect(result.subTotalMinor).toBe(2869);
    expect(result.cart.itemCount).toBe(3);
    const [pricedBurger, pricedSoda] = result.cart.lineItems;
    expect(pricedBurger).toMatchObject({
      lineItemId: burger.lineItemId,
      name: 'Burger',
      unitPrice: 13.35,
      totalPrice: 26.7,
    });
    expect(pricedBurger!.modifierGroups).toEqual([
      {
        modifierGroupId: ids.side,
        name: 'Side',
        lineItems: [expect.objectContaining({ name: 'Fries', unitPrice: 1.25, totalPrice: 1.25 })],
      },
      {
        modifierGroupId: ids.extras,
        name: 'Extras',
        lineItems: [
          expect.objectContaining({
            name: 'Bacon',
            quantity: 2,
            unitPrice: 1.3,
            totalPrice: 2.6,
            modifierGroups: [
              {
                modifierGroupId: ids.baconStyle,
                name: 'Bacon style',
                lineItems: [
                  expect.objectContaining({ name: 'Chewy', unitPrice: 0.2, totalPrice: 0.2 }),
                ],
              },
            ],
          }),
        ],
      },
    ]);
    expect(pricedSoda).toMatchObject({ unitPrice: 1.99, totalPrice: 1.99, modifierGroups: [] });
  });

  it('prices an empty cart at zero', () => {
    const { catalog, context } = testCatalog();
    const result = okResult(priceCart(cartOf(catalog, []), context));
    expect(result.cart).toMatchObject({ subTotal: 0, itemCount: 0, lineItems: [] });
  });

  it('sums 0.10 + 0.20 to exactly 0.30 (no float error)', () => {
    const { itemIds, catalog } = flatCatalog('USD', [0.1, 0.2]);
    const context = { catalog, orderTime: { timezone: 'UTC', at: MONDAY_NOON_UTC } };
    const sum = okResult(
      priceCart(
        cartOf(
          catalog,
          itemIds.map((id) => line(id)),
        ),
        context,
      ),
    );
    expect(sum.cart.subTotal).toBe(0.3);
    expect(sum.subTotalMinor).toBe(30);
    const thrice = okResult(priceCart(cartOf(catalog, [line(itemIds[0]!, 3)]), context));
    expect(thrice.cart.lineItems[0]!.totalPrice).toBe(0.3);
    expect(thrice.cart.subTotal).toBe(0.3);
  });

  it('prices JPY (no fraction digits) exactly', () => {
    const { itemIds, catalog } = flatCatalog('JPY', [500, 1200]);
    const context = { catalog, orderTime: { timezone: 'UTC', at: MONDAY_NOON_UTC } };
    const lines = [line(itemIds[0]!, 3), line(itemIds[1]!)];
    const result = okResult(priceCart(cartOf(catalog, lines), context));
    expect(result.subTotalMinor).toBe(2700);
    expect(result.cart).toMatchObject({ currency: 'JPY', subTotal: 2700, itemCount: 4 });
    expect(result.cart.lineItems[0]).toMatchObject({ unitPrice: 500, totalPrice: 1500 });
  });

  it('prices KWD (three fraction digits) exactly', () => {
    const { itemIds, catalog } = flatCatalog('KWD', [1.234, 0.001]);
    const context = { catalog, orderTime: { timezone: 'UTC', at: MONDAY_NOON_UTC } };
    const lines = [line(itemIds[0]!, 3), line(itemIds[1]!, 7)];
    const result = okResult(priceCart(cartOf(catalog, lines), context));
    expect(result.subTotalMinor).toBe(3709);
    expect(result.cart).toMatchObject({ currency: 'KWD', subTotal: 3.709, itemCount: 10 });
    expect(result.cart.lineItems[0]).toMatchObject({ unitPrice: 1.234, totalPrice: 3.702 });
    expect(result.cart.lineItems[1]).toMatchObject({ unitPrice: 0.001, totalPrice: 0.007 });
  });
});

describe('priceCart: a cart, as the cart helpers price it', () => {
  it('checks no availability window without an order time (the breakfast menu never opens)', () => {
    const { ids, catalog } = testCatalog();
    const result = priceCart(cartOf(catalog, [line(ids.pancakes)]), { catalog });
    expect(result.cart.errors).toEqual([]);
    expect(result.cart.lineItems[0]).toMatchObject({ name: 'Pancakes', unitPrice: 6 });
  });

  it('prices each line on its own: one that cannot be priced is listed, priced null and not counted', () => {
    const { ids, catalog } = testCatalog({ soda: 2 });
    const unknown = randomUUID();
    const result = priceCart(
      cartOf(catalog, [line(ids.soda, 2), line(ids.soldOut), line(unknown, 3), line(ids.soda)]),
      { catalog },
    );
    expect(result.lineErrors.map((errors) => errors.map((problem) => problem.code))).toEqual([
      [],
      ['ITEM_UNAVAILABLE'],
      ['ITEM_UNAVAILABLE'],
      [],
    ]);
    expect(result.cart).toMatchObject({
      subTotal: 6,
      itemCount: 3,
      errors: [
        { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/1' },
        { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/2/itemId' },
      ],
    });
    expect(result.cart.lineItems.map((priced) => [priced.name, priced.totalPrice])).toEqual([
      ['Soda', 4],
      ['Sold out special', null],
      [null, null],
      ['Soda', 2],
    ]);
  });
});

describe('priceCart: errors and their pointers', () => {
  it('ITEM_UNAVAILABLE for an unknown item, at its itemId', () => {
    const { catalog, context } = testCatalog();
    expect(errorsOf(priceCart(cartOf(catalog, [line(randomUUID())]), context))).toEqual([
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/0/itemId' },
    ]);
  });

  it('ITEM_UNAVAILABLE for an item marked unavailable, at the line', () => {
    const { ids, catalog, context } = testCatalog();
    const cart = cartOf(catalog, [line(ids.soda), line(ids.soldOut)]);
    expect(errorsOf(priceCart(cart, context))).toEqual([
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/1' },
    ]);
  });

  it('refuses an item reachable only as a modifier option when ordered top-level', () => {
    const { ids, catalog, context } = testCatalog();
    for (const optionOnly of [ids.fries, ids.bacon, ids.chewy]) {
      expect(errorsOf(priceCart(cartOf(catalog, [line(optionOnly)]), context))).toContainEqual({
        code: 'ITEM_UNAVAILABLE',
        pointer: '/lineItems/0',
      });
    }
  });

  describe('OUTSIDE_AVAILABILITY_WINDOW reads windows in the store time zone', () => {
    const monday9to17: Window[] = [{ dayOfWeek: 'Monday', start: '09:00:00', end: '17:00:00' }];
    const { itemIds, catalog } = flatCatalog('USD', [5], monday9to17);
    const priceAt = (iso: string) =>
      priceCart(cartOf(catalog, [line(itemIds[0]!)]), {
        catalog,
        orderTime: { timezone: 'America/Chicago', at: new Date(iso) },
      });

    it.each([
      ['Monday noon in Chicago (CST)', '2024-01-08T18:00:00Z'],
      ['Monday noon in Chicago (CDT)', '2024-07-08T17:00:00Z'],
      ['Monday 09:00 Chicago (start inclusive)', '2024-01-08T15:00:00Z'],
      ['Monday 16:30 Chicago (already 22:30 UTC)', '2024-01-08T22:30:00Z'],
    ])('open at %s', (_, iso) => {
      expect(allErrors(priceAt(iso))).toEqual([]);
    });

    it.each([
      ['Sunday noon in Chicago', '2024-01-07T18:00:00Z'],
      ['Monday 10:00 UTC (04:00 in Chicago)', '2024-01-08T10:00:00Z'],
      ['Monday 17:00 Chicago (end exclusive)', '2024-01-08T23:00:00Z'],
      ['Tuesday noon in Chicago', '2024-01-09T18:00:00Z'],
    ])('closed at %s', (_, iso) => {
      expect(errorsOf(priceAt(iso))).toEqual([
        { code: 'OUTSIDE_AVAILABILITY_WINDOW', pointer: '/lineItems/0' },
      ]);
    });
  });

  it('OUTSIDE_AVAILABILITY_WINDOW for an item whose only catalog never opens', () => {
    const { ids, catalog, context } = testCatalog();
    expect(errorsOf(priceCart(cartOf(catalog, [line(ids.pancakes)]), context))).toEqual([
      { code: 'OUTSIDE_AVAILABILITY_WINDOW', pointer: '/lineItems/0' },
    ]);
  });

  it('MODIFIER_REQUIRED at the line missing a required group, nested too', () => {
    const { ids, catalog, context } = testCatalog();
    expect(errorsOf(priceCart(cartOf(catalog, [line(ids.burger)]), context))).toEqual([
      { code: 'MODIFIER_REQUIRED', pointer: '/lineItems/0' },
    ]);
    const burger = line(ids.burger, 1, [
      { modifierGroupId: ids.side, lineItems: [line(ids.salad)] },
      { modifierGroupId: ids.extras, lineItems: [line(ids.bacon)] },
    ]);
    expect(errorsOf(priceCart(cartOf(catalog, [line(ids.soda), burger]), context))).toEqual([
      { code: 'MODIFIER_REQUIRED', pointer: '/lineItems/1/modifierGroups/1/lineItems/0' },
    ]);
  });

  it('MODIFIER_INVALID for a group that is not on the item', () => {
    const { ids, catalog, context } = testCatalog();
    const soda = line(ids.soda, 1, [{ modifierGroupId: ids.side, lineItems: [line(ids.fries)] }]);
    expect(errorsOf(priceCart(cartOf(catalog, [soda]), context))).toEqual([
      { code: 'MODIFIER_INVALID', pointer: '/lineItems/0/modifierGroups/0/modifierGroupId' },
    ]);
  });

  it('MODIFIER_INVALID for an option that is not in the group', () => {
    const { ids, catalog, context } = testCatalog();
    const burger = line(ids.burger, 1, [
      { modifierGroupId: ids.side, lineItems: [line(ids.fries)] },
      { modifierGroupId: ids.extras, lineItems: [line(ids.salad)] },
    ]);
    expect(errorsOf(priceCart(cartOf(catalog, [burger]), context))).toEqual([
      { code: 'MODIFIER_INVALID', pointer: '/lineItems/0/modifierGroups/1/lineItems/0/itemId' },
    ]);
  });

  describe('maximumAllowed counts option quantities', () => {
    const { ids, catalog, context } = testCatalog();
    const bacon = (quantity: number) =>
      line(ids.bacon, quantity, [
        { modifierGroupId: ids.baconStyle, lineItems: [line(ids.crispy)] },
      ]);
    const burgerWith = (...extras: LineItemInput[]) =>
      line(ids.burger, 1, [
        { modifierGroupId: ids.side, lineItems: [line(ids.fries)] },
        { modifierGroupId: ids.extras, lineItems: extras },
      ]);

    it('two options of quantity 2 exceed a maximum of 3', () => {
      const cart = cartOf(catalog, [burgerWith(bacon(2), bacon(2))]);
      expect(errorsOf(priceCart(cart, context))).toEqual([
        { code: 'MODIFIER_INVALID', pointer: '/lineItems/0/modifierGroups/1' },
      ]);
    });

    it('one option of quantity 4 exceeds a maximum of 3', () => {
      const cart = cartOf(catalog, [burgerWith(bacon(4))]);
      expect(errorsOf(priceCart(cart, context))).toEqual([
        { code: 'MODIFIER_INVALID', pointer: '/lineItems/0/modifierGroups/1' },
      ]);
    });

    it('2 + 1 reaches the maximum of 3 and is fine', () => {
      const cart = cartOf(catalog, [burgerWith(bacon(2), bacon(1))]);
      const result = okResult(priceCart(cart, context));
      // 9.50 + 1.25 + 3 × 1.10
      expect(result.cart.subTotal).toBe(14.05);
    });

    it('a second option in a max-1 group is refused', () => {
      const burger = line(ids.burger, 1, [
        { modifierGroupId: ids.side, lineItems: [line(ids.fries), line(ids.salad)] },
      ]);
      expect(errorsOf(priceCart(cartOf(catalog, [burger]), context))).toEqual([
        { code: 'MODIFIER_INVALID', pointer: '/lineItems/0/modifierGroups/0' },
      ]);
    });
  });

  it.each([0, -1, 1000, 2_147_483_647, -2_147_483_648])(
    'QUANTITY_INVALID for quantity %d, at the quantity',
    (quantity) => {
      const { ids, catalog, context } = testCatalog();
      const cart = cartOf(catalog, [line(ids.soda), line(ids.soda, quantity)]);
      expect(errorsOf(priceCart(cart, context))).toEqual([
        { code: 'QUANTITY_INVALID', pointer: '/lineItems/1/quantity' },
      ]);
    },
  );

  it('quantities 1 and 999 are accepted', () => {
    const { ids, catalog, context } = testCatalog();
    const result = okResult(
      priceCart(cartOf(catalog, [line(ids.soda, 1), line(ids.soda, 999)]), context),
    );
    expect(result.cart).toMatchObject({ itemCount: 1000, subTotal: 1990 });
  });

  it('QUANTITY_INVALID on a modifier option, at its nested quantity', () => {
    const { ids, catalog, context } = testCatalog();
    const burger = line(ids.burger, 1, [
      { modifierGroupId: ids.side, lineItems: [line(ids.fries, 1)] },
      {
        modifierGroupId: ids.extras,
        lineItems: [
          line(ids.bacon, 0, [{ modifierGroupId: ids.baconStyle, lineItems: [line(ids.crispy)] }]),
        ],
      },
    ]);
    expect(errorsOf(priceCart(cartOf(catalog, [burger]), context))).toEqual([
      { code: 'QUANTITY_INVALID', pointer: '/lineItems/0/modifierGroups/1/lineItems/0/quantity' },
    ]);
  });

  it('QUANTITY_INVALID alone for a negative option quantity in an optional group', () => {
    const { ids, catalog, context } = testCatalog();
    const burger = line(ids.burger, 1, [
      { modifierGroupId: ids.side, lineItems: [line(ids.fries, 1)] },
      {
        modifierGroupId: ids.extras,
        lineItems: [
          line(ids.bacon, -1, [{ modifierGroupId: ids.baconStyle, lineItems: [line(ids.crispy)] }]),
        ],
      },
    ]);
    expect(errorsOf(priceCart(cartOf(catalog, [burger]), context))).toEqual([
      { code: 'QUANTITY_INVALID', pointer: '/lineItems/0/modifierGroups/1/lineItems/0/quantity' },
    ]);
  });

  it('MODIFIER_INVALID for an option over the maximum even beside a negative sibling', () => {
    const { ids, catalog, context } = testCatalog();
    const bacon = (quantity: number) =>
      line(ids.bacon, quantity, [
        { modifierGroupId: ids.baconStyle, lineItems: [line(ids.crispy)] },
      ]);
    const burger = line(ids.burger, 1, [
      { modifierGroupId: ids.side, lineItems: [line(ids.fries, 1)] },
      { modifierGroupId: ids.extras, lineItems: [bacon(5), bacon(-3)] },
    ]);
    expect(errorsOf(priceCart(cartOf(catalog, [burger]), context))).toEqual(
      expect.arrayContaining([
        { code: 'QUANTITY_INVALID', pointer: '/lineItems/0/modifierGroups/1/lineItems/1/quantity' },
        { code: 'MODIFIER_INVALID', pointer: '/lineItems/0/modifierGroups/1' },
      ]),
    );
  });

  it('LINE_ITEM_DUPLICATE for a repeated top-level lineItemId', () => {
    const { ids, catalog, context } = testCatalog();
    const first = line(ids.soda);
    const cart = cartOf(catalog, [first, line(ids.soda), { ...first, quantity: 2 }]);
    expect(errorsOf(priceCart(cart, context))).toEqual([
      { code: 'LINE_ITEM_DUPLICATE', pointer: '/lineItems/2/lineItemId' },
    ]);
  });

  it('LINE_ITEM_DUPLICATE for lineItemIds repeated inside modifiers', () => {
    const { ids, catalog, context } = testCatalog();
    const soda = line(ids.soda);
    const crispy = line(ids.crispy);
    const burger = line(ids.burger, 1, [
      {
        modifierGroupId: ids.side,
        lineItems: [{ ...line(ids.fries), lineItemId: soda.lineItemId }],
      },
      {
        modifierGroupId: ids.extras,
        lineItems: [
          line(ids.bacon, 1, [{ modifierGroupId: ids.baconStyle, lineItems: [crispy] }]),
          line(ids.bacon, 1, [{ modifierGroupId: ids.baconStyle, lineItems: [{ ...crispy }] }]),
        ],
      },
    ]);
    expect(errorsOf(priceCart(cartOf(catalog, [soda, burger]), context))).toEqual([
      {
        code: 'LINE_ITEM_DUPLICATE',
        pointer: '/lineItems/1/modifierGroups/0/lineItems/0/lineItemId',
      },
      {
        code: 'LINE_ITEM_DUPLICATE',
        pointer:
          '/lineItems/1/modifierGroups/1/lineItems/1/modifierGroups/0/lineItems/0/lineItemId',
      },
    ]);
  });

  it('CART_LIMIT_EXCEEDED for 101 lines (100 are fine)', () => {
    const { ids, catalog, context } = testCatalog();
    const lines = Array.from({ length: 100 }, () => line(ids.soda));
    expect(allErrors(priceCart(cartOf(catalog, lines), context))).toEqual([]);
    const tooMany = cartOf(catalog, [...lines, line(ids.soda)]);
    expect(errorsOf(priceCart(tooMany, context))).toEqual([
      { code: 'CART_LIMIT_EXCEEDED', pointer: '/lineItems' },
    ]);
    expect(errorsOf(priceCart(tooMany, context, { cartPointer: '/cart' }))).toEqual([
      { code: 'CART_LIMIT_EXCEEDED', pointer: '/cart/lineItems' },
    ]);
  });

  it('reports every problem, not only the first', () => {
    const { ids, catalog, context } = testCatalog();
    const cart = cartOf(catalog, [
      line(ids.soda, 0),
      line(ids.soldOut),
      line(ids.burger),
      line(randomUUID()),
    ]);
    expect(errorsOf(priceCart(cart, context))).toEqual([
      { code: 'QUANTITY_INVALID', pointer: '/lineItems/0/quantity' },
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/1' },
      { code: 'MODIFIER_REQUIRED', pointer: '/lineItems/2' },
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/3/itemId' },
    ]);
  });

  it('uses custom pointerOf and cartPointer', () => {
    const { ids, catalog, context } = testCatalog();
    const pointerOf = (index: number) => (index === 1 ? '/item' : `/cart/lineItems/${index}`);
    const soda = line(ids.soda);
    const cart = cartOf(catalog, [
      line(ids.burger),
      { ...soda, quantity: 0, modifierGroups: [{ modifierGroupId: ids.side, lineItems: [] }] },
      ...Array.from({ length: 99 }, () => line(ids.soda)),
    ]);
    expect(
      errorsOf(priceCart(cart, context, { linePointer: pointerOf, cartPointer: '/cart' })),
    ).toEqual([
      { code: 'CART_LIMIT_EXCEEDED', pointer: '/cart/lineItems' },
      { code: 'MODIFIER_REQUIRED', pointer: '/cart/lineItems/0' },
      { code: 'QUANTITY_INVALID', pointer: '/item/quantity' },
      { code: 'MODIFIER_INVALID', pointer: '/item/modifierGroups/0/modifierGroupId' },
    ]);
  });
});

// ---------------------------------------------------------------------------------------
// Properties over generated catalogs
// ---------------------------------------------------------------------------------------

interface Scenario {
  readonly document: GeneratedCatalogSet;
  readonly catalog: CompiledCatalog;
  readonly context: PricingContext;
  /** Available top-level items of a catalog that is open at `context.at`. */
  readonly orderable: readonly string[];
}

function secondsOf(time: string): number {
  const [hours = 0, minutes = 0, seconds = 0] = time.split(':').map(Number);
  return hours * 3_600 + minutes * 60 + seconds;
}

/** Items reachable from a catalog through its (nested) sections, computed from the document. */
function reachableItems(document: GeneratedCatalogSet, sectionIds: readonly string[]): string[] {
  const items = new Set<string>();
  const seen = new Set<string>();
  const pending = [...sectionIds];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (seen.has(next)) continue;
    seen.add(next);
    const section = document.sections[next];
    if (!section) continue;
    pending.push(...section.sectionIds);
    section.itemIds.forEach((itemId) => items.add(itemId));
  }
  return [...items];
}

/** 2024-01-07 is a Sunday: day d of that week starts d days later (UTC). */
const SUNDAY_UTC = Date.UTC(2024, 0, 7);

const generatedArb = fc.record({
  items: fc.integer({ min: 20, max: 300 }),
  seed: fc.integer({ min: 1, max: 0x7fffffff }),
  modifierDepth: fc.integer({ min: 1, max: 3 }),
});

/**
 * A generated catalog and an instant (UTC) inside one window of one of its catalogs; the
 * orderable items are that catalog's available items. The instant is built from the window
 * itself, not with the engine's window logic.
 */
const scenarioArb: fc.Arbitrary<Scenario> = generatedArb.chain((options) => {
  const document = generateCatalogSet({ storeId: STORE, ...options });
  const catalog = compile(document);
  const menus = Object.values(document.catalogs)
    .map((menu) => ({
      windows: menu.availability,
      items: reachableItems(document, menu.sectionIds).filter(
        (itemId) => document.items[itemId]!.isAvailable,
      ),
    }))
    .filter((menu) => menu.windows.length > 0 && menu.items.length > 0);
  if (menus.length === 0) throw new Error(`no orderable menu in ${JSON.stringify(options)}`);
  return fc
    .constantFrom(...menus)
    .chain((menu) =>
      fc.constantFrom(...menu.windows).chain((window) => {
        const start = secondsOf(window.start);
        const end = window.end === '00:00:00' ? 86_400 : secondsOf(window.end);
        return fc.integer({ min: start, max: end - 1 }).map((second) => ({ menu, window, second }));
      }),
    )
    .map(({ menu, window, second }) => ({
      document,
      catalog,
      orderable: menu.items,
      context: {
        catalog,
        orderTime: {
          timezone: 'UTC',
          at: new Date(SUNDAY_UTC + DAYS.indexOf(window.dayOfWeek) * 86_400_000 + second * 1000),
        },
      },
    }));
});

/** Split `units` into consecutive positive parts (a cut after unit i when cuts[i]). */
function partition(units: number, cuts: readonly boolean[]): number[] {
  const parts: number[] = [];
  let run = 1;
  for (let i = 0; i < units - 1; i++) {
    if (cuts[i]) {
      parts.push(run);
      run = 1;
    } else run++;
  }
  parts.push(run);
  return parts;
}

/** A valid line for `itemId` (lineItemIds left empty): every group filled within its bounds. */
function validLineArb(
  document: GeneratedCatalogSet,
  itemId: string,
  quantity: fc.Arbitrary<number>,
): fc.Arbitrary<LineItemInput> {
  const item = document.items[itemId]!;
  const groups = item.modifierGroupIds.map((groupId) => selectionArb(document, groupId));
  return fc
    .record({ quantity, groups: fc.tuple(...groups), omitEmpty: fc.boolean() })
    .map(({ quantity: chosen, groups: selections, omitEmpty }) => {
      const kept = selections.filter((selection) => !omitEmpty || selection.lineItems.length > 0);
      return {
        itemId,
        lineItemId: '',
        quantity: chosen,
        modifierGroups: kept.length === 0 && omitEmpty ? undefined : kept,
      };
    });
}

/** A selection of a group: between minimumAllowed and maximumAllowed units in total. */
function selectionArb(
  document: GeneratedCatalogSet,
  groupId: string,
): fc.Arbitrary<{ modifierGroupId: string; lineItems: LineItemInput[] }> {
  const group = document.modifierGroups[groupId]!;
  return fc
    .integer({ min: group.minimumAllowed, max: group.maximumAllowed })
    .chain((units) =>
      units === 0
        ? fc.constant([] as number[])
        : fc
            .array(fc.boolean(), { minLength: units - 1, maxLength: units - 1 })
            .map((cuts) => partition(units, cuts)),
    )
    .chain((quantities) =>
      fc.tuple(
        ...quantities.map((quantity) =>
          fc
            .constantFrom(...group.itemIds)
            .chain((optionId) => validLineArb(document, optionId, fc.constant(quantity))),
        ),
      ),
    )
    .map((lineItems) => ({ modifierGroupId: groupId, lineItems }));
}

function topLineArb(scenario: Scenario): fc.Arbitrary<LineItemInput> {
  return fc
    .constantFrom(...scenario.orderable)
    .chain((itemId) =>
      validLineArb(
        scenario.document,
        itemId,
        fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 999 })),
      ),
    );
}

/** Give every line (nested ones too) a distinct uuid, unique per `salt`. */
function withFreshIds(lines: readonly LineItemInput[], salt: number): LineItemInput[] {
  const prefix = (salt >>> 0).toString(16).padStart(8, '0');
  let counter = 0;
  const visit = (input: LineItemInput): LineItemInput => ({
    ...input,
    lineItemId: uuid(++counter, prefix),
    modifierGroups: input.modifierGroups?.map((group) => ({
      ...group,
      lineItems: group.lineItems.map(visit),
    })),
  });
  return lines.map(visit);
}

interface ValidCase {
  readonly scenario: Scenario;
  readonly cart: CartInput;
  /** Another valid line, with an id that no line of the cart uses. */
  readonly extra: LineItemInput;
}

function validCaseArb(minLines: number): fc.Arbitrary<ValidCase> {
  return scenarioArb.chain((scenario) =>
    fc
      .record({
        lines: fc.array(topLineArb(scenario), { minLength: minLines, maxLength: 8 }),
        extra: topLineArb(scenario),
        salt: fc.nat(),
      })
      .map(({ lines, extra, salt }) => {
        const [fresh, ...rest] = withFreshIds([extra, ...lines], salt);
        return {
          scenario,
          extra: fresh!,
          cart: { catalogSetId: scenario.catalog.catalogSetId, storeId: STORE, lineItems: rest },
        };
      }),
  );
}

const cents = (amount: number) => Math.round(amount * 100);

/** Check a priced line against the raw document; returns its expected total in cents. */
function expectPricedLine(
  document: GeneratedCatalogSet,
  input: LineItemInput,
  priced: PricedLineItem | undefined,
): number {
  const item = document.items[input.itemId]!;
  expect(priced).toMatchObject({
    itemId: input.itemId,
    lineItemId: input.lineItemId,
    quantity: input.quantity,
    name: item.name,
  });
  const selections = input.modifierGroups ?? [];
  expect(priced!.modifierGroups).toHaveLength(selections.length);
  let unitCents = cents(item.basePrice);
  selections.forEach((selection, groupIndex) => {
    const pricedGroup = priced!.modifierGroups[groupIndex];
    expect(pricedGroup).toMatchObject({
      modifierGroupId: selection.modifierGroupId,
      name: document.modifierGroups[selection.modifierGroupId]!.name,
    });
    expect(pricedGroup!.lineItems).toHaveLength(selection.lineItems.length);
    selection.lineItems.forEach((option, optionIndex) => {
      unitCents += expectPricedLine(document, option, pricedGroup!.lineItems[optionIndex]);
    });
  });
  const totalCents = unitCents * input.quantity;
  expect(cents(priced!.unitPrice!)).toBe(unitCents);
  expect(priced!.unitPrice).toBe(unitCents / 100);
  expect(cents(priced!.totalPrice!)).toBe(totalCents);
  expect(priced!.totalPrice).toBe(totalCents / 100);
  return totalCents;
}

describe('priceCart: item availability overrides', () => {
  const at = MONDAY_NOON_UTC;
  const overridden = (entries: [string, number][], when = at) => ({
    until: new Map(entries),
    at: when,
  });

  it('refuses an overridden item until its until, at the line, and prices the others', () => {
    const { ids, catalog, context } = testCatalog();
    const cart = cartOf(catalog, [line(ids.soda), line(ids.pancakes, 2)]);
    const inAnHour = at.getTime() + 3_600_000;
    const result = priceCart(cart, {
      ...context,
      orderTime: undefined,
      overrides: overridden([[ids.pancakes, inAnHour]]),
    });
    expect(errorsOf(result)).toEqual([{ code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/1' }]);
    expect(result.lineErrors[1]?.[0]?.message).toBe(
      `Pancakes is not available until ${new Date(inAnHour).toISOString()}`,
    );
    expect(result.cart.lineItems[1]?.totalPrice).toBeNull();
    expect(result.cart.subTotal).toBe(1.99);
  });

  it('takes an item back once until has passed (until itself is past)', () => {
    const { ids, catalog, context } = testCatalog();
    const cart = cartOf(catalog, [line(ids.soda)]);
    const until = at.getTime();
    okResult(priceCart(cart, { ...context, overrides: overridden([[ids.soda, until]]) }));
    expect(
      errorsOf(
        priceCart(cart, {
          ...context,
          overrides: overridden([[ids.soda, until]], new Date(until - 1)),
        }),
      ),
    ).toEqual([{ code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/0' }]);
  });

  it('refuses an item overridden until cleared', () => {
    const { ids, catalog, context } = testCatalog();
    const result = priceCart(cartOf(catalog, [line(ids.soda)]), {
      ...context,
      overrides: overridden([[ids.soda, Infinity]]),
    });
    expect(errorsOf(result)).toEqual([{ code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/0' }]);
    expect(result.lineErrors[0]?.[0]?.message).toBe('Soda is not available for now');
  });

  it('refuses an overridden modifier option at its pointer, nested ones too', () => {
    const { ids, catalog, context } = testCatalog();
    const burger = line(ids.burger, 1, [
      { modifierGroupId: ids.side, lineItems: [line(ids.fries)] },
      {
        modifierGroupId: ids.extras,
        lineItems: [
          line(ids.bacon, 1, [{ modifierGroupId: ids.baconStyle, lineItems: [line(ids.chewy)] }]),
        ],
      },
    ]);
    const overrides = overridden([
      [ids.fries, Infinity],
      [ids.chewy, Infinity],
    ]);
    expect(errorsOf(priceCart(cartOf(catalog, [burger]), { ...context, overrides }))).toEqual([
      { code: 'ITEM_UNAVAILABLE', pointer: '/lineItems/0/modifierGroups/0/lineItems/0' },
      {
        code: 'ITEM_UNAVAILABLE',
        pointer: '/lineItems/0/modifierGroups/1/lineItems/0/modifierGroups/0/lineItems/0',
      },
    ]);
    // The same burger with the other side and style is priced.
    const other = line(ids.burger, 1, [
      { modifierGroupId: ids.side, lineItems: [line(ids.salad)] },
      {
        modifierGroupId: ids.extras,
        lineItems: [
          line(ids.bacon, 1, [{ modifierGroupId: ids.baconStyle, lineItems: [line(ids.crispy)] }]),
        ],
      },
    ]);
    okResult(priceCart(cartOf(catalog, [other]), { ...context, overrides }));
  });

  it('changes nothing for items without an override', () => {
    const { ids, catalog, context } = testCatalog();
    const cart = cartOf(catalog, [line(ids.soda, 3)]);
    const plain = priceCart(cart, context);
    const withOthers = priceCart(cart, {
      ...context,
      overrides: overridden([[randomUUID(), Infinity]]),
    });
    expect(withOthers.cart).toEqual(plain.cart);
  });
});

describe('priceCart: properties over generated catalogs', () => {
  it('a. prices a valid cart exactly: subTotal = Σ unit × quantity, unit = base + Σ options', () => {
    fc.assert(
      fc.property(validCaseArb(0), ({ scenario, cart }) => {
        const result = okResult(priceCart(cart, scenario.context));
        expect(result.cart.lineItems).toHaveLength(cart.lineItems.length);
        let expectedCents = 0;
        cart.lineItems.forEach((input, index) => {
          expectedCents += expectPricedLine(scenario.document, input, result.cart.lineItems[index]);
        });
        expect(result.subTotalMinor).toBe(expectedCents);
        expect(cents(result.cart.subTotal)).toBe(expectedCents);
        expect(result.cart.subTotal).toBe(expectedCents / 100);
        expect(result.cart).toMatchObject({
          catalogSetId: cart.catalogSetId,
          storeId: STORE,
          currency: 'USD',
          itemCount: cart.lineItems.reduce((sum, input) => sum + input.quantity, 0),
        });
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('b. repricing is idempotent, also from the priced output fed back as input', () => {
    fc.assert(
      fc.property(validCaseArb(0), ({ scenario, cart }) => {
        const first = okResult(priceCart(cart, scenario.context));
        expect(priceCart(cart, scenario.context)).toEqual(first);
        // The priced cart carries the computed fields; they are ignored on input.
        const fedBack: CartInput = structuredClone(first.cart);
        expect(priceCart(fedBack, scenario.context)).toEqual(first);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('c. adding then removing a line gives back the original cart', () => {
    fc.assert(
      fc.property(validCaseArb(0), ({ cart, extra }) => {
        const original = structuredClone(cart);
        const added = addItem({ cart, item: extra });
        if (!added.ok) throw new Error(JSON.stringify(added.errors));
        expect(added.cart.lineItems).toHaveLength(cart.lineItems.length + 1);
        const removed = removeItem({ cart: added.cart, lineItemId: extra.lineItemId });
        if (!removed.ok) throw new Error(JSON.stringify(removed.errors));
        expect(removed.cart).toEqual(original);
        expect(cart).toEqual(original); // the input is not mutated
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('d. never throws on hostile carts; every error points into /lineItems', () => {
    const duplicatePool = [uuid(0xd1), uuid(0xd2), uuid(0xd3)];
    const quantityArb = fc.oneof(
      fc.integer({ min: 1, max: 999 }),
      fc.integer({ min: -2_147_483_648, max: 2_147_483_647 }),
      fc.constantFrom(0, -1, 1000, 2_147_483_647, -2_147_483_648, Number.MAX_SAFE_INTEGER),
    );
    const hostileLineArb = (
      itemIds: string[],
      groupIds: string[],
      depth: number,
    ): fc.Arbitrary<LineItemInput> => {
      const base = {
        itemId: fc.oneof(fc.constantFrom(...itemIds), fc.uuid()),
        lineItemId: fc.oneof(fc.constantFrom(...duplicatePool), fc.uuid()),
        quantity: quantityArb,
      };
      if (depth === 0) return fc.record(base);
      return fc.record({
        ...base,
        modifierGroups: fc.option(
          fc.array(
            fc.record({
              modifierGroupId: fc.oneof(fc.constantFrom(...groupIds), fc.uuid()),
              lineItems: fc.array(hostileLineArb(itemIds, groupIds, depth - 1), { maxLength: 3 }),
            }),
            { maxLength: 2 },
          ),
          { nil: undefined },
        ),
      });
    };
    const hostileArb = generatedArb.chain((options) => {
      const document = generateCatalogSet({ storeId: STORE, ...options });
      const catalog = compile(document);
      const itemIds = Object.keys(document.items);
      const groupIds = [...Object.keys(document.modifierGroups), uuid(0xbad)];
      return fc.record({
        catalog: fc.constant(catalog),
        lines: fc.oneof(
          {
            arbitrary: fc.array(hostileLineArb(itemIds, groupIds, 5), { maxLength: 8 }),
            weight: 9,
          },
          {
            arbitrary: fc.array(hostileLineArb(itemIds, groupIds, 0), {
              minLength: 99,
              maxLength: 103,
            }),
            weight: 1,
          },
        ),
        timezone: fc.constantFrom('UTC', 'America/Chicago', 'Asia/Kolkata', 'Pacific/Chatham'),
        at: fc.date({
          min: new Date('2000-01-01T00:00:00Z'),
          max: new Date('2100-01-01T00:00:00Z'),
          noInvalidDate: true,
        }),
      });
    });
    fc.assert(
      fc.property(hostileArb, ({ catalog, lines, timezone, at }) => {
        const result = priceCart(cartOf(catalog, lines), { catalog, orderTime: { timezone, at } });
        expect(Number.isSafeInteger(result.subTotalMinor)).toBe(true);
        for (const { pointer } of allErrors(result)) {
          expect(pointer === '/lineItems' || pointer?.startsWith('/lineItems/')).toBe(true);
        }
        // Lines with problems have no price and count for nothing; the others add up.
        result.lineErrors.forEach((errors, index) => {
          const priced = result.cart.lineItems[index]!;
          expect(priced.totalPrice === null).toBe(errors.length > 0);
        });
        expect(result.cart.itemCount).toBe(
          result.cart.lineItems
            .filter((priced) => priced.totalPrice !== null)
            .reduce((sum, priced) => sum + priced.quantity, 0),
        );
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('e. one line with quantity 0 gives exactly one QUANTITY_INVALID at that line', () => {
    fc.assert(
      fc.property(validCaseArb(1), fc.nat(), ({ scenario, cart }, pick) => {
        const index = pick % cart.lineItems.length;
        const corrupted: CartInput = {
          ...cart,
          lineItems: cart.lineItems.map((input, at) =>
            at === index ? { ...input, quantity: 0 } : input,
          ),
        };
        const result = priceCart(corrupted, scenario.context);
        expect(allErrors(result)).toEqual([
          {
            code: 'QUANTITY_INVALID',
            message: expect.any(String),
            pointer: `/lineItems/${index}/quantity`,
          },
        ]);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('refuses a modifier option ordered top-level', () => {
    fc.assert(
      fc.property(scenarioArb, fc.nat(), (scenario, pick) => {
        const options = Object.values(scenario.document.modifierGroups).flatMap(
          (group) => group.itemIds,
        );
        const optionId = options[pick % options.length]!;
        const result = priceCart(cartOf(scenario.catalog, [line(optionId)]), scenario.context);
        expect(errorsOf(result)).toContainEqual({
          code: 'ITEM_UNAVAILABLE',
          pointer: '/lineItems/0',
        });
      }),
      { numRuns: 50 },
    );
  });
});
