/**
 * Runs in a worker thread of the catalog compile pool (compile-pool.ts): the CPU-heavy part
 * of loading a catalog version (JSON parse of a document of up to 50 MB, its contract check,
 * indexing), so ordering's event loop keeps pricing carts, placing orders and dispatching
 * webhooks meanwhile. Only the compact compiled tables come back, by transfer.
 */
import { catalogSetDocument } from '@pcp/contracts';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import {
  compileCatalogParts,
  compiledCatalogBuffers,
  type CompiledCatalogParts,
} from './compiled-catalog.js';

export interface CompileCatalogTask {
  /** The document's bytes, transferred (the sender's view is detached). */
  bytes: ArrayBuffer;
  versionId: string;
}

export type CompileCatalogResult =
  | { outcome: 'compiled'; catalog: CompiledCatalogParts }
  /** Not JSON or not a CatalogSet: the catalog service stored what it must have refused. */
  | { outcome: 'invalid'; reason: string };

/** Piscina's wrapper of a result whose buffers are transferred, not copied. */
type Moved = ReturnType<typeof move>;

export default function compileCatalogTask(task: CompileCatalogTask): Moved {
  let document: unknown;
  try {
    document = JSON.parse(Buffer.from(task.bytes).toString('utf8'));
  } catch {
    return result({ outcome: 'invalid', reason: 'not JSON' });
  }
  const parsed = catalogSetDocument.safeParse(document);
  if (!parsed.success) return result({ outcome: 'invalid', reason: 'not a CatalogSet' });
  const catalog = compileCatalogParts(parsed.data, task.versionId);
  return result({ outcome: 'compiled', catalog }, compiledCatalogBuffers(catalog));
}

function result(value: CompileCatalogResult, transfer: ArrayBuffer[] = []): Moved {
  return move({ [transferableSymbol]: transfer, [valueSymbol]: value });
}
