import { currencyExponent, toMinorUnits, type CatalogSetDocument } from '@pcp/contracts';
import type { ErrorSink } from './error-sink.js';

type Catalog = CatalogSetDocument['catalogs'][string];
type Section = CatalogSetDocument['sections'][string];
type Item = CatalogSetDocument['items'][string];
type ModifierGroup = CatalogSetDocument['modifierGroups'][string];

/** Lists shorter than this are checked for duplicates pairwise instead of with a Set. */
const SMALL_LIST = 16;

/** A graph in compressed form: the edges of node n are `edges[start[n] .. start[n + 1])`. */
export interface CompactGraph {
  readonly start: Int32Array;
  /** Target node of each edge; -1 marks a reference that does not resolve. */
  readonly edges: Int32Array;
}

/** What the reference checks learn of a document, for the nesting checks and the result. */
export interface ReferenceIndex {
  readonly catalogKeys: readonly string[];
  readonly sectionKeys: readonly string[];
  readonly itemKeys: readonly string[];
  readonly groupKeys: readonly string[];
  /** Sections nested in sections. */
  readonly sections: CompactGraph;
  /** Items (nodes 0..items-1) to their modifier groups, groups (the nodes after) to their items. */
  readonly modifiers: CompactGraph;
  /** itemId → basePrice in integer minor units, for every price the currency allows. */
  readonly prices: Map<string, number>;
}

/**
 * Dictionary keys equal to ids, id lists without duplicates whose ids resolve, modifier-group
 * bounds and price precision, checked in one pass over the dictionaries.
 */
export function checkReferences(
  document: CatalogSetDocument,
  referenceAdvice: string,
  sink: ErrorSink,
): ReferenceIndex {
  const checker = new ReferenceChecker(document, referenceAdvice, sink);
  checker.checkCatalogs();
  checker.checkSections();
  const prices = checker.checkItems();
  checker.checkModifierGroups();
  return {
    catalogKeys: checker.catalogKeys,
    sectionKeys: checker.sectionKeys,
    itemKeys: checker.itemKeys,
    groupKeys: checker.groupKeys,
    sections: { start: checker.sectionStart, edges: checker.sectionEdges },
    modifiers: { start: checker.modifierStart, edges: checker.modifierEdges },
    prices,
  };
}

/** Above this many minor units the float fast path of `minorUnits` is not relied on. */
const FAST_PATH_LIMIT = 2 ** 50;

/**
 * `toMinorUnits`, with an exact fast path for the common case. If `round(amount × scale)`
 * divided by `scale` gives back `amount`, then `amount` is the double nearest to a decimal
 * with at most the currency's fraction digits (the division is correctly rounded), so its
 * shortest text has at most that many digits and `toMinorUnits` would return the same
 * integer: far below 2^53 the doubles are much denser than the currency's minor unit. Every
 * other amount, accepted or refused, goes through `toMinorUnits` itself.
 */
function minorUnits(amount: number, currency: string, scale: number): number | null {
  const minor = Math.round(amount * scale);
  if (minor < FAST_PATH_LIMIT && minor / scale === amount) return minor;
  return toMinorUnits(amount, currency);
}

function indexKeys(keys: readonly string[]): Map<string, number> {
  const index = new Map<string, number>();
  for (let i = 0; i < keys.length; i++) index.set(keys[i]!, i);
  return index;
}

function totalLength(
  keys: readonly string[],
  dictionary: Record<string, unknown>,
  list: (entity: never) => readonly string[] | undefined,
): number {
  let total = 0;
  for (const key of keys) total += list(dictionary[key] as never)?.length ?? 0;
  return total;
}

/**
 * Walks the document's dictionaries once, checking keys and references and building the
 * compact adjacency (CSR) arrays the nesting checks walk. Node numbering of the
 * modifier graph: items are 0..items-1, modifier groups follow.
 */
