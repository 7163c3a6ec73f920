/**
 * Deterministic generator of valid CatalogSet documents (docs/guide/catalogs.md#the-catalogset) for
 * benchmarks and tests. The same options always give the same document: ids and content come from a
 * small seeded PRNG, never from Math.random.
 *
 * Layout: `items` dictionary entries in total, of which about a quarter are modifier
 * options (options are items too). Options are organised in `modifierDepth` levels of
 * shared modifier groups with 3-4 options each; every top-level item uses 1-2 level-1
 * groups, every option below the last level uses 1-2 groups of the next level. Top-level
 * items fill ~50-item sections (every fifth section nested in the one before it), and the
 * top sections are spread over three catalogs with availability windows. Small documents
 * get fewer modifier levels (each level needs at least one group of three options), and
 * documents under 12 items get no modifiers at all.
 */
import { currencyExponent } from '@pcp/contracts';
import { mulberry32 } from './prng.js';

export interface GeneratedAvailabilityWindow {
  dayOfWeek: string;
  start: string;
  end: string;
}

export interface GeneratedItem {
  itemId: string;
  name: string;
  description?: string;
  basePrice: number;
  isAvailable: boolean;
  modifierGroupIds: string[];
  imageUrl?: string;
}

export interface GeneratedCatalogSet {
  catalogSetId: string;
  storeId: string;
  currency: string;
  catalogs: Record<
    string,
    {
      catalogId: string;
      name: string;
      sectionIds: string[];
      availability: GeneratedAvailabilityWindow[];
    }
  >;
  sections: Record<
    string,
    { sectionId: string; name: string; sectionIds: string[]; itemIds: string[] }
  >;
  items: Record<string, GeneratedItem>;
  modifierGroups: Record<
    string,
    {
      modifierGroupId: string;
      name: string;
      minimumAllowed: number;
      maximumAllowed: number;
      itemIds: string[];
    }
  >;
}

export interface GenerateCatalogSetOptions {
  storeId: string;
  /** Exact number of entries of the `items` dictionary (top-level items plus options). */
  items: number;
  /** ISO 4217 code; prices get its number of fraction digits. Default USD. */
  currency?: string;
  /** PRNG seed; the same options always give the same document. Default 1. */
  seed?: number;
  /** Levels of modifier nesting (fewer on small documents). Default 2. */
  modifierDepth?: number;
}

interface ModifierGroupPlan {
  readonly id: string;
  readonly options: string[];
}

/** murmur3 fmix32: a bijection on 32-bit integers, so distinct inputs give distinct outputs. */
function fmix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over a string, for ids derived from the storeId. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function hex(value: number, width: number): string {
  return (value >>> 0).toString(16).padStart(8, '0').slice(-width);
}

/**
 * A UUID-shaped id (version nibble 4, variant 8) from a namespace and a counter. The last
 * eight hex digits are a bijection of the counter, so ids of one namespace never collide.
 */
function uuidFrom(namespace: number, counter: number): string {
  const mixed = fmix32(counter ^ namespace);
  const spread = fmix32(mixed + 0x9e3779b9);
  return (
    `${hex(fmix32(namespace), 8)}-${hex(spread >>> 16, 4)}-4${hex(spread, 3)}-` +
    `8${hex(spread >>> 20, 3)}-${hex(fmix32(spread ^ namespace), 4)}${hex(mixed, 8)}`
  );
}

const ADJECTIVES = [
  'Classic',
  'Spicy',
  'Smoked',
  'Grilled',
  'Crispy',
  'Double',
  'Garden',
  'Seasonal',
  'House',
  'Roasted',
  'Tangy',
  'Golden',
];
const DISHES = [
  'Burger',
  'Wrap',
  'Salad',
  'Bowl',
  'Sandwich',
  'Pizza',
  'Taco',
  'Noodles',
  'Curry',
  'Soup',
  'Flatbread',
  'Platter',
];
const INGREDIENTS = [
  'cheddar',
  'avocado',
  'pickled onions',
  'roasted peppers',
  'fresh basil',
  'chipotle mayo',
  'sesame slaw',
  'crispy shallots',
  'lime crema',
  'garlic butter',
  'charred corn',
  'toasted seeds',
];
const OPTIONS = [
  'Extra cheese',
  'No onions',
  'Bacon',
  'Fries',
  'Side salad',
  'Gluten-free bun',
  'Large',
  'Small',
  'Hot sauce',
  'Oat milk',
  'Double shot',
  'Avocado',
];
const GROUPS = ['Choose a side', 'Add extras', 'Choose a size', 'Sauces', 'Toppings', 'Drinks'];
const SECTIONS = ['Burgers', 'Bowls', 'Salads', 'Sides', 'Drinks', 'Desserts', 'Specials'];

