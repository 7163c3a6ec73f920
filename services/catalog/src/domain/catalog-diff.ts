import type { ValidatedCatalogSet } from './validate-catalog-set.js';

/** The ingest summary (contract §4): counts of the new catalog and its changes in items. */
export interface CatalogChangeSummary {
  items: number;
  sections: number;
  modifierGroups: number;
  added: number;
  removed: number;
  priceChanged: number;
}

/**
 * Summary against the previously active catalog (contract §4): counts of the new one, plus
 * items added, removed, and whose basePrice changed. previous undefined → everything is added.
 */
export function summarizeChanges(
  next: ValidatedCatalogSet['prices'],
  counts: ValidatedCatalogSet['counts'],
  previous: Map<string, number> | undefined,
): CatalogChangeSummary {
  let added = 0;
  let kept = 0;
  let priceChanged = 0;
  for (const [itemId, price] of next) {
    const before = previous?.get(itemId);
    if (before === undefined) {
      added += 1;
    } else {
      kept += 1;
      if (before !== price) priceChanged += 1;
    }
  }
  return {
    items: counts.items,
    sections: counts.sections,
    modifierGroups: counts.modifierGroups,
    added,
    // Every previous item that is not kept was removed.
    removed: (previous?.size ?? 0) - kept,
    priceChanged,
  };
}
