/**
 * Runs in a worker thread of the catalog preparation pool (prepare-catalog.pool.ts): the
 * CPU-heavy part of an ingest (JSON parse, validation, serialization, hashing) or of its dry
 * run (parse, validation), so the service's event loop keeps answering requests meanwhile.
 * The parsed document never leaves this thread; only what activation stores does.
 */
import { validateCatalogSet, type ValidationContext } from '@pcp/catalog-validation';
import type { CatalogIngestError, CatalogSetDocument } from '@pcp/contracts';
import { createHash } from 'node:crypto';
import type { MessagePort } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import type { ActivatedCatalog } from '../db/catalog.repository.js';

export interface PrepareCatalogTask {
  /** The downloaded bytes, transferred (the sender's view is detached). */
  bytes: ArrayBuffer;
  context: ValidationContext;
  /**
   * `activation`: a valid document is serialized and hashed for storing (an ingest).
   * `dry-run`: it is only validated and priced (a dry run stores nothing).
   */
  purpose: 'activation' | 'dry-run';
  /** Receives `PARSED` once the bytes are valid JSON: the run then shows `processing`. */
  progress?: MessagePort;
}

export const PARSED = 'parsed';

/** What a dry run learns of a valid document: enough for the change summary. */
export type DryRunCatalog = Pick<ActivatedCatalog, 'pricesJson' | 'counts'>;

type NotValid =
  | { outcome: 'invalid_json'; message: string }
  | { outcome: 'invalid'; errors: CatalogIngestError[] };

export type PrepareCatalogResult = NotValid | { outcome: 'valid'; catalog: ActivatedCatalog };
export type DryRunCatalogResult = NotValid | { outcome: 'valid'; catalog: DryRunCatalog };

/** Piscina's wrapper of a result whose buffers are transferred, not copied. */
type Moved = ReturnType<typeof move>;

export default function prepareCatalog(task: PrepareCatalogTask): Moved {
  let document: unknown;
  try {
    document = JSON.parse(
      Buffer.from(task.bytes)
        .toString('utf8')
        .replace(/^\uFEFF/, ''),
    );
  } catch (error) {
    // V8's message quotes the body; only the position is safe to repeat to the partner.
    const position =
      error instanceof SyntaxError ? /position (\d+)/.exec(error.message)?.[1] : undefined;
    const where = position === undefined ? '' : ` (error at character ${position})`;
    return result({
      outcome: 'invalid_json',
      message: `callbackUrl did not return valid JSON${where}`,
    });
  }
  task.progress?.postMessage(PARSED);

  const validation = validateCatalogSet(document, task.context);
  if (!validation.ok) return result({ outcome: 'invalid', errors: validation.errors });

  const { catalog } = validation;
  // Serialized here: 100,000 prices take the request loop 90 ms to stringify.
  const pricesJson = JSON.stringify(Object.fromEntries(catalog.prices));
  if (task.purpose === 'dry-run') {
    return result({ outcome: 'valid', catalog: { pricesJson, counts: catalog.counts } });
  }
  const activated = toActivatedCatalog(catalog.document, pricesJson, catalog.counts);
  return result({ outcome: 'valid', catalog: activated }, [activated.document.buffer]);
}

/**
 * What activation stores of a valid document: its bytes as served and their strong ETag (also
 * the fixture catalogs' path, catalog/src/fixtures/fixture-catalogs.ts).
 */
export function toActivatedCatalog(
  document: CatalogSetDocument,
  pricesJson: string,
  counts: ActivatedCatalog['counts'],
): ActivatedCatalog & { document: Uint8Array<ArrayBuffer> } {
  // An encoder's output owns its ArrayBuffer (a small Buffer may sit in Node's shared pool),
  // so it can be transferred back without a copy.
  const bytes = new TextEncoder().encode(JSON.stringify(document));
  const etag = `"${createHash('sha256').update(bytes).digest('base64url')}"`;
  return {
    document: bytes,
    etag,
    catalogSetId: document.catalogSetId,
    currency: document.currency,
    pricesJson,
    counts,
  };
}

/** The result for piscina, handing `transfer` over to the main thread instead of copying. */
function result(
  value: PrepareCatalogResult | DryRunCatalogResult,
  transfer: ArrayBuffer[] = [],
): Moved {
  return move({ [transferableSymbol]: transfer, [valueSymbol]: value });
}
