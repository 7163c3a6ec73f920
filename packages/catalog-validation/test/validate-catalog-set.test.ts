import { catalogLimits, toMinorUnits } from '@pcp/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateCatalogSet, withBrokenReference } from '@pcp/testing/catalog-generator';
import {
  validateCatalogSet,
  type ValidationContext,
  type ValidationResult,
} from '../src/validate-catalog-set.js';

const STORE = '5a1e0000-0000-4000-8000-000000000001';
const INGEST = 'c0ffee00-0000-4000-8000-000000000002';
const context: ValidationContext = { storeId: STORE, catalogIngestId: INGEST, currency: 'USD' };

/** A canonical uuid for a small number, readable in failures. */
function id(n: number): string {
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

const C1 = id(1);
const S1 = id(11);
const S2 = id(12);
const I1 = id(21);
const I2 = id(22);
const I3 = id(23);
const I4 = id(24);
const G1 = id(31);
const MISSING = id(999);

// A loosely typed document: the tests mutate it into every invalid shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = Record<string, any>;

/** A small valid document: catalog → S1 → (S2, I1); S2 → I2; I1 → G1 → (I3, I4). */
function baseDocument(): Doc {
  return {
    catalogSetId: id(100),
    storeId: STORE,
    currency: 'USD',
    catalogs: {
      [C1]: {
        catalogId: C1,
        name: 'Lunch',
        sectionIds: [S1],
        availability: [{ dayOfWeek: 'Monday', start: '11:00:00', end: '15:00:00' }],
      },
    },
    sections: {
      [S1]: { sectionId: S1, name: 'Burgers', sectionIds: [S2], itemIds: [I1] },
      [S2]: { sectionId: S2, name: 'Specials', itemIds: [I2] },
    },
    items: {
      [I1]: {
        itemId: I1,
        name: 'Cheeseburger',
        description: 'With cheddar',
        basePrice: 9.5,
        isAvailable: true,
        modifierGroupIds: [G1],
        imageUrl: 'https://images.example.com/cheeseburger.jpg',
      },
      [I2]: { itemId: I2, name: 'Veggie burger', basePrice: 12.25 },
      [I3]: { itemId: I3, name: 'Fries', basePrice: 0.5 },
      [I4]: { itemId: I4, name: 'Salad', basePrice: 0, isAvailable: false },
    },
    modifierGroups: {
      [G1]: {
        modifierGroupId: G1,
        name: 'Choose a side',
        minimumAllowed: 1,
        maximumAllowed: 1,
        itemIds: [I3, I4],
      },
    },
  };
}

function errorsOf(result: ValidationResult) {
  if (result.ok) throw new Error('expected validation to fail');
  return result.errors;
}

function pathsOf(result: ValidationResult): string[] {
  return errorsOf(result).map((error) => error.path);
}

/** The value an RFC 6901 pointer designates in `doc`. */
function resolvePointer(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  let value = doc;
  for (const token of pointer.slice(1).split('/')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[token.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return value;
}

/**
 * An item whose modifier groups nest `levels` deep: item0 → g1 → item1 → g2 → … → g<levels>
 * → item<levels>. Returns the document and the root item's id.
 */
function nestedDocument(levels: number): { doc: Doc; root: string } {
  const doc = baseDocument();
  const itemId = (level: number) => id(1000 + level);
  const groupId = (level: number) => id(2000 + level);
  for (let level = 0; level <= levels; level++) {
    doc.items[itemId(level)] = {
      itemId: itemId(level),
      name: `Level ${level}`,
      basePrice: 1,
      modifierGroupIds: level < levels ? [groupId(level + 1)] : [],
    };
    if (level > 0) {
      doc.modifierGroups[groupId(level)] = {
        modifierGroupId: groupId(level),
        name: `Group ${level}`,
        minimumAllowed: 0,
        maximumAllowed: 1,
        itemIds: [itemId(level)],
      };
    }
  }
  doc.sections[S2].itemIds.push(itemId(0));
  return { doc, root: itemId(0) };
}

describe('validateCatalogSet: a valid document', () => {
  it('passes with prices in minor units and counts', () => {
    const result = validateCatalogSet(baseDocument(), context);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.catalog.counts).toEqual({
      items: 4,
      sections: 2,
      modifierGroups: 1,
      catalogs: 1,
    });
    expect(Object.fromEntries(result.catalog.prices)).toEqual({
      [I1]: 950,
      [I2]: 1225,
      [I3]: 50,
      [I4]: 0,
    });
    expect(result.catalog.document.storeId).toBe(STORE);
  });
});

describe('validateCatalogSet: shape', () => {
  it('reports every shape error at its path and stops before references', () => {
    const doc = baseDocument();
    delete doc.items[I1].name;
    doc.items[I2].basePrice = '12.25';
    doc.modifierGroups[G1].itemIds.push('not-a-uuid');
    // A broken reference is not judged on a malformed document.
    doc.sections[S1].itemIds.push(MISSING);
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.map((error) => error.path).sort()).toEqual(
      [`/items/${I1}/name`, `/items/${I2}/basePrice`, `/modifierGroups/${G1}/itemIds/2`].sort(),
    );
    expect(errors.find((error) => error.path === `/items/${I1}/name`)?.message).toBe(
      'name is required.',
    );
  });

  it('refuses a document that is not an object at the root pointer', () => {
    expect(pathsOf(validateCatalogSet([], context))).toEqual(['']);
    expect(pathsOf(validateCatalogSet(null, context))).toEqual(['']);
  });

  it('refuses an unknown currency at /currency', () => {
    const doc = baseDocument();
    doc.currency = 'XXQ';
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual(['/currency']);
  });
});

describe('validateCatalogSet: limits, store and currency', () => {
  it(`refuses more than ${catalogLimits.maxItems} items at /items`, () => {
    const doc = generateCatalogSet({
      storeId: STORE,
      items: catalogLimits.maxItems + 1,
      modifierDepth: 0,
    });
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('/items');
    expect(errors[0]!.message).toContain(String(catalogLimits.maxItems));
  });

  it('refuses another store at /storeId', () => {
    const doc = baseDocument();
    doc.storeId = id(7);
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual(['/storeId']);
  });

  it('refuses a currency other than the store’s at /currency', () => {
    const doc = baseDocument();
    doc.currency = 'EUR';
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual(['/currency']);
  });

  it('checks the store and currency only when the context names them (a lint without a store)', () => {
    const doc = baseDocument();
    doc.storeId = id(7);
    doc.currency = 'EUR';
    expect(validateCatalogSet(doc, {}).ok).toBe(true);
    expect(validateCatalogSet(doc).ok).toBe(true);
    expect(pathsOf(validateCatalogSet(doc, { storeId: STORE }))).toEqual(['/storeId']);
    expect(pathsOf(validateCatalogSet(doc, { currency: 'USD' }))).toEqual(['/currency']);
  });
});

describe('validateCatalogSet: keys and lists', () => {
  it('refuses a dictionary key that differs from the entity id', () => {
    const doc = baseDocument();
    doc.items[I2].itemId = id(98);
    doc.sections[S2].sectionId = id(97);
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual([
      `/sections/${S2}/sectionId`,
      `/items/${I2}/itemId`,
    ]);
  });

  it('escapes the key in the pointer (RFC 6901)', () => {
    const doc = baseDocument();
    doc.catalogs['a/b~c'] = { ...doc.catalogs[C1] };
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual(['/catalogs/a~1b~0c/catalogId']);
  });

  it('refuses a duplicate id at its second occurrence', () => {
    const doc = baseDocument();
    doc.sections[S1].itemIds = [I1, I2, I1];
    doc.modifierGroups[G1].itemIds = [I3, I3];
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.map((error) => error.path)).toEqual([
      `/sections/${S1}/itemIds/2`,
      `/modifierGroups/${G1}/itemIds/1`,
    ]);
    expect(errors[0]!.message).toContain('index 0');
  });

  it('finds duplicates in long lists too', () => {
    const doc = baseDocument();
    const many = Array.from({ length: 40 }, (_, n) => id(5000 + n));
    for (const itemId of many) doc.items[itemId] = { itemId, name: 'Filler', basePrice: 1 };
    doc.sections[S2].itemIds = [...many, many[3]];
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual([`/sections/${S2}/itemIds/40`]);
  });
});

