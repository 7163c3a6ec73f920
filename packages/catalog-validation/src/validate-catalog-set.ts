/**
 * Validation of a CatalogSet document (contract §3): shape, limits, store and currency,
 * dictionary keys, references, section and modifier cycles, modifier depth, modifier-group
 * bounds and money precision. Every failed rule yields one `{message, path}` with `path` an
 * RFC 6901 pointer into the document; all errors are collected, capped at
 * `catalogLimits.maxErrors`. Catalog ingest, its dry run and `pcp-catalog dry-run` all run this.
 *
 * The checks run once over 100,000-item documents, so the graph walks are iterative over
 * typed arrays (no recursion, no per-node closures) and every node is visited once.
 */
import {
  catalogEntry,
  catalogItem,
  catalogLimits,
  catalogSection,
  catalogSetDocument,
  modifierGroup,
  currencyExponent,
  parseContract,
  toJsonPointer,
  toMinorUnits,
} from '@pcp/contracts';
import type { CatalogIngestError, CatalogSetDocument } from '@pcp/contracts';
import { z } from 'zod';

/** What the document is checked against; a rule whose value is absent is not checked. */
export interface ValidationContext {
  /** The store the document is for; the document's storeId must equal it. */
  storeId?: string;
  /** The store's currency; the document's currency must equal it. */
  currency?: string;
  /** The ingest run, quoted in referential errors for support (absent: a dry run). */
  catalogIngestId?: string;
}

/** A document that passed every rule, with what activation and the change summary need. */
export interface ValidatedCatalogSet {
  document: CatalogSetDocument;
  /** itemId → basePrice in integer minor units */
  prices: Map<string, number>;
  counts: { items: number; sections: number; modifierGroups: number; catalogs: number };
}

/** The validated document, or every error found (at most `catalogLimits.maxErrors`). */
export type ValidationResult =
  { ok: true; catalog: ValidatedCatalogSet } | { ok: false; errors: CatalogIngestError[] };

type Catalog = CatalogSetDocument['catalogs'][string];
type Section = CatalogSetDocument['sections'][string];
type Item = CatalogSetDocument['items'][string];
type ModifierGroup = CatalogSetDocument['modifierGroups'][string];

/** Lists shorter than this are checked for duplicates pairwise instead of with a Set. */
const SMALL_LIST = 16;
/** How many nodes of a cycle its error message spells out. */
const CYCLE_NODES_SHOWN = 8;

/** Collects errors up to the cap and counts the rest. */
class ErrorSink {
  readonly errors: CatalogIngestError[] = [];
  private omitted = 0;

  add(path: readonly (string | number)[], message: string): void {
    if (this.errors.length < catalogLimits.maxErrors) {
      this.errors.push({ message, path: toJsonPointer(path) });
    } else {
      this.omitted += 1;
    }
  }

  get empty(): boolean {
    return this.errors.length === 0;
  }

  /** The errors; past the cap the last entry (path '') says how many more were omitted. */
  result(): CatalogIngestError[] {
    if (this.omitted === 0) return this.errors;
    const capped = this.errors.slice(0, catalogLimits.maxErrors - 1);
    const more = this.omitted + 1;
    capped.push({
      message: `${more} more error${more === 1 ? ' was' : 's were'} omitted (at most ${catalogLimits.maxErrors} errors are reported).`,
      path: '',
    });
    return capped;
  }
}

/**
 * Validate a parsed JSON CatalogSet against contract §3. The storeId and currency rules are
 * checked when `context` names them (ingest and the dry run always do).
 */
