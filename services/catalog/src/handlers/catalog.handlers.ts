import { subjects } from '@pcp/contracts';
import { AppError, handle, handleBytes, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import { findActiveVersion, readDocumentChunk } from '../db/catalog.repository.js';
import type { CatalogDatabase } from '../db/catalog.table.js';

/** `If-None-Match` matches when it is `*` or lists the ETag (weak comparison, RFC 9110). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

const catalogSetNotFound = () =>
  new AppError('CATALOGSET_NOT_FOUND', 'This store has no active CatalogSet yet');

export function catalogHandlers(
  db: Kysely<CatalogDatabase>,
  options: { documentCacheBytes: number },
): HandlerBinding[] {
  // Chunks of immutable versions, shared by every reader: a popular catalog is read from
  // memory, and the budget bounds what the cache may hold whatever partners ask for.
  const chunks =
    options.documentCacheBytes > 0
      ? new LRUCache<string, Buffer>({
          maxSize: options.documentCacheBytes,
          sizeCalculation: (chunk) => Math.max(1, chunk.length),
        })
      : undefined;

  async function activeVersion(storeId: string) {
    const version = await findActiveVersion(db, storeId);
    if (!version) throw catalogSetNotFound();
    return version;
  }
  const describe = (version: Awaited<ReturnType<typeof activeVersion>>) => ({
    storeId: version.store_id,
    catalogSetId: version.catalog_set_id,
    versionId: version.version_id,
    currency: version.currency,
    etag: version.etag,
    activatedAt: version.activated_at.toISOString(),
  });

  return [
    handle(subjects.catalog.active, async ({ storeId }) => describe(await activeVersion(storeId))),

    handle(subjects.catalog.document, async ({ storeId, ifNoneMatch }) => {
      const version = await activeVersion(storeId);
      return {
        ...describe(version),
        notModified: etagMatches(ifNoneMatch, version.etag),
        totalBytes: version.document_bytes,
        chunks: version.chunk_count,
      };
    }),

    handleBytes(subjects.catalog.documentChunk, async ({ versionId, index }) => {
      const key = `${versionId}:${index}`;
      const cached = chunks?.get(key);
      if (cached) return cached;
      const chunk = await readDocumentChunk(db, versionId, index);
      // Pruned while a reader was on it: a newer version is active now.
      if (!chunk) throw catalogSetNotFound();
      chunks?.set(key, chunk);
      return chunk;
    }),
  ];
}
