/**
 * Validation of a CatalogSet document (docs/guide/catalogs.md#validation): shape, limits, store and
 * currency, dictionary keys, references, section and modifier cycles, modifier depth,
 * modifier-group bounds and money precision. Every failed rule yields one `{message, path}` with
 * `path` an RFC 6901 pointer into the document; all errors are collected, capped at
 * `catalogLimits.maxErrors`. Catalog ingest, its dry run and `pcp-catalog dry-run` all run this.
 *
 * This file holds the entry point and the shape rules; the reference rules are in
 * reference-checks.ts and the nesting rules (cycles, depth) in nesting-checks.ts. The checks
 * run once over 100,000-item documents, so the graph walks are iterative over typed arrays
 * (no recursion, no per-node closures) and every node is visited once.
 */
import {
  catalogEntry,
  catalogItem,
  catalogLimits,
  catalogSection,
  catalogSetDocument,
  modifierGroup,
  parseContract,
} from '@pcp/contracts';
import type { CatalogIngestError, CatalogSetDocument } from '@pcp/contracts';
import { z } from 'zod';
import { ErrorSink } from './error-sink.js';
import { checkModifierNesting, checkSectionCycles } from './nesting-checks.js';
import { checkReferences } from './reference-checks.js';

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

/**
 * Validate a parsed JSON CatalogSet against the rules of docs/guide/catalogs.md#validation. The
 * storeId and currency rules are checked when `context` names them (ingest and the dry run always
 * do).
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

  const references = checkReferences(document, referenceAdvice(context.catalogIngestId), sink);
  checkSectionCycles(references, sink);
  checkModifierNesting(references, sink);

  if (!sink.empty) return { ok: false, errors: sink.result() };
  return {
    ok: true,
    catalog: {
      document,
      prices: references.prices,
      counts: {
        items: references.itemKeys.length,
        sections: references.sectionKeys.length,
        modifierGroups: references.groupKeys.length,
        catalogs: references.catalogKeys.length,
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