describe('validateCatalogSet: references', () => {
  it.each([
    [
      'catalog → section',
      (doc: Doc) => doc.catalogs[C1].sectionIds.push(MISSING),
      `/catalogs/${C1}/sectionIds/1`,
    ],
    [
      'section → section',
      (doc: Doc) => (doc.sections[S2].sectionIds = [MISSING]),
      `/sections/${S2}/sectionIds/0`,
    ],
    [
      'section → item',
      (doc: Doc) => doc.sections[S1].itemIds.push(MISSING),
      `/sections/${S1}/itemIds/1`,
    ],
    [
      'item → modifier group',
      (doc: Doc) => (doc.items[I2].modifierGroupIds = [MISSING]),
      `/items/${I2}/modifierGroupIds/0`,
    ],
    [
      'modifier group → item',
      (doc: Doc) => doc.modifierGroups[G1].itemIds.unshift(MISSING),
      `/modifierGroups/${G1}/itemIds/0`,
    ],
  ])('refuses a missing %s reference at the array element', (_, mutate, path) => {
    const doc = baseDocument();
    mutate(doc);
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.map((error) => error.path)).toEqual([path]);
    expect(errors[0]!.message).toContain(MISSING);
    expect(errors[0]!.message).toContain(`contact support quoting catalogIngestId ${INGEST}`);
  });

  it('names the referencing entity and the missing id', () => {
    const doc = baseDocument();
    doc.items[I2].modifierGroupIds = [MISSING];
    expect(errorsOf(validateCatalogSet(doc, context))[0]!.message).toBe(
      `Item ${I2} references modifier group ${MISSING}, which is not in modifierGroups. ` +
        `Fix the reference, or contact support quoting catalogIngestId ${INGEST}.`,
    );
  });

  it('asks only for the fix when there is no ingest run to quote (dry run, lint)', () => {
    const doc = baseDocument();
    doc.items[I2].modifierGroupIds = [MISSING];
    expect(errorsOf(validateCatalogSet(doc, { storeId: STORE, currency: 'USD' }))).toEqual([
      {
        path: `/items/${I2}/modifierGroupIds/0`,
        message: `Item ${I2} references modifier group ${MISSING}, which is not in modifierGroups. Fix the reference.`,
      },
    ]);
  });

  it('finds the reference broken by withBrokenReference', () => {
    const doc = withBrokenReference(generateCatalogSet({ storeId: STORE, items: 60 }));
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toMatch(/^\/items\/[^/]+\/modifierGroupIds\/0$/);
    expect(errors[0]!.message).toContain(INGEST);
  });
});

