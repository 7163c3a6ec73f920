import { subjects } from '@pcp/contracts';
import type { PartnerMode } from '@pcp/contracts';
import { AppError, handle, handleBytes, visibleMode, type HandlerBinding } from '@pcp/service-kit';
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

  // A store's catalog is visible only to requests of its mode (docs/guide/sandbox.md#modes).
  async function activeVersion(storeId: string, mode: PartnerMode | undefined) {
    const version = await findActiveVersion(db, storeId, mode);
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
    handle(subjects.catalog.active, async ({ storeId }, ctx) =>
      describe(await activeVersion(storeId, visibleMode(ctx))),
    ),

    handle(subjects.catalog.document, async ({ storeId, ifNoneMatch }, ctx) => {
      const version = await activeVersion(storeId, visibleMode(ctx));
      return {
        ...describe(version),
        notModified: etagMatches(ifNoneMatch, version.etag),
        totalBytes: version.document_bytes,
        chunks: version.chunk_count,
      };
    }),

    // By version id, which only a read of the store's catalog shows: the version's mode is
    // checked all the same, so an id seen in one mode reads nothing in the other.
    handleBytes(subjects.catalog.documentChunk, async ({ versionId, index }, ctx) => {
      const mode = visibleMode(ctx);
      const key = `${mode ?? 'any'}:${versionId}:${index}`;
      const cached = chunks?.get(key);
      if (cached) return cached;
      const chunk = await readDocumentChunk(db, versionId, index, mode);
      // Pruned while a reader was on it: a newer version is active now.
      if (!chunk) throw catalogSetNotFound();
      chunks?.set(key, chunk);
      return chunk;
    }),
  ];
}
