import type { AvailabilityWindow, DayOfWeek } from './availability.js';
import { dayOfWeek } from './availability.js';
import type { CatalogSetDocument } from './catalog.js';
import { fixtureStoreIds } from './sandbox.js';

/** 32-bit FNV-1a of `text` after `seed`: no crypto module, so browsers load contracts too. */
function fnv1a(text: string, seed: number): string {
  let hash = 0x811c9dc5 ^ seed;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/** A stable GUID for a fixture entity, so every deployment serves the same ids. */
function fixtureId(name: string): string {
  const hex = [1, 2, 3, 4].map((seed) => fnv1a(`pcp-fixture/${name}`, seed)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const everyDay = (start: string, end: string): AvailabilityWindow[] =>
  dayOfWeek.options.map((day: DayOfWeek) => ({ dayOfWeek: day, start, end }));

interface ItemSpec {
  name: string;
  price: number;
  description?: string;
  modifiers?: string[];
}
interface GroupSpec {
  name: string;
  min: number;
  max: number;
  items: string[];
}
interface SectionSpec {
  name: string;
  items?: string[];
  sections?: string[];
}
interface CatalogSpec {
  name: string;
  sections: string[];
  /** Local opening, every day; absent: all day. */
  hours?: [string, string];
}
interface FixtureSpec {
  storeId: string;
  currency: string;
  catalogs: CatalogSpec[];
  sections: Record<string, SectionSpec>;
  items: Record<string, ItemSpec>;
  groups: Record<string, GroupSpec>;
}

/** Builds a document from names: each entity's id is derived from its store and key. */
function build(spec: FixtureSpec): CatalogSetDocument {
  const id = (kind: string, key: string) => fixtureId(`${spec.storeId}/${kind}/${key}`);
  const catalogs = Object.fromEntries(
    spec.catalogs.map((catalog) => {
      const catalogId = id('catalog', catalog.name);
      return [
        catalogId,
        {
          catalogId,
          name: catalog.name,
          sectionIds: catalog.sections.map((key) => id('section', key)),
          availability: catalog.hours
            ? everyDay(...catalog.hours)
            : everyDay('00:00:00', '00:00:00'),
        },
      ];
    }),
  );
  const sections = Object.fromEntries(
    Object.entries(spec.sections).map(([key, section]) => {
      const sectionId = id('section', key);
      return [
        sectionId,
        {
          sectionId,
          name: section.name,
          ...(section.sections
            ? { sectionIds: section.sections.map((s) => id('section', s)) }
            : {}),
          ...(section.items ? { itemIds: section.items.map((i) => id('item', i)) } : {}),
        },
      ];
    }),
  );
  const items = Object.fromEntries(
    Object.entries(spec.items).map(([key, item]) => {
      const itemId = id('item', key);
      return [
        itemId,
        {
          itemId,
          name: item.name,
          basePrice: item.price,
          ...(item.description ? { description: item.description } : {}),
          ...(item.modifiers
            ? { modifierGroupIds: item.modifiers.map((g) => id('group', g)) }
            : {}),
        },
      ];
    }),
  );
  const modifierGroups = Object.fromEntries(
    Object.entries(spec.groups).map(([key, group]) => {
      const modifierGroupId = id('group', key);
      return [
        modifierGroupId,
        {
          modifierGroupId,
          name: group.name,
          minimumAllowed: group.min,
          maximumAllowed: group.max,
          itemIds: group.items.map((i) => id('item', i)),
        },
      ];
    }),
  );
  return {
    catalogSetId: id('catalogSet', 'v1'),
    storeId: spec.storeId,
    currency: spec.currency,
    catalogs,
    sections,
    items,
    modifierGroups,
  };
}

const [newYork, london, tokyo] = fixtureStoreIds;

/** New York: a diner; burgers with a required side and extras whose bacon has a required style. */
const newYorkCatalog = build({
  storeId: newYork,
  currency: 'USD',
  catalogs: [
    { name: 'All day', sections: ['burgers', 'drinks'] },
    { name: 'Breakfast', sections: ['breakfast'], hours: ['06:00:00', '11:00:00'] },
  ],
  sections: {
    burgers: { name: 'Burgers', sections: ['classics', 'specials'] },
    classics: { name: 'Classics', items: ['cheeseburger', 'veggie'] },
    specials: { name: 'House specials', items: ['patty-melt'] },
    drinks: { name: 'Drinks', items: ['soda', 'shake'] },
    breakfast: { name: 'Breakfast', items: ['pancakes', 'eggs'] },
  },
  items: {
    cheeseburger: {
      name: 'Cheeseburger',
      price: 11.5,
      description: 'Two smashed patties, American cheese, pickles',
      modifiers: ['side', 'extras'],
    },
    veggie: { name: 'Veggie burger', price: 10.75, modifiers: ['side'] },
    'patty-melt': { name: 'Patty melt', price: 12.25, modifiers: ['side', 'extras'] },
    soda: { name: 'Fountain soda', price: 2.5 },
    shake: { name: 'Milkshake', price: 6, modifiers: ['flavor'] },
    pancakes: { name: 'Buttermilk pancakes', price: 9, modifiers: ['toppings'] },
    eggs: { name: 'Two eggs any style', price: 8.5, modifiers: ['egg-style'] },
    fries: { name: 'Fries', price: 0 },
    salad: { name: 'Side salad', price: 1.5 },
    bacon: { name: 'Bacon', price: 2, modifiers: ['bacon-style'] },
    avocado: { name: 'Avocado', price: 1.75 },
    crispy: { name: 'Crispy', price: 0 },
    chewy: { name: 'Chewy', price: 0 },
    vanilla: { name: 'Vanilla', price: 0 },
    chocolate: { name: 'Chocolate', price: 0 },
    blueberries: { name: 'Blueberries', price: 1.25 },
    syrup: { name: 'Maple syrup', price: 1 },
    scrambled: { name: 'Scrambled', price: 0 },
    'over-easy': { name: 'Over easy', price: 0 },
  },
  groups: {
    side: { name: 'Side', min: 1, max: 1, items: ['fries', 'salad'] },
    extras: { name: 'Extras', min: 0, max: 3, items: ['bacon', 'avocado'] },
    'bacon-style': { name: 'Bacon style', min: 1, max: 1, items: ['crispy', 'chewy'] },
    flavor: { name: 'Flavor', min: 1, max: 1, items: ['vanilla', 'chocolate'] },
    toppings: { name: 'Toppings', min: 0, max: 2, items: ['blueberries', 'syrup'] },
    'egg-style': { name: 'Eggs', min: 1, max: 1, items: ['scrambled', 'over-easy'] },
  },
});

/** London: fish and chips and pies; afternoon tea only in the afternoon. */
const londonCatalog = build({
  storeId: london,
  currency: 'GBP',
  catalogs: [
    { name: 'All day', sections: ['mains', 'drinks'] },
    { name: 'Afternoon tea', sections: ['tea'], hours: ['14:00:00', '17:00:00'] },
  ],
  sections: {
    mains: { name: 'Mains', sections: ['fish', 'pies'] },
    fish: { name: 'From the fryer', items: ['fish-and-chips', 'scampi'] },
    pies: { name: 'Pies', items: ['steak-pie', 'veg-pie'] },
    drinks: { name: 'Drinks', items: ['lemonade', 'tea-pot'] },
    tea: { name: 'Afternoon tea', items: ['cream-tea'] },
  },
  items: {
    'fish-and-chips': {
      name: 'Cod and chips',
      price: 13.5,
      description: 'Beer-battered cod, chunky chips',
      modifiers: ['peas', 'sauces'],
    },
    scampi: { name: 'Whitby scampi', price: 11, modifiers: ['sauces'] },
    'steak-pie': { name: 'Steak and ale pie', price: 12.75, modifiers: ['pie-side'] },
    'veg-pie': { name: 'Cheese and onion pie', price: 10.5, modifiers: ['pie-side'] },
    lemonade: { name: 'Cloudy lemonade', price: 3.2 },
    'tea-pot': { name: 'Pot of tea', price: 2.8 },
    'cream-tea': { name: 'Cream tea', price: 8.95, modifiers: ['jam'] },
    'mushy-peas': { name: 'Mushy peas', price: 1.5 },
    'garden-peas': { name: 'Garden peas', price: 1.5 },
    tartare: { name: 'Tartare sauce', price: 0.6 },
    curry: { name: 'Curry sauce', price: 0.8 },
    ketchup: { name: 'Ketchup', price: 0 },
    mash: { name: 'Mash', price: 0 },
    chips: { name: 'Chips', price: 0 },
    strawberry: { name: 'Strawberry jam', price: 0 },
    raspberry: { name: 'Raspberry jam', price: 0 },
  },
  groups: {
    peas: { name: 'Peas', min: 0, max: 1, items: ['mushy-peas', 'garden-peas'] },
    sauces: { name: 'Sauces', min: 0, max: 2, items: ['tartare', 'curry', 'ketchup'] },
    'pie-side': { name: 'With', min: 1, max: 1, items: ['mash', 'chips'] },
    jam: { name: 'Jam', min: 1, max: 1, items: ['strawberry', 'raspberry'] },
  },
});

/** Tokyo: ramen with a required broth and firmness, up to four toppings; a lunch set at noon. */
const tokyoCatalog = build({
  storeId: tokyo,
  currency: 'JPY',
  catalogs: [
    { name: 'All day', sections: ['ramen', 'sides'] },
    { name: 'Lunch', sections: ['lunch'], hours: ['11:00:00', '15:00:00'] },
  ],
  sections: {
    ramen: { name: 'Ramen', sections: ['classic', 'seasonal'] },
    classic: { name: 'Classic', items: ['shoyu', 'tonkotsu'] },
    seasonal: { name: 'Seasonal', items: ['yuzu-shio'] },
    sides: { name: 'Sides', items: ['gyoza', 'karaage', 'oolong'] },
    lunch: { name: 'Lunch set', items: ['lunch-set'] },
  },
  items: {
    shoyu: {
      name: 'Shoyu ramen',
      price: 980,
      description: 'Soy-sauce chicken broth',
      modifiers: ['firmness', 'toppings'],
    },
    tonkotsu: { name: 'Tonkotsu ramen', price: 1150, modifiers: ['firmness', 'toppings'] },
    'yuzu-shio': { name: 'Yuzu shio ramen', price: 1200, modifiers: ['firmness', 'toppings'] },
    gyoza: { name: 'Gyoza (6)', price: 450 },
    karaage: { name: 'Karaage', price: 520 },
    oolong: { name: 'Oolong tea', price: 300 },
    'lunch-set': { name: 'Ramen and gyoza set', price: 1300, modifiers: ['broth', 'firmness'] },
    soft: { name: 'Soft', price: 0 },
    regular: { name: 'Regular', price: 0 },
    firm: { name: 'Firm', price: 0 },
    egg: { name: 'Seasoned egg', price: 150 },
    chashu: { name: 'Extra chashu', price: 300 },
    nori: { name: 'Nori', price: 100 },
    corn: { name: 'Butter corn', price: 150 },
    'broth-shoyu': { name: 'Shoyu', price: 0 },
    'broth-miso': { name: 'Miso', price: 50 },
  },
  groups: {
    firmness: { name: 'Noodle firmness', min: 1, max: 1, items: ['soft', 'regular', 'firm'] },
    toppings: { name: 'Toppings', min: 0, max: 4, items: ['egg', 'chashu', 'nori', 'corn'] },
    broth: { name: 'Broth', min: 1, max: 1, items: ['broth-shoyu', 'broth-miso'] },
  },
});

/**
 * The fixture stores' CatalogSets (docs/guide/sandbox.md#fixture-stores), by store id, as bundled
 * with the platform: the catalog service activates them itself. Each has modifier groups with
 * minimums and maximums (one nested in another's item), sections nested in sections and a catalog
 * open only some hours of the store's day.
 */
export const fixtureCatalogSets: Readonly<Record<string, CatalogSetDocument>> = {
  [newYork]: newYorkCatalog,
  [london]: londonCatalog,
  [tokyo]: tokyoCatalog,
};

/** Items of a fixture store that its occasional events mark unavailable (none is a modifier). */
export const fixtureSoldOutItemIds: Readonly<Record<string, readonly string[]>> = {
  [newYork]: ['shake', 'patty-melt'].map((key) => fixtureId(`${newYork}/item/${key}`)),
  [london]: ['scampi', 'veg-pie'].map((key) => fixtureId(`${london}/item/${key}`)),
  [tokyo]: ['yuzu-shio', 'karaage'].map((key) => fixtureId(`${tokyo}/item/${key}`)),
};