export function validateCatalogSet(
  input: unknown,
  context: ValidationContext = {},
): ValidationResult {
  const sink = new ErrorSink();

  // Limits first: a document over the item limit is refused whatever else is wrong.
  const rawItems = isPlainObject(input) ? input.items : undefined;
  if (isPlainObject(rawItems)) {
    const count = Object.keys(rawItems).length;
    if (count > catalogLimits.maxItems) {
      sink.add(
        ['items'],
        `The catalog has ${count} items; at most ${catalogLimits.maxItems} are allowed.`,
      );
    }
  }

  const parsed = parseContract(catalogSetDocument, input);
  if (!parsed.success) {
    const issues = parsed.firstOnly ? issuesByEntry(input) : parsed.error.issues;
    for (const issue of issues.length > 0 ? issues : parsed.error.issues) {
      sink.add(issue.path as (string | number)[], readableIssue(issue.path, issue.message));
    }
    return { ok: false, errors: sink.result() };
  }
  const document = parsed.data;
  checkKeysDistinct(input as CatalogSetDocument, document, sink);

  if (context.storeId !== undefined && document.storeId !== context.storeId) {
    sink.add(
      ['storeId'],
      `storeId ${document.storeId} does not match the notified store ${context.storeId}.`,
    );
  }
  if (context.currency !== undefined && document.currency !== context.currency) {
    sink.add(
      ['currency'],
      `currency ${document.currency} does not match the store's currency ${context.currency}.`,
    );
  }

  const checker = new ReferenceChecker(document, referenceAdvice(context.catalogIngestId), sink);
  checker.checkCatalogs();
  checker.checkSections();
  const prices = checker.checkItems();
  checker.checkModifierGroups();
  checker.checkSectionCycles();
  checker.checkModifierGraph();

  if (!sink.empty) return { ok: false, errors: sink.result() };
  return {
    ok: true,
    catalog: {
      document,
      prices,
      counts: {
        items: checker.itemKeys.length,
        sections: checker.sectionKeys.length,
        modifierGroups: checker.groupKeys.length,
        catalogs: checker.catalogKeys.length,
      },
    },
  };
}

const dictionaries = ['catalogs', 'sections', 'items', 'modifierGroups'] as const;

const entrySchemas = {
  catalogs: catalogEntry,
  sections: catalogSection,
  items: catalogItem,
  modifierGroups: modifierGroup,
} as const;

/** The document's own fields, with each dictionary checked only for being one. */
const documentOutline = catalogSetDocument.extend({
  catalogs: z.record(z.string(), z.unknown()),
  sections: z.record(z.string(), z.unknown()),
  items: z.record(z.string(), z.unknown()),
  modifierGroups: z.record(z.string(), z.unknown()),
});

/**
 * The schema problems of a document too large for one parse to report them all (only its
 * first was looked for): the outline, then entry by entry until the report is full, so the
 * cost is bounded by the report rather than by how many entries are broken.
 */
function issuesByEntry(input: unknown): z.core.$ZodIssue[] {
  const outline = parseContract(documentOutline, input);
  if (!outline.success) return outline.error.issues;
  const issues: z.core.$ZodIssue[] = [];
  for (const dictionary of dictionaries) {
    for (const [key, entry] of Object.entries(outline.data[dictionary])) {
      const checked = parseContract(entrySchemas[dictionary], entry);
      if (checked.success) continue;
      for (const issue of checked.error.issues) {
        issues.push({ ...issue, path: [dictionary, key, ...issue.path] });
      }
      if (issues.length >= catalogLimits.maxErrors) return issues;
    }
  }
  return issues;
}

/**
 * GUIDs compare case-insensitively, so two keys of a dictionary that differ only in case
 * name the same entity: the second would silently replace the first.
 */
function checkKeysDistinct(
  input: CatalogSetDocument,
  parsed: CatalogSetDocument,
  sink: ErrorSink,
): void {
  for (const dictionary of dictionaries) {
    const keys = Object.keys(input[dictionary]);
    if (keys.length === Object.keys(parsed[dictionary]).length) continue;
    const seen = new Set<string>();
    for (const key of keys) {
      const id = key.toLowerCase();
      if (seen.has(id)) {
        sink.add(
          [dictionary, key],
          `${key} names the same id as another key of ${dictionary} (ids compare case-insensitively).`,
        );
      }
      seen.add(id);
    }
  }
}

/**
 * How a referential error ends: an ingest run's id is something support can look up (the
 * spec has partners quote it); without a run there is nothing to quote.
 */
