/**
 * Which items of a CatalogSet a test order can take: the sandbox's place at a commerce
 * partner's own store, `pcp trigger` and the partner console's sandbox page. It imports
 * nothing, so the console's browser bundle takes it (`@pcp/contracts/orderable-items`) without
 * the rest of the package.
 */

/**
 * The parts of a CatalogSet `orderableCandidates` reads: a CatalogSetDocument and the
 * marketfront's catalogset answer both have them.
 */
export interface OrderableCatalog {
  readonly catalogs: Readonly<Record<string, { readonly sectionIds: readonly string[] }>>;
  readonly sections: Readonly<
    Record<
      string,
      { readonly sectionIds?: readonly string[]; readonly itemIds?: readonly string[] }
    >
  >;
  readonly items: Readonly<
    Record<
      string,
      { readonly isAvailable?: boolean | null; readonly modifierGroupIds?: readonly string[] }
    >
  >;
  readonly modifierGroups: Readonly<Record<string, { readonly minimumAllowed: number }>>;
}

/**
 * Up to `limit` items a customer could put in a cart as they are
 * (docs/guide/sandbox.md#placing-an-order-at-your-store): reached from a catalog through its
 * sections, in the order the document lists them, not marked unavailable, and with no modifier
 * group that requires a choice. Whether one can be ordered now (hours, windows, overrides) is
 * validate's to say.
 */
export function orderableCandidates(document: OrderableCatalog, limit: number): string[] {
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
