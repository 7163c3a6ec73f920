import { validateCatalogSet } from '@pcp/catalog-validation';
import {
  fixtureCatalogSets,
  fixtureSoldOutItemIds,
  fixtureStoreIds,
  type CatalogSetDocument,
} from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import { validatedFixtureCatalog } from '../../src/fixtures/fixture-catalogs.js';

const currencies = ['USD', 'GBP', 'JPY'];

describe.each(fixtureStoreIds.map((storeId, index) => [storeId, currencies[index]!] as const))(
  'the bundled fixture catalog of %s',
  (storeId, currency) => {
    const document = fixtureCatalogSets[storeId] as CatalogSetDocument;

    it('passes the validation every ingest applies', () => {
      const validation = validateCatalogSet(document, { storeId, currency });
      expect(validation.ok ? [] : validation.errors).toEqual([]);
      // And activation's preparation of it: bytes as served, a strong ETag.
      expect(validatedFixtureCatalog(document, currency).etag).toMatch(/^"[\w-]{43}"$/);
    });

    it('has required and optional modifier groups', () => {
      const groups = Object.values(document.modifierGroups);
      expect(groups.some((group) => group.minimumAllowed >= 1)).toBe(true);
      expect(groups.some((group) => group.minimumAllowed === 0 && group.maximumAllowed > 1)).toBe(
        true,
      );
    });

    it('has sections in sections and a catalog open only some hours', () => {
      expect(
        Object.values(document.sections).some((section) => (section.sectionIds ?? []).length > 0),
      ).toBe(true);
      const windows = Object.values(document.catalogs).map((catalog) => catalog.availability ?? []);
      expect(windows.some((days) => days.length === 7 && days[0]!.start !== '00:00:00')).toBe(true);
    });

    it('marks out, now and then, items of its own that are not modifiers', () => {
      const sectionItems = new Set(
        Object.values(document.sections).flatMap((section) => section.itemIds ?? []),
      );
      const soldOut = fixtureSoldOutItemIds[storeId] ?? [];
      expect(soldOut.length).toBeGreaterThan(0);
      for (const itemId of soldOut) expect(sectionItems.has(itemId)).toBe(true);
    });
  },
);

it('nests a modifier in a modifier: New York’s bacon extra asks for its style', () => {
  const document = fixtureCatalogSets[fixtureStoreIds[0]] as CatalogSetDocument;
  const modifierItems = new Set(
    Object.values(document.modifierGroups).flatMap((group) => group.itemIds),
  );
  const nested = Object.values(document.items).filter(
    (item) => modifierItems.has(item.itemId) && (item.modifierGroupIds ?? []).length > 0,
  );
  expect(nested.map((item) => item.name)).toEqual(['Bacon']);
});
