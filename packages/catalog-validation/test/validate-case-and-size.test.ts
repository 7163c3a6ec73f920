import { describe, expect, it } from 'vitest';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { validateCatalogSet } from '../src/validate-catalog-set.js';

const STORE = '5a1e0000-0000-4000-8000-000000000001';
const context = {
  storeId: STORE,
  catalogIngestId: 'c0ffee00-0000-4000-8000-000000000002',
  currency: 'USD',
};

describe('GUIDs compare case-insensitively', () => {
  it('accepts a document whose ids, keys and references are upper case, and lower-cases them', () => {
    const document = generateCatalogSet({ storeId: STORE, items: 40 });
    // Names and the currency stay as they were; only GUIDs change case.
    const shouting = JSON.parse(
      JSON.stringify(document).replace(/"[0-9a-f-]{36}"/g, (id) => id.toUpperCase()),
    ) as unknown;
    const result = validateCatalogSet(shouting, context);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.catalog.document).toEqual(document);
  });

  it('refuses two keys of a dictionary that differ only in case', () => {
    const document = generateCatalogSet({ storeId: STORE, items: 10 });
    const [itemId] = Object.keys(document.items);
    const items = document.items as Record<string, unknown>;
    items[itemId!.toUpperCase()] = { ...document.items[itemId!], itemId: itemId!.toUpperCase() };
    const result = validateCatalogSet(document, context);
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          path: `/items/${itemId!.toUpperCase()}`,
          message: expect.stringMatching(/same id as another key/) as string,
        },
      ],
    });
  });
});

describe('a large document with many broken entries', () => {
  it('reports up to 100 of its problems, each at its path, at a cost bounded by the report', () => {
    const document = generateCatalogSet({ storeId: STORE, items: 5_000 });
    const broken = Object.keys(document.items).slice(0, 3_000);
    for (const itemId of broken) document.items[itemId]!.basePrice = -1;
    const result = validateCatalogSet(document, context);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toHaveLength(100);
    expect(result.errors.map((error) => error.path)).toEqual(
      broken.slice(0, 100).map((itemId) => `/items/${itemId}/basePrice`),
    );
  });
});
