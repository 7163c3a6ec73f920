import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { orderableCandidates, type OrderableCatalog } from '../src/orderable-items.js';

/** Catalogs → sections → items, with the modifier groups the items name. */
function catalog(parts: Partial<OrderableCatalog>): OrderableCatalog {
  return { catalogs: {}, sections: {}, items: {}, modifierGroups: {}, ...parts };
}

describe('orderableCandidates', () => {
  it('lists the items reached through the sections, depth first, in document order', () => {
    const document = catalog({
      catalogs: { lunch: { sectionIds: ['mains', 'drinks'] }, late: { sectionIds: ['late'] } },
      sections: {
        mains: { itemIds: ['burger'], sectionIds: ['classics'] },
        classics: { itemIds: ['hotdog'] },
        drinks: { itemIds: ['soda', 'burger'] },
        late: { itemIds: ['fries'] },
      },
      items: { burger: {}, hotdog: {}, soda: {}, fries: {}, orphan: {} },
    });
    expect(orderableCandidates(document, 10)).toEqual(['burger', 'hotdog', 'soda', 'fries']);
    expect(orderableCandidates(document, 2)).toEqual(['burger', 'hotdog']);
    expect(orderableCandidates(document, 0)).toEqual([]);
  });

  it('skips an unavailable item and one whose modifier group requires a choice', () => {
    const document = catalog({
      catalogs: { menu: { sectionIds: ['all'] } },
      sections: { all: { itemIds: ['gone', 'burger', 'pie', 'soda', 'missing', 'null'] } },
      items: {
        gone: { isAvailable: false },
        burger: { modifierGroupIds: ['side', 'extras'] },
        pie: { modifierGroupIds: ['extras', 'unknown'] },
        soda: { isAvailable: true },
        null: { isAvailable: null },
      },
      modifierGroups: { side: { minimumAllowed: 1 }, extras: { minimumAllowed: 0 } },
    });
    expect(orderableCandidates(document, 10)).toEqual(['pie', 'soda', 'null']);
  });

  it('visits a section once however often it is reached, and ignores unknown sections', () => {
    const document = catalog({
      catalogs: { a: { sectionIds: ['loop', 'nowhere'] }, b: { sectionIds: ['loop'] } },
      sections: { loop: { itemIds: ['soda'], sectionIds: ['loop', 'inner'] }, inner: {} },
      items: { soda: {} },
    });
    expect(orderableCandidates(document, 10)).toEqual(['soda']);
  });

  it('imports nothing at run time, so a browser bundle can take it', () => {
    const source = readFileSync(new URL('../src/orderable-items.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^\s*(import|export)\b(?!\s+type\b)[^;]*\bfrom\b/m);
  });
});
