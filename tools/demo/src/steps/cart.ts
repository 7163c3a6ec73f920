// The distribution partner builds a cart from the catalog it read, with the cart helpers.
import type { components, PlatformClient } from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { call } from '../exchanges.js';
import { check, json, money, step } from '../output.js';
import type { readCatalog } from './shopping.js';
import type { OpenStore } from './store.js';

type Catalog = Awaited<ReturnType<typeof readCatalog>>;
type Item = Catalog['items'][string];

/** A cart line of `quantity` × `item`, with its chosen modifiers. */
const line = (item: Item, quantity: number, modifierGroups?: ModifierChoice[]) => ({
  itemId: item.itemId,
  lineItemId: randomUUID(),
  quantity,
  ...(modifierGroups ? { modifierGroups } : {}),
});
type CartLine = ReturnType<typeof line>;
interface ModifierChoice {
  modifierGroupId: string;
  lineItems: CartLine[];
}

export async function buildCart(market: PlatformClient, store: OpenStore, catalog: Catalog) {
  // Pick by name from what was read, as a partner's menu screen would.
  const byName = (name: string) => {
    const found = Object.values(catalog.items).find((item) => item.name === name);
    check(found, `an item named ${name}`, 'none');
    return found;
  };
  const choose = (item: Item, groupName: string, ...lineItems: CartLine[]): ModifierChoice => {
    const group = (item.modifierGroupIds ?? [])
      .map((id) => catalog.modifierGroups[id])
      .find((candidate) => candidate?.name === groupName);
    check(group, `a modifier group ${groupName} on ${item.name}`, 'none');
    return { modifierGroupId: group.modifierGroupId, lineItems };
  };
  const burger = byName('Burger');
  const soda = byName('Soda');
  const fries = byName('Fries');
  const bacon = byName('Bacon');
  const crispy = byName('Crispy');

  step('… builds a cart with the cart helpers');
  const burgerLine = line(burger, 1, [
    choose(burger, 'Side', line(fries, 1)),
    choose(burger, 'Extras', line(bacon, 1, [choose(bacon, 'Bacon style', line(crispy, 1))])),
  ]);
  const printing = (note: string) => ({
    note,
    answer: (body: components['schemas']['PricedCart']) =>
      `subTotal ${money(body.subTotal)}, ${body.itemCount} items: ${body.lineItems
        .map((priced) => `${priced.quantity}× ${priced.name} ${money(priced.totalPrice)}`)
        .join(', ')}`,
  });
  const { storeId, catalogSetId } = store;
  const first = await call(
    () =>
      market.POST('/v1/marketfront/carts/add', {
        body: { item: burgerLine, cart: null, catalogSetId, storeId },
      }),
    200,
    printing('1× Burger with Fries and crispy Bacon, a new cart'),
  );
  // A partner sends back the cart it was given (its computed fields are ignored).
  const cart = await call(
    () => market.POST('/v1/marketfront/carts/add', { body: { item: line(soda, 2), cart: first } }),
    200,
    printing('2× Soda'),
  );
  // 9.50 + 1.25 + 1.10 (+ 0.00 crispy) for the burger, 2 × 1.99 for the sodas.
  check(cart.subTotal === 15.83 && cart.itemCount === 3, 'subTotal 15.83 for 3 items', () =>
    json({ subTotal: cart.subTotal, itemCount: cart.itemCount, errors: cart.errors }),
  );
  return cart;
}