describe('validateCatalogSet: cycles and depth', () => {
  it('refuses a section cycle once, at the edge that closes it', () => {
    const doc = baseDocument();
    doc.sections[S2].sectionIds = [S1];
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.map((error) => error.path)).toEqual([`/sections/${S2}/sectionIds/0`]);
    expect(errors[0]!.message).toContain('cycle');
  });

  it('refuses a section that contains itself', () => {
    const doc = baseDocument();
    doc.sections[S2].sectionIds = [S2];
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual([`/sections/${S2}/sectionIds/0`]);
  });

  it('refuses a modifier cycle (an option that offers its own group)', () => {
    const doc = baseDocument();
    doc.items[I3].modifierGroupIds = [G1];
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.map((error) => error.path)).toEqual([`/items/${I3}/modifierGroupIds/0`]);
    expect(errors[0]!.message).toContain('cycle');
  });

  it('refuses a longer modifier cycle closed by a group', () => {
    const doc = baseDocument();
    const G2 = id(32);
    doc.items[I4].modifierGroupIds = [G2];
    doc.modifierGroups[G2] = {
      modifierGroupId: G2,
      name: 'Loop',
      minimumAllowed: 0,
      maximumAllowed: 1,
      itemIds: [I1],
    };
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual([`/modifierGroups/${G2}/itemIds/0`]);
  });

  it(`accepts ${catalogLimits.maxModifierDepth} levels of modifier nesting`, () => {
    const { doc } = nestedDocument(catalogLimits.maxModifierDepth);
    expect(validateCatalogSet(doc, context).ok).toBe(true);
  });

  it(`refuses ${catalogLimits.maxModifierDepth + 1} levels once, at the root item`, () => {
    const { doc, root } = nestedDocument(catalogLimits.maxModifierDepth + 1);
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.map((error) => error.path)).toEqual([`/items/${root}/modifierGroupIds/0`]);
    expect(errors[0]!.message).toContain('6 levels');
  });

  it('refuses generated documents nested deeper than allowed', () => {
    const doc = generateCatalogSet({ storeId: STORE, items: 200, modifierDepth: 6 });
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.length).toBeGreaterThan(0);
    // Every top-level item nests too deep; past the cap a note says how many more.
    for (const error of errors.slice(0, -1)) {
      expect(error.path).toMatch(/^\/items\/[^/]+\/modifierGroupIds\/\d$/);
      expect(error.message).toContain('6 levels deep');
    }
  });
});