function referenceAdvice(catalogIngestId: string | undefined): string {
  return catalogIngestId === undefined
    ? 'Fix the reference.'
    : `Fix the reference, or contact support quoting catalogIngestId ${catalogIngestId}.`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A zod issue as a partner-readable sentence naming the field. */
function readableIssue(path: readonly PropertyKey[], message: string): string {
  let field = 'The document';
  const last = path[path.length - 1];
  if (typeof last === 'number') {
    field = `${String(path[path.length - 2] ?? '')}[${last}]`;
  } else if (last !== undefined) {
    field = String(last);
  }
  if (/received undefined$/.test(message)) return `${field} is required.`;
  return `${field}: ${message.replace(/^Invalid input: /, '')}.`.replace(/\.\.$/, '.');
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
 * compact adjacency (CSR) arrays the cycle and depth walks use. Node numbering of the
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
  private readonly sectionStart: Int32Array;
  private readonly sectionEdges: Int32Array;
  /** Modifier graph over items then groups; -1 marks an edge that does not resolve. */
  private readonly modifierStart: Int32Array;
  private readonly modifierEdges: Int32Array;
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

  /** Section nesting must be acyclic: one error per back edge of a depth-first walk. */
  checkSectionCycles(): void {
    const start = this.sectionStart;
    walkDepthFirst(this.sectionKeys.length, this.sectionKeys.length, start, this.sectionEdges, {
      onBackEdge: (node, edge, target, stack, from, top) => {
        const cycle = this.describeCycle(stack, from, top, target, (n) => this.sectionKeys[n]!);
        this.sink.add(
          ['sections', this.sectionKeys[node]!, 'sectionIds', edge - start[node]!],
          `Section ${this.sectionKeys[node]!} lists section ${this.sectionKeys[target]!}, which contains it: sections must not nest in a cycle (${cycle}).`,
        );
      },
    });
  }

  /**
   * Modifier nesting (item → its groups → their option items → …) must be acyclic and at
   * most `maxModifierDepth` group levels deep. One walk does both: the height of an item is
   * the number of group levels below it (memoized), and each back edge is one cycle.
   */
  checkModifierGraph(): void {
    const items = this.itemKeys.length;
    const count = items + this.groupKeys.length;
    /** The node reaches a cycle: its height is meaningless and not reported. */
    const tainted = new Uint8Array(count);
    const height = new Int32Array(count);
    const start = this.modifierStart;
    const tooDeep = catalogLimits.maxModifierDepth + 1;
    const name = (n: number): string =>
      n < items ? `item ${this.itemKeys[n]!}` : `group ${this.groupKeys[n - items]!}`;

    // Every modifier cycle passes through an item, so walking from the items finds them all.
    walkDepthFirst(count, items, start, this.modifierEdges, {
      onEnter: (node) => {
        height[node] = node < items ? 0 : 1;
      },
      onBackEdge: (node, edge, target, stack, from, top) => {
        tainted[node] = 1;
        this.reportModifierCycle(node, edge - start[node]!, target, stack, from, top, name);
      },
      onCrossEdge: (node, target) => fold(node, target),
      onFinish: (node, parent) => {
        if (node < items && height[node] === tooDeep && tainted[node] === 0) {
          this.reportTooDeep(node, tooDeep, height);
        }
        if (parent >= 0) fold(parent, node);
      },
    });

    function fold(parent: number, child: number): void {
      if (tainted[child] === 1) tainted[parent] = 1;
      const through = parent < items ? height[child]! : height[child]! + 1;
      if (through > height[parent]!) height[parent] = through;
    }
  }

  private reportModifierCycle(
    node: number,
    edgeIndex: number,
    target: number,
    stack: Int32Array,
    from: number,
    top: number,
    name: (n: number) => string,
  ): void {
    const items = this.itemKeys.length;
    const cycle = this.describeCycle(stack, from, top, target, name);
    if (node < items) {
      const key = this.itemKeys[node]!;
      this.sink.add(
        ['items', key, 'modifierGroupIds', edgeIndex],
        `Item ${key} uses modifier group ${this.groupKeys[target - items]!}, which leads back to it: modifiers must not nest in a cycle (${cycle}).`,
      );
    } else {
      const key = this.groupKeys[node - items]!;
      this.sink.add(
        ['modifierGroups', key, 'itemIds', edgeIndex],
        `Modifier group ${key} offers item ${this.itemKeys[target]!}, which leads back to it: modifiers must not nest in a cycle (${cycle}).`,
      );
    }
  }

  /** An item whose modifier groups nest exactly one level too deep (its ancestors are not repeated). */
  private reportTooDeep(node: number, levels: number, height: Int32Array): void {
    const items = this.itemKeys.length;
    const start = this.modifierStart[node]!;
    const end = this.modifierStart[node + 1]!;
    for (let e = start; e < end; e++) {
      const group = this.modifierEdges[e]!;
      if (group >= 0 && height[group] === levels) {
        const key = this.itemKeys[node]!;
        this.sink.add(
          ['items', key, 'modifierGroupIds', e - start],
          `Item ${key} nests modifier groups ${levels} levels deep through modifier group ${this.groupKeys[group - items]!}; at most ${catalogLimits.maxModifierDepth} levels are allowed.`,
        );
        return;
      }
    }
  }

  private describeCycle(
    stack: Int32Array,
    from: number,
    top: number,
    target: number,
    name: (n: number) => string,
  ): string {
    const parts: string[] = [];
    for (let p = from; p <= top && parts.length < CYCLE_NODES_SHOWN; p++) {
      parts.push(name(stack[p]!));
    }
    if (top - from + 1 > CYCLE_NODES_SHOWN) parts.push('…');
    parts.push(name(target));
    return parts.join(' → ');
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

interface DepthFirstVisitor {
  /** A node is first reached (roots included). */
  onEnter?(node: number): void;
  /**
   * The edge at index `edge` from `node` reaches `target`, which is on the current path: a
   * cycle, the path's nodes being `stack[from..top]`.
   */
  onBackEdge(
    node: number,
    edge: number,
    target: number,
    stack: Int32Array,
    from: number,
    top: number,
  ): void;
  /** An edge reaches a node already finished. */
  onCrossEdge?(node: number, target: number): void;
  /** Every edge of `node` is walked; `parent` reached it (-1 for a root). */
  onFinish?(node: number, parent: number): void;
}

/**
 * Iterative depth-first walk over a graph in compressed form (the edges of node n are
 * `edges[start[n]..start[n + 1]]`, a negative target being a missing reference), from
 * each of the first `roots` nodes not yet seen. No recursion, so 100k-node catalogs
 * cannot exhaust the stack.
 */
function walkDepthFirst(
  count: number,
  roots: number,
  start: ArrayLike<number>,
  edges: ArrayLike<number>,
  visitor: DepthFirstVisitor,
): void {
  const state = new Uint8Array(count); // 0 unvisited, 1 on the walk's path, 2 done
  const stack = new Int32Array(count);
  const cursor = new Int32Array(count);
  const position = new Int32Array(count);
  for (let root = 0; root < roots; root++) {
    if (state[root] !== 0) continue;
    let top = 0;
    stack[0] = root;
    cursor[0] = start[root]!;
    position[root] = 0;
    state[root] = 1;
    visitor.onEnter?.(root);
    while (top >= 0) {
      const node = stack[top]!;
      const edge = cursor[top]!;
      if (edge < start[node + 1]!) {
        cursor[top] = edge + 1;
        const target = edges[edge]!;
        if (target < 0) continue;
        if (state[target] === 0) {
          top += 1;
          stack[top] = target;
          cursor[top] = start[target]!;
          position[target] = top;
          state[target] = 1;
          visitor.onEnter?.(target);
        } else if (state[target] === 1) {
          visitor.onBackEdge(node, edge, target, stack, position[target]!, top);
        } else {
          visitor.onCrossEdge?.(node, target);
        }
      } else {
        state[node] = 2;
        top -= 1;
        visitor.onFinish?.(node, top >= 0 ? stack[top]! : -1);
      }
    }
  }
}
