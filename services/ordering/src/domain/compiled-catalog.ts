import { toMinorUnits, type AvailabilityWindow, type CatalogSetDocument } from '@pcp/contracts';

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
  readonly items: ReadonlyMap<string, CompiledItem>;
  readonly modifierGroups: ReadonlyMap<string, CompiledModifierGroup>;
}

/**
 * Index a validated CatalogSet (the catalog service refuses broken references, cycles and
 * bad precision, so none are expected here; a missing reference is simply not reachable).
 */
export function compileCatalog(document: CatalogSetDocument, versionId: string): CompiledCatalog {
  // catalog → sections (nested) → items: which catalogs' windows govern each item.
  const windowsByItem = new Map<string, AvailabilityWindow[][]>();
  for (const catalog of Object.values(document.catalogs)) {
    const windows = catalog.availability ?? [];
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
        if (list) list.push(windows);
        else windowsByItem.set(itemId, [windows]);
      }
    }
  }

  const items = new Map<string, CompiledItem>();
  for (const [itemId, item] of Object.entries(document.items)) {
    items.set(itemId, {
      name: item.name,
      priceMinor: toMinorUnits(item.basePrice, document.currency) ?? 0,
      available: item.isAvailable !== false,
      modifierGroupIds: item.modifierGroupIds ?? [],
      catalogWindows: windowsByItem.get(itemId) ?? [],
    });
  }
  const modifierGroups = new Map<string, CompiledModifierGroup>();
  for (const [groupId, group] of Object.entries(document.modifierGroups)) {
    modifierGroups.set(groupId, {
      name: group.name,
      minimumAllowed: group.minimumAllowed,
      maximumAllowed: group.maximumAllowed,
      optionIds: new Set(group.itemIds),
    });
  }
  return {
    versionId,
    catalogSetId: document.catalogSetId,
    currency: document.currency,
    items,
    modifierGroups,
  };
}