describe('validateCatalogSet: modifier group bounds', () => {
  it('refuses minimumAllowed above maximumAllowed at /maximumAllowed', () => {
    const doc = baseDocument();
    doc.modifierGroups[G1].minimumAllowed = 2;
    doc.modifierGroups[G1].maximumAllowed = 1;
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual([
      `/modifierGroups/${G1}/maximumAllowed`,
    ]);
  });

  it('refuses a negative minimumAllowed (shape)', () => {
    const doc = baseDocument();
    doc.modifierGroups[G1].minimumAllowed = -1;
    expect(pathsOf(validateCatalogSet(doc, context))).toEqual([
      `/modifierGroups/${G1}/minimumAllowed`,
    ]);
  });
});

describe('validateCatalogSet: money', () => {
  it('refuses a USD price with three decimals as PRECISION_EXCEEDED', () => {
    const doc = baseDocument();
    doc.items[I1].basePrice = 9.999;
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors.map((error) => error.path)).toEqual([`/items/${I1}/basePrice`]);
    expect(errors[0]!.message).toContain('PRECISION_EXCEEDED');
    expect(errors[0]!.message).toContain('USD');
    expect(errors[0]!.message).toContain('(2)');
  });

  it('takes JPY without fraction digits', () => {
    const doc = baseDocument();
    doc.currency = 'JPY';
    doc.items[I1].basePrice = 950;
    doc.items[I2].basePrice = 1200;
    doc.items[I3].basePrice = 100.5;
    const jpy = { ...context, currency: 'JPY' };
    const errors = errorsOf(validateCatalogSet(doc, jpy));
    expect(errors.map((error) => error.path)).toEqual([`/items/${I3}/basePrice`]);
    expect(errors[0]!.message).toMatch(/PRECISION_EXCEEDED.*JPY.*\(0\)/);

    doc.items[I3].basePrice = 100;
    const result = validateCatalogSet(doc, jpy);
    expect(result.ok && result.catalog.prices.get(I1)).toBe(950);
  });

  it('takes KWD with three fraction digits', () => {
    const doc = baseDocument();
    doc.currency = 'KWD';
    doc.items[I1].basePrice = 1.125;
    const kwd = { ...context, currency: 'KWD' };
    const result = validateCatalogSet(doc, kwd);
    expect(result.ok && result.catalog.prices.get(I1)).toBe(1125);
    expect(result.ok && result.catalog.prices.get(I2)).toBe(12_250);

    doc.items[I1].basePrice = 1.1255;
    const errors = errorsOf(validateCatalogSet(doc, kwd));
    expect(errors.map((error) => error.path)).toEqual([`/items/${I1}/basePrice`]);
    expect(errors[0]!.message).toMatch(/PRECISION_EXCEEDED.*KWD.*\(3\)/);
  });

  it('agrees with toMinorUnits for any amount', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double({ min: 0, max: 1_000_000_000, noNaN: true }),
          fc.integer({ min: 0, max: 100_000_000_000 }).map((minor) => minor / 100),
          fc.integer({ min: 0, max: 1_000_000_000_000 }).map((minor) => minor / 1000),
        ),
        fc.constantFrom('USD', 'JPY', 'KWD'),
        (amount, currency) => {
          const doc = baseDocument();
          doc.currency = currency;
          doc.items[I1].basePrice = amount;
          for (const itemId of [I2, I3, I4]) doc.items[itemId].basePrice = 0;
          const result = validateCatalogSet(doc, { ...context, currency });
          const expected = toMinorUnits(amount, currency);
          expect(result.ok ? result.catalog.prices.get(I1) : null).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('validateCatalogSet: collecting errors', () => {
  it('collects errors of different rules in one run', () => {
    const doc = baseDocument();
    doc.storeId = id(7);
    doc.items[I2].modifierGroupIds = [MISSING];
    doc.items[I3].basePrice = 0.505;
    doc.modifierGroups[G1].minimumAllowed = 3;
    doc.sections[S2].sectionIds = [S1];
    expect(pathsOf(validateCatalogSet(doc, context)).sort()).toEqual(
      [
        '/storeId',
        `/items/${I2}/modifierGroupIds/0`,
        `/items/${I3}/basePrice`,
        `/modifierGroups/${G1}/maximumAllowed`,
        `/sections/${S2}/sectionIds/0`,
      ].sort(),
    );
  });

  it(`caps at ${catalogLimits.maxErrors} errors with a note of how many were omitted`, () => {
    const doc = baseDocument();
    doc.sections[S2].itemIds = Array.from({ length: 150 }, (_, n) => id(9000 + n));
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors).toHaveLength(catalogLimits.maxErrors);
    expect(errors[0]!.path).toBe(`/sections/${S2}/itemIds/0`);
    expect(errors[98]!.path).toBe(`/sections/${S2}/itemIds/98`);
    expect(errors[99]!.path).toBe('');
    expect(errors[99]!.message).toContain('51 more errors');
  });

  it('caps shape errors too', () => {
    const doc = baseDocument();
    for (let n = 0; n < 120; n++) doc.items[id(7000 + n)] = { itemId: id(7000 + n) };
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors).toHaveLength(catalogLimits.maxErrors);
    expect(errors[99]).toEqual({ path: '', message: expect.stringContaining('141 more errors') });
  });

  it('reports exactly the cap without a note', () => {
    const doc = baseDocument();
    doc.sections[S2].itemIds = Array.from({ length: 100 }, (_, n) => id(9000 + n));
    const errors = errorsOf(validateCatalogSet(doc, context));
    expect(errors).toHaveLength(100);
    expect(errors.every((error) => error.path !== '')).toBe(true);
  });
});