/** The three catalogs and their windows; an overnight window is two entries. */
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const CATALOGS = [
  {
    name: 'Breakfast',
    availability: DAYS.map((dayOfWeek, day) =>
      day === 0 || day === 6
        ? { dayOfWeek, start: '08:00:00', end: '12:00:00' }
        : { dayOfWeek, start: '07:00:00', end: '11:00:00' },
    ),
  },
  {
    name: 'Lunch',
    availability: DAYS.map((dayOfWeek) => ({ dayOfWeek, start: '11:00:00', end: '15:00:00' })),
  },
  {
    name: 'Dinner',
    availability: [
      ...DAYS.map((dayOfWeek) => ({ dayOfWeek, start: '17:00:00', end: '00:00:00' })),
      // Friday and Saturday nights run past midnight.
      { dayOfWeek: 'Saturday', start: '00:00:00', end: '02:00:00' },
      { dayOfWeek: 'Sunday', start: '00:00:00', end: '02:00:00' },
    ],
  },
];

/**
 * A valid CatalogSet whose `items` dictionary has exactly `items` entries (top-level items
 * plus modifier options), for `storeId` in `currency`.
 */
export function generateCatalogSet({
  storeId,
  items,
  currency = 'USD',
  seed = 1,
  modifierDepth = 2,
}: GenerateCatalogSetOptions): GeneratedCatalogSet {
  const total = Math.max(0, Math.floor(items));
  const random = mulberry32(seed);
  const pick = (list: readonly string[]): string => list[Math.floor(random() * list.length)]!;
  const namespace = fmix32(seed ^ fnv1a(storeId));
  let counter = 0;
  const nextId = () => uuidFrom(namespace, counter++);
  const scale = 10 ** currencyExponent(currency);
  /** A price between min and max major units with the currency's own precision. */
  const price = (min: number, max: number): number =>
    Math.round((min + random() * (max - min)) * scale) / scale;

  // Plan the modifier levels: each level a list of groups, each group 3-4 option items.
  const optionBudget = Math.floor(total * 0.25);
  const depth = Math.max(0, Math.min(Math.floor(modifierDepth), Math.floor(optionBudget / 3)));
  /** levels[l] = groups of level l+1, each { id, options: string[] } */
  const levels: ModifierGroupPlan[][] = [];
  let optionCount = 0;
  for (let level = 0; level < depth; level++) {
    const groups: ModifierGroupPlan[] = [];
    let remaining = Math.floor(optionBudget / depth);
    while (remaining >= 3) {
      const size = remaining <= 4 ? remaining : remaining >= 7 && random() < 0.5 ? 4 : 3;
      const options: string[] = [];
      for (let i = 0; i < size; i++) options.push(nextId());
      groups.push({ id: nextId(), options });
      remaining -= size;
      optionCount += size;
    }
    levels.push(groups);
  }
  const topLevelCount = total - optionCount;

  /** 1-2 distinct groups of one level. */
  const chooseGroups = (groups: readonly ModifierGroupPlan[]): string[] => {
    if (groups.length === 0) return [];
    const first = Math.floor(random() * groups.length);
    if (groups.length === 1 || random() < 0.5) return [groups[first]!.id];
    const second = (first + 1 + Math.floor(random() * (groups.length - 1))) % groups.length;
    return [groups[first]!.id, groups[second]!.id];
  };

  const itemsDictionary: GeneratedCatalogSet['items'] = {};
  const topLevelIds: string[] = [];
  for (let i = 0; i < topLevelCount; i++) {
    const itemId = nextId();
    topLevelIds.push(itemId);
    const dish = `${pick(ADJECTIVES)} ${pick(DISHES)}`;
    itemsDictionary[itemId] = {
      itemId,
      name: `${dish} ${i + 1}`,
      description: `${dish} with ${pick(INGREDIENTS)}, ${pick(INGREDIENTS)} and ${pick(INGREDIENTS)}, served fresh.`,
      basePrice: price(3, 30),
      isAvailable: random() >= 0.03,
      modifierGroupIds: chooseGroups(levels[0] ?? []),
      imageUrl: `https://images.example.com/catalog/${itemId}.jpg`,
    };
  }

  const groupsDictionary: GeneratedCatalogSet['modifierGroups'] = {};
  levels.forEach((groups, level) => {
    const below = levels[level + 1] ?? [];
    for (const group of groups) {
      for (const itemId of group.options) {
        itemsDictionary[itemId] = {
          itemId,
          name: `${pick(OPTIONS)} (level ${level + 1})`,
          basePrice: random() < 0.3 ? 0 : price(0, 3),
          isAvailable: true,
          modifierGroupIds: chooseGroups(below),
        };
      }
      const minimumAllowed = random() < 0.4 ? 1 : 0;
      const maximumAllowed = Math.max(
        1,
        Math.min(group.options.length, 1 + Math.floor(random() * 3)),
      );
      groupsDictionary[group.id] = {
        modifierGroupId: group.id,
        name: pick(GROUPS),
        minimumAllowed,
        maximumAllowed,
        itemIds: group.options,
      };
    }
  });

  // Sections of ~50 top-level items; every fifth section is nested in the one before it.
  const sectionCount = Math.max(1, Math.ceil(topLevelCount / 50));
  const perSection = Math.ceil(topLevelCount / sectionCount);
  const sectionsDictionary: GeneratedCatalogSet['sections'] = {};
  const sectionIds: string[] = [];
  const topSectionIds: string[] = [];
  for (let s = 0; s < sectionCount; s++) {
    const sectionId = nextId();
    sectionIds.push(sectionId);
    sectionsDictionary[sectionId] = {
      sectionId,
      name: `${SECTIONS[s % SECTIONS.length]} ${s + 1}`,
      sectionIds: [],
      itemIds: topLevelIds.slice(s * perSection, (s + 1) * perSection),
    };
    if (s % 5 === 4) sectionsDictionary[sectionIds[s - 1]!]!.sectionIds.push(sectionId);
    else topSectionIds.push(sectionId);
  }

  const catalogsDictionary: GeneratedCatalogSet['catalogs'] = {};
  CATALOGS.forEach((template, c) => {
    const catalogId = nextId();
    catalogsDictionary[catalogId] = {
      catalogId,
      name: template.name,
      sectionIds: topSectionIds.filter((_, s) => s % CATALOGS.length === c),
      availability: template.availability.map((window) => ({ ...window })),
    };
  });

  const catalogSetHash = fnv1a(`catalogSet:${storeId}`);
  return {
    catalogSetId: uuidFrom(catalogSetHash, 0),
    storeId,
    currency,
    catalogs: catalogsDictionary,
    sections: sectionsDictionary,
    items: itemsDictionary,
    modifierGroups: groupsDictionary,
  };
}

/** A UUID-shaped id that the generator never produces (its variant nibble is 9). */
const MISSING_ID = 'deadbeef-0000-4000-9000-000000000000';

/**
 * A deep copy of `doc` in which one item's first modifierGroupId points nowhere (the
 * first item that has modifier groups, or else the first item, which gets one).
 */
export function withBrokenReference(doc: GeneratedCatalogSet): GeneratedCatalogSet {
  const copy = structuredClone(doc);
  const items = Object.values(copy.items);
  if (items.length === 0) throw new Error('withBrokenReference needs a document with items');
  const target = items.find((item) => item.modifierGroupIds.length > 0) ?? items[0]!;
  if (target.modifierGroupIds.length > 0) target.modifierGroupIds[0] = MISSING_ID;
  else target.modifierGroupIds = [MISSING_ID];
  return copy;
}
