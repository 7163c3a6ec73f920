import { randomUUID } from 'node:crypto';
import { alwaysOpen } from './fixtures.js';

/**
 * A small CatalogSet with known prices for cart tests: a burger with a required side
 * (min 1, max 1) and optional extras (max 3) whose bacon has a required nested style, a
 * soda, an unavailable item and a breakfast item in a catalog that never opens.
 */
export function cartTestCatalog(storeId: string, prices: { burger?: number; soda?: number } = {}) {
  const id = () => randomUUID();
  const ids = {
    catalogSetId: id(),
    allDay: id(),
    breakfastMenu: id(),
    mains: id(),
    breakfastSection: id(),
    burger: id(),
    soda: id(),
    soldOut: id(),
    pancakes: id(),
    fries: id(),
    salad: id(),
    bacon: id(),
    crispy: id(),
    chewy: id(),
    side: id(),
    extras: id(),
    baconStyle: id(),
  };
  const item = (
    itemId: string,
    name: string,
    basePrice: number,
    extra: Record<string, unknown> = {},
  ) => ({
    [itemId]: { itemId, name, basePrice, ...extra },
  });
  const document = {
    catalogSetId: ids.catalogSetId,
    storeId,
    currency: 'USD',
    catalogs: {
      [ids.allDay]: {
        catalogId: ids.allDay,
        name: 'All day',
        sectionIds: [ids.mains],
        availability: alwaysOpen,
      },
      [ids.breakfastMenu]: {
        catalogId: ids.breakfastMenu,
        name: 'Breakfast',
        sectionIds: [ids.breakfastSection],
        availability: [],
      },
    },
    sections: {
      [ids.mains]: {
        sectionId: ids.mains,
        name: 'Mains',
        itemIds: [ids.burger, ids.soda, ids.soldOut],
      },
      [ids.breakfastSection]: {
        sectionId: ids.breakfastSection,
        name: 'Breakfast',
        itemIds: [ids.pancakes],
      },
    },
    items: {
      ...item(ids.burger, 'Burger', prices.burger ?? 9.5, {
        modifierGroupIds: [ids.side, ids.extras],
      }),
      ...item(ids.soda, 'Soda', prices.soda ?? 1.99),
      ...item(ids.soldOut, 'Sold out special', 5, { isAvailable: false }),
      ...item(ids.pancakes, 'Pancakes', 6),
      ...item(ids.fries, 'Fries', 1.25),
      ...item(ids.salad, 'Side salad', 0),
      ...item(ids.bacon, 'Bacon', 1.1, { modifierGroupIds: [ids.baconStyle] }),
      ...item(ids.crispy, 'Crispy', 0),
      ...item(ids.chewy, 'Chewy', 0.2),
    },
    modifierGroups: {
      [ids.side]: {
        modifierGroupId: ids.side,
        name: 'Side',
        minimumAllowed: 1,
        maximumAllowed: 1,
        itemIds: [ids.fries, ids.salad],
      },
      [ids.extras]: {
        modifierGroupId: ids.extras,
        name: 'Extras',
        minimumAllowed: 0,
        maximumAllowed: 3,
        itemIds: [ids.bacon],
      },
      [ids.baconStyle]: {
        modifierGroupId: ids.baconStyle,
        name: 'Bacon style',
        minimumAllowed: 1,
        maximumAllowed: 1,
        itemIds: [ids.crispy, ids.chewy],
      },
    },
  };
  return { document, ids };
}
