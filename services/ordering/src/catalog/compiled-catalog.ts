import { toMinorUnits, type AvailabilityWindow, type CatalogSetDocument } from '@pcp/contracts';
import {
  buildRecordTable,
  openRecordTable,
  recordTableBuffers,
  type RecordLookup,
  type RecordTableParts,
} from './record-table.js';

export interface CompiledItem {
  readonly name: string;
  /** basePrice in integer minor units. */
  readonly priceMinor: number;
  readonly available: boolean;
  readonly modifierGroupIds: readonly string[];
  /**
   * Availability of each catalog that reaches the item through its sections; empty when no
   * catalog does (the item is only orderable as a modifier option).
   */
  readonly catalogWindows: readonly (readonly AvailabilityWindow[])[];
}

export interface CompiledModifierGroup {
  readonly name: string;
  readonly minimumAllowed: number;
  readonly maximumAllowed: number;
  readonly optionIds: ReadonlySet<string>;
}

/** A CatalogSet indexed for pricing; built once per catalog version and cached. */
export interface CompiledCatalog {
  readonly versionId: string;
  readonly catalogSetId: string;
  readonly currency: string;
  readonly items: RecordLookup<CompiledItem>;
  readonly modifierGroups: RecordLookup<CompiledModifierGroup>;
  /** Memory the catalog holds, for the cache's budget. */
  readonly bytes: number;
}

/**
 * A compiled catalog as plain data that moves between threads: its tables by transfer
 * (`compiledCatalogBuffers`), the rest by a small structured clone.
 */
export interface CompiledCatalogParts {
  readonly versionId: string;
  readonly catalogSetId: string;
  readonly currency: string;
  /** Each catalog's availability, referred to by index from the item records. */
  readonly windowSets: readonly (readonly AvailabilityWindow[])[];
  readonly items: RecordTableParts;
  readonly modifierGroups: RecordTableParts;
}

/** Item record: name, priceMinor, available (1/0), modifierGroupIds, windowSets indexes. */
type ItemRecord = [string, number, 0 | 1, string[], number[]];
/** Modifier group record: name, minimumAllowed, maximumAllowed, option item ids. */
type ModifierGroupRecord = [string, number, number, string[]];

/**
 * Index a validated CatalogSet (the catalog service refuses broken references, cycles and
 * bad precision, so none are expected here; a missing reference is simply not reachable).
 * Runs on a compile thread (catalog/compile-catalog.task.ts).
 */
export function compileCatalogParts(
  document: CatalogSetDocument,
  versionId: string,
): CompiledCatalogParts {
  // catalog → sections (nested) → items: which catalogs' windows govern each item.
  const windowSets: AvailabilityWindow[][] = [];
  const windowsByItem = new Map<string, number[]>();
  for (const catalog of Object.values(document.catalogs)) {
    const windowSet = windowSets.push(catalog.availability ?? []) - 1;
    const seenSections = new Set<string>();
    const seenItems = new Set<string>();
    const pending = [...catalog.sectionIds];
    for (let sectionId = pending.pop(); sectionId !== undefined; sectionId = pending.pop()) {
      if (seenSections.has(sectionId)) continue;
      seenSections.add(sectionId);
      const section = document.sections[sectionId];
      if (!section) continue;
      pending.push(...(section.sectionIds ?? []));
      for (const itemId of section.itemIds ?? []) {
        if (seenItems.has(itemId)) continue;
        seenItems.add(itemId);
        const list = windowsByItem.get(itemId);
        if (list) list.push(windowSet);
        else windowsByItem.set(itemId, [windowSet]);
      }
    }
  }

  const items = Object.entries(document.items).map(([itemId, item]): [string, ItemRecord] => [
    itemId,
    [
      item.name,
      toMinorUnits(item.basePrice, document.currency) ?? 0,
      item.isAvailable === false ? 0 : 1,
      item.modifierGroupIds ?? [],
      windowsByItem.get(itemId) ?? [],
    ],
  ]);
  const modifierGroups = Object.entries(document.modifierGroups).map(
    ([groupId, group]): [string, ModifierGroupRecord] => [
      groupId,
      [group.name, group.minimumAllowed, group.maximumAllowed, group.itemIds],
    ],
  );
  return {
    versionId,
    catalogSetId: document.catalogSetId,
    currency: document.currency,
    windowSets,
    items: buildRecordTable(items),
    modifierGroups: buildRecordTable(modifierGroups),
  };
}

/** The buffers of `parts`, to transfer them to another thread. */
export function compiledCatalogBuffers(parts: CompiledCatalogParts): ArrayBuffer[] {
  return [...recordTableBuffers(parts.items), ...recordTableBuffers(parts.modifierGroups)];
}

/** A compiled catalog over `parts` (no copy: lookups decode the records they find). */
export function openCompiledCatalog(parts: CompiledCatalogParts): CompiledCatalog {
  const { windowSets } = parts;
  const items = openRecordTable(parts.items, (record): CompiledItem => {
    const [name, priceMinor, available, modifierGroupIds, windowIndexes] = record as ItemRecord;
    return {
      name,
      priceMinor,
      available: available === 1,
      modifierGroupIds,
      catalogWindows: windowIndexes.map((index) => windowSets[index] ?? []),
    };
  });
  const modifierGroups = openRecordTable(parts.modifierGroups, (record): CompiledModifierGroup => {
    const [name, minimumAllowed, maximumAllowed, optionIds] = record as ModifierGroupRecord;
    return { name, minimumAllowed, maximumAllowed, optionIds: new Set(optionIds) };
  });
  return {
    versionId: parts.versionId,
    catalogSetId: parts.catalogSetId,
    currency: parts.currency,
    items,
    modifierGroups,
    bytes:
      items.bytes +
      modifierGroups.bytes +
      // The window sets as UTF-16 JSON: a generous estimate of a few small objects.
      2 * JSON.stringify(windowSets).length,
  };
}

/** Compile on the calling thread (the pricing tests price from this). */
export function compileCatalog(document: CatalogSetDocument, versionId: string): CompiledCatalog {
  return openCompiledCatalog(compileCatalogParts(document, versionId));
}
