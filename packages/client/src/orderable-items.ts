import type { paths } from './generated/openapi.js';

/**
 * Which items of a catalog a test order can take, shared by `pcp trigger` and the partner
 * console's sandbox page: nothing here needs Node, so the browser bundle imports it too.
 */

export type CatalogSet =
  paths['/v1/marketfront/stores/{storeId}/catalogset']['get']['responses'][200]['content']['application/json'];

/**
 * Up to `limit` items a customer could put in a cart as they are: reached from a catalog
 * through its sections, not marked unavailable, with no modifier group that requires a choice.
 * Whether one can be ordered now (hours, windows, overrides) is validate's to say.
 */
export function orderableCandidates(document: CatalogSet, limit: number): string[] {
  const found: string[] = [];
  const seenSections = new Set<string>();
  const seenItems = new Set<string>();
  const visit = (sectionId: string): void => {
    if (found.length >= limit || seenSections.has(sectionId)) return;
    seenSections.add(sectionId);
    const section = document.sections[sectionId];
    if (!section) return;
    for (const itemId of section.itemIds ?? []) {
      if (found.length >= limit) return;
      if (seenItems.has(itemId)) continue;
      seenItems.add(itemId);
      const item = document.items[itemId];
      if (!item || item.isAvailable === false) continue;
      const requiresChoice = (item.modifierGroupIds ?? []).some(
        (groupId) => (document.modifierGroups[groupId]?.minimumAllowed ?? 0) > 0,
      );
      if (!requiresChoice) found.push(itemId);
    }
    for (const child of section.sectionIds ?? []) visit(child);
  };
  for (const catalog of Object.values(document.catalogs)) {
    for (const sectionId of catalog.sectionIds) visit(sectionId);
  }
  return found;
}