class ReferenceChecker {
  readonly catalogKeys: string[];
  readonly sectionKeys: string[];
  readonly itemKeys: string[];
  readonly groupKeys: string[];
  private readonly sectionIndex: Map<string, number>;
  private readonly itemIndex: Map<string, number>;
  private readonly groupIndex: Map<string, number>;

  /** Section nesting: edges of section s are sectionEdges[sectionStart[s] .. sectionStart[s+1]). */
  readonly sectionStart: Int32Array;
  readonly sectionEdges: Int32Array;
  /** Modifier graph over items then groups; -1 marks an edge that does not resolve. */
  readonly modifierStart: Int32Array;
  readonly modifierEdges: Int32Array;
  /** Where the groups' edges start in modifierEdges (after all the items' edges). */
  private itemEdgesEnd = 0;

  constructor(
    private readonly document: CatalogSetDocument,
    /** The sentence that ends every unresolved-reference error. */
    private readonly referenceAdvice: string,
    private readonly sink: ErrorSink,
  ) {
    this.catalogKeys = Object.keys(document.catalogs);
    this.sectionKeys = Object.keys(document.sections);
    this.itemKeys = Object.keys(document.items);
    this.groupKeys = Object.keys(document.modifierGroups);
    this.sectionIndex = indexKeys(this.sectionKeys);
    this.itemIndex = indexKeys(this.itemKeys);
    this.groupIndex = indexKeys(this.groupKeys);

    this.sectionStart = new Int32Array(this.sectionKeys.length + 1);
    this.sectionEdges = new Int32Array(
      totalLength(this.sectionKeys, document.sections, (s: Section) => s.sectionIds),
    );
    const nodes = this.itemKeys.length + this.groupKeys.length;
    this.modifierStart = new Int32Array(nodes + 1);
    this.modifierEdges = new Int32Array(
      totalLength(this.itemKeys, document.items, (i: Item) => i.modifierGroupIds) +
        totalLength(this.groupKeys, document.modifierGroups, (g: ModifierGroup) => g.itemIds),
    );
  }

  checkCatalogs(): void {
    for (const key of this.catalogKeys) {
      const catalog = this.document.catalogs[key] as Catalog;
      this.checkKey('catalogs', key, 'catalogId', catalog.catalogId, 'Catalog');
      this.checkList(
        ['catalogs', key, 'sectionIds'],
        catalog.sectionIds,
        this.sectionIndex,
        `Catalog ${key}`,
        'section',
        'sections',
        undefined,
        0,
      );
    }
  }

  checkSections(): void {
    let edge = 0;
    for (let s = 0; s < this.sectionKeys.length; s++) {
      const key = this.sectionKeys[s]!;
      const section = this.document.sections[key] as Section;
      this.checkKey('sections', key, 'sectionId', section.sectionId, 'Section');
      this.sectionStart[s] = edge;
      if (section.sectionIds) {
        this.checkList(
          ['sections', key, 'sectionIds'],
          section.sectionIds,
          this.sectionIndex,
          `Section ${key}`,
          'section',
          'sections',
          this.sectionEdges,
          edge,
        );
        edge += section.sectionIds.length;
      }
      if (section.itemIds) {
        this.checkList(
          ['sections', key, 'itemIds'],
          section.itemIds,
          this.itemIndex,
          `Section ${key}`,
          'item',
          'items',
          undefined,
          0,
        );
      }
    }
    this.sectionStart[this.sectionKeys.length] = edge;
  }

