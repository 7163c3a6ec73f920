import { describe, expect, it } from 'vitest';
import { summarizeChanges } from '../../src/domain/catalog-diff.js';

const counts = { items: 4, sections: 2, modifierGroups: 1, catalogs: 3 };

describe('summarizeChanges', () => {
  it('counts everything as added without a previous catalog', () => {
    const next = new Map([
      ['a', 100],
      ['b', 200],
      ['c', 0],
      ['d', 50],
    ]);
    expect(summarizeChanges(next, counts, undefined)).toEqual({
      items: 4,
      sections: 2,
      modifierGroups: 1,
      added: 4,
      removed: 0,
      priceChanged: 0,
    });
  });

  it('counts added, removed and re-priced items against the previous catalog', () => {
    const previous = new Map([
      ['a', 100],
      ['b', 200],
      ['x', 300],
      ['y', 400],
      ['z', 500],
    ]);
    const next = new Map([
      ['a', 100], // unchanged
      ['b', 250], // re-priced
      ['c', 0], // added
      ['d', 50], // added
    ]);
    expect(summarizeChanges(next, counts, previous)).toEqual({
      items: 4,
      sections: 2,
      modifierGroups: 1,
      added: 2,
      removed: 3,
      priceChanged: 1,
    });
  });

  it('treats a price change to or from zero as a change', () => {
    const previous = new Map([
      ['a', 0],
      ['b', 10],
    ]);
    const next = new Map([
      ['a', 10],
      ['b', 0],
    ]);
    expect(summarizeChanges(next, { ...counts, items: 2 }, previous)).toMatchObject({
      items: 2,
      added: 0,
      removed: 0,
      priceChanged: 2,
    });
  });

  it('reports an identical catalog as unchanged, and an empty one as all removed', () => {
    const prices = new Map([
      ['a', 1],
      ['b', 2],
    ]);
    expect(summarizeChanges(new Map(prices), counts, prices)).toMatchObject({
      added: 0,
      removed: 0,
      priceChanged: 0,
    });
    expect(
      summarizeChanges(
        new Map(),
        { items: 0, sections: 0, modifierGroups: 0, catalogs: 0 },
        prices,
      ),
    ).toEqual({ items: 0, sections: 0, modifierGroups: 0, added: 0, removed: 2, priceChanged: 0 });
  });
});
