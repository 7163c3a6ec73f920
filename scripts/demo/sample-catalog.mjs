// The demo's CatalogSet: a small diner menu as a commerce partner would host it. Fresh ids on
// every run, so each run's store has a CatalogSet of its own.
import { randomUUID } from 'node:crypto';

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Open every day, all day (`00:00:00` as an end is midnight). */
export const allWeek = DAYS.map((dayOfWeek) => ({ dayOfWeek, start: '00:00:00', end: '00:00:00' }));

/**
 * One catalog ("All day") with two sections: a burger with a required side (one of fries or
 * a salad) and optional extras, and two drinks.
 */
export function sampleCatalogSet(storeId) {
  const ids = {
    catalogSetId: randomUUID(),
    allDay: randomUUID(),
    burgers: randomUUID(),
    drinks: randomUUID(),
    burger: randomUUID(),
    soda: randomUUID(),
    lemonade: randomUUID(),
    fries: randomUUID(),
    salad: randomUUID(),
    cheese: randomUUID(),
    bacon: randomUUID(),
    side: randomUUID(),
    extras: randomUUID(),
  };
  const item = (itemId, name, basePrice, extra = {}) => ({
    [itemId]: { itemId, name, basePrice, ...extra },
  });
  return {
    catalogSetId: ids.catalogSetId,
    storeId,
    currency: 'USD',
    catalogs: {
      [ids.allDay]: {
        catalogId: ids.allDay,
        name: 'All day',
        sectionIds: [ids.burgers, ids.drinks],
        availability: allWeek,
      },
    },
    sections: {
      [ids.burgers]: { sectionId: ids.burgers, name: 'Burgers', itemIds: [ids.burger] },
      [ids.drinks]: { sectionId: ids.drinks, name: 'Drinks', itemIds: [ids.soda, ids.lemonade] },
    },
    items: {
      ...item(ids.burger, 'Classic burger', 9.5, { modifierGroupIds: [ids.side, ids.extras] }),
      ...item(ids.soda, 'Soda', 1.99),
      ...item(ids.lemonade, 'Lemonade', 2.49),
      ...item(ids.fries, 'Fries', 1.25),
      ...item(ids.salad, 'Side salad', 0),
      ...item(ids.cheese, 'Cheddar', 0.8),
      ...item(ids.bacon, 'Bacon', 1.1),
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
        maximumAllowed: 2,
        itemIds: [ids.cheese, ids.bacon],
      },
    },
  };
}