  /** Keys, modifier-group references and prices; returns itemId → minor units. */
  checkItems(): Map<string, number> {
    const prices = new Map<string, number>();
    const currency = this.document.currency;
    const scale = 10 ** currencyExponent(currency);
    let edge = 0;
    for (let i = 0; i < this.itemKeys.length; i++) {
      const key = this.itemKeys[i]!;
      const item = this.document.items[key] as Item;
      this.checkKey('items', key, 'itemId', item.itemId, 'Item');
      this.modifierStart[i] = edge;
      const groupIds = item.modifierGroupIds;
      if (groupIds) {
        this.checkList(
          ['items', key, 'modifierGroupIds'],
          groupIds,
          this.groupIndex,
          `Item ${key}`,
          'modifier group',
          'modifierGroups',
          this.modifierEdges,
          edge,
        );
        // Group nodes follow the items in the modifier graph.
        const offset = this.itemKeys.length;
        for (let e = edge; e < edge + groupIds.length; e++) {
          if (this.modifierEdges[e]! >= 0) this.modifierEdges[e] = this.modifierEdges[e]! + offset;
        }
        edge += groupIds.length;
      }
      const minor = minorUnits(item.basePrice, currency, scale);
      if (minor === null) {
        const digits = currencyExponent(currency);
        this.sink.add(
          ['items', key, 'basePrice'],
          `PRECISION_EXCEEDED: basePrice ${item.basePrice} of item ${key} has more fraction digits than ${currency} allows (${digits}).`,
        );
      } else {
        prices.set(key, minor);
      }
    }
    this.itemEdgesEnd = edge;
    return prices;
  }

  checkModifierGroups(): void {
    const items = this.itemKeys.length;
    let edge = this.itemEdgesEnd;
    for (let g = 0; g < this.groupKeys.length; g++) {
      const key = this.groupKeys[g]!;
      const group = this.document.modifierGroups[key] as ModifierGroup;
      this.checkKey(
        'modifierGroups',
        key,
        'modifierGroupId',
        group.modifierGroupId,
        'Modifier group',
      );
      if (group.minimumAllowed > group.maximumAllowed) {
        this.sink.add(
          ['modifierGroups', key, 'maximumAllowed'],
          `Modifier group ${key} has maximumAllowed ${group.maximumAllowed} below minimumAllowed ${group.minimumAllowed}; 0 ≤ minimumAllowed ≤ maximumAllowed is required.`,
        );
      }
      this.modifierStart[items + g] = edge;
      this.checkList(
        ['modifierGroups', key, 'itemIds'],
        group.itemIds,
        this.itemIndex,
        `Modifier group ${key}`,
        'option item',
        'items',
        this.modifierEdges,
        edge,
      );
      edge += group.itemIds.length;
    }
    this.modifierStart[items + this.groupKeys.length] = edge;
  }

  private checkKey(
    dictionary: string,
    key: string,
    idField: string,
    id: string,
    label: string,
  ): void {
    if (key !== id) {
      this.sink.add(
        [dictionary, key, idField],
        `${label} keyed ${key} has ${idField} ${id}; every dictionary key must equal the entity's own ${idField}.`,
      );
    }
  }

  /**
   * Duplicates and unresolved references of one id list. When `edges` is given, the
   * resolved node index of each element (or -1) is written to edges[base + i].
   */
  private checkList(
    path: readonly (string | number)[],
    ids: readonly string[],
    index: Map<string, number>,
    owner: string,
    kind: string,
    dictionary: string,
    edges: Int32Array | undefined,
    base: number,
  ): void {
    const seen = ids.length > SMALL_LIST ? new Map<string, number>() : undefined;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      let first = -1;
      if (seen) {
        first = seen.get(id) ?? -1;
        if (first < 0) seen.set(id, i);
      } else {
        for (let j = 0; j < i; j++) {
          if (ids[j] === id) {
            first = j;
            break;
          }
        }
      }
      if (first >= 0) {
        this.sink.add(
          [...path, i],
          `${owner} lists ${kind} ${id} more than once (first at index ${first}).`,
        );
        if (edges) edges[base + i] = -1;
        continue;
      }
      const target = index.get(id);
      if (target === undefined) {
        this.sink.add(
          [...path, i],
          `${owner} references ${kind} ${id}, which is not in ${dictionary}. ${this.referenceAdvice}`,
        );
        if (edges) edges[base + i] = -1;
      } else if (edges) {
        edges[base + i] = target;
      }
    }
  }
}