describe('validateCatalogSet: generated documents', () => {
  it('accepts every generated document and refuses it without any referenced item', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 5 }),
        fc.constantFrom('USD', 'JPY', 'KWD'),
        fc.nat(),
        (items, seed, modifierDepth, currency, pick) => {
          const doc = generateCatalogSet({ storeId: STORE, items, seed, modifierDepth, currency });
          const ctx = { ...context, currency };
          const result = validateCatalogSet(doc, ctx);
          if (!result.ok) throw new Error(JSON.stringify(result.errors.slice(0, 3)));
          expect(result.catalog.counts.items).toBe(items);
          expect(result.catalog.counts.catalogs).toBe(3);

          const referenced = [
            ...new Set([
              ...Object.values(doc.sections).flatMap((section) => section.itemIds),
              ...Object.values(doc.modifierGroups).flatMap((group) => group.itemIds),
            ]),
          ];
          const removed = referenced[pick % referenced.length]!;
          delete doc.items[removed];
          const errors = errorsOf(validateCatalogSet(doc, ctx));
          expect(errors.some((error) => resolvePointer(doc, error.path) === removed)).toBe(true);
          expect(errors.every((error) => error.message.includes(INGEST))).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('generates the same document for the same seed', () => {
    const options = { storeId: STORE, items: 120, seed: 42 };
    expect(generateCatalogSet(options)).toEqual(generateCatalogSet(options));
    expect(generateCatalogSet(options)).not.toEqual(generateCatalogSet({ ...options, seed: 43 }));
  });

  it('validates 100k generated items (timed, not asserted)', () => {
    const doc = generateCatalogSet({ storeId: STORE, items: catalogLimits.maxItems, seed: 3 });
    const started = performance.now();
    const result = validateCatalogSet(doc, context);
    const elapsed = performance.now() - started;
    expect(result.ok).toBe(true);
    console.info(`validated ${catalogLimits.maxItems} items in ${elapsed.toFixed(0)} ms`);
  });
});
