// Valid carts built from a generated CatalogSet by the pricing rules of the ordering service,
// for the benches that price carts and orders.
import { randomUUID } from 'node:crypto';
import { dayOfWeek } from '@pcp/contracts';
import type { GeneratedCatalogSet } from '@pcp/testing/catalog-generator';

/** Every day, all day. */
export const alwaysOpen = dayOfWeek.options.map((day) => ({
  dayOfWeek: day,
  start: '00:00:00',
  end: '00:00:00',
}));

/** Every catalog of `doc` open all day, every day (the generator's are meal windows). */
export function openAllWeek(doc: GeneratedCatalogSet): void {
  for (const catalog of Object.values(doc.catalogs)) catalog.availability = alwaysOpen;
}

export interface CartLine {
  itemId: string;
  lineItemId: string;
  quantity: number;
  modifierGroups?: { modifierGroupId: string; lineItems: CartLine[] }[];
}

/** Item ids reachable from a catalog through its (nested) sections. */
function reachableItemIds(doc: GeneratedCatalogSet): Set<string> {
  const reachable = new Set<string>();
  const seenSections = new Set<string>();
  const pending = Object.values(doc.catalogs).flatMap((catalog) => catalog.sectionIds ?? []);
  for (let sectionId = pending.pop(); sectionId !== undefined; sectionId = pending.pop()) {
    if (seenSections.has(sectionId)) continue;
    seenSections.add(sectionId);
    const section = doc.sections[sectionId];
    if (!section) continue;
    pending.push(...(section.sectionIds ?? []));
    for (const itemId of section.itemIds ?? []) reachable.add(itemId);
  }
  return reachable;
}

/** Deepest modifier nesting below an item (0 without modifier groups, -1 if one is missing). */
function modifierDepthOf(doc: GeneratedCatalogSet, itemId: string): number {
  let deepest = 0;
  for (const groupId of doc.items[itemId]?.modifierGroupIds ?? []) {
    const group = doc.modifierGroups[groupId];
    if (!group) return -1;
    for (const optionId of group.itemIds) {
      const below = modifierDepthOf(doc, optionId);
      if (below < 0) return -1;
      deepest = Math.max(deepest, 1 + below);
    }
  }
  return deepest;
}

/**
 * A valid line for `itemId`: for every modifier group of the item, max(minimumAllowed, 1)
 * options (capped by maximumAllowed, counted by quantity 1 each), chosen from the group's
 * available options starting at a rotating offset, recursively. UUID lineItemIds throughout.
 */
function buildLine(doc: GeneratedCatalogSet, itemId: string, rotation: { next: number }): CartLine {
  const modifierGroups = [];
  for (const groupId of doc.items[itemId]?.modifierGroupIds ?? []) {
    const group = doc.modifierGroups[groupId]!;
    const options = group.itemIds.filter((optionId) => doc.items[optionId]?.isAvailable !== false);
    const wanted = Math.min(group.maximumAllowed, Math.max(group.minimumAllowed, 1));
    if (options.length < wanted) {
      throw new Error(`modifier group ${groupId} has ${options.length} available options`);
    }
    const lineItems = [];
    for (let i = 0; i < wanted; i++) {
      const optionId = options[(rotation.next++ + i) % options.length]!;
      lineItems.push(buildLine(doc, optionId, rotation));
    }
    modifierGroups.push({ modifierGroupId: groupId, lineItems });
  }
  return {
    itemId,
    lineItemId: randomUUID(),
    quantity: 1,
    ...(modifierGroups.length > 0 ? { modifierGroups } : {}),
  };
}

/** The line total in minor units, as the ordering service should price it. */
export function lineTotalMinor(doc: GeneratedCatalogSet, line: CartLine, scale: number): number {
  const base = Math.round((doc.items[line.itemId]?.basePrice ?? NaN) * scale);
  let modifiers = 0;
  for (const group of line.modifierGroups ?? []) {
    for (const option of group.lineItems) modifiers += lineTotalMinor(doc, option, scale);
  }
  return (base + modifiers) * line.quantity;
}

/** Line items in `lines`, modifiers included. */
export const countLines = (lines: CartLine[]): number =>
  lines.reduce(
    (sum, line) =>
      sum +
      1 +
      (line.modifierGroups ?? []).reduce((inner, group) => inner + countLines(group.lineItems), 0),
    0,
  );

/**
 * `count` lines on distinct top-level items, spread evenly over the available reachable
 * items whose modifier groups all exist and nest two levels deep.
 */
export function buildLines(
  doc: GeneratedCatalogSet,
  count: number,
): { candidates: number; lines: CartLine[] } {
  const reachable = reachableItemIds(doc);
  const candidates = Object.keys(doc.items).filter(
    (itemId) =>
      reachable.has(itemId) &&
      doc.items[itemId]?.isAvailable !== false &&
      modifierDepthOf(doc, itemId) >= 2,
  );
  if (candidates.length < count) {
    throw new Error(
      `only ${candidates.length} orderable items with two levels of modifiers; need ${count}`,
    );
  }
  const step = candidates.length / count;
  const rotation = { next: 0 };
  return {
    candidates: candidates.length,
    lines: Array.from({ length: count }, (_, i) =>
      buildLine(doc, candidates[Math.floor(i * step)]!, rotation),
    ),
  };
}
