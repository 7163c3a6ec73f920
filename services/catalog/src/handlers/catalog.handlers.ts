import { subjects } from '@pcp/contracts';
import { AppError, handle, handleStream, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { findActiveVersion, readDocument } from '../db/catalog.repository.js';
import type { CatalogDatabase } from '../db/catalog.table.js';

/** Documents kept in memory, newest first (a version's document never changes). */
const CACHE_BYTES = 256 * 1024 * 1024;

function createDocumentCache() {
  const entries = new Map<string, Buffer>();
  let bytes = 0;
  return {
    get(versionId: string): Buffer | undefined {
      const hit = entries.get(versionId);
      if (hit) {
        entries.delete(versionId);
        entries.set(versionId, hit);
      }
      return hit;
    },
    set(versionId: string, document: Buffer): void {
      entries.set(versionId, document);
      bytes += document.length;
      for (const [oldest, value] of entries) {
        if (bytes <= CACHE_BYTES || entries.size === 1) break;
        entries.delete(oldest);
        bytes -= value.length;
      }
    },
  };
}

/** `If-None-Match` matches when it is `*` or lists the ETag (weak comparison, RFC 9110). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

export function catalogHandlers(db: Kysely<CatalogDatabase>): HandlerBinding[] {
  const cache = createDocumentCache();

  async function active(storeId: string) {
    const version = await findActiveVersion(db, storeId);
    if (!version)
      throw new AppError('CATALOGSET_NOT_FOUND', 'This store has no active CatalogSet yet');
    return {
      storeId: version.store_id,
      catalogSetId: version.catalog_set_id,
      versionId: version.version_id,
      currency: version.currency,
      etag: version.etag,
      activatedAt: version.activated_at.toISOString(),
    };
  }

  return [
    handle(subjects.catalog.active, ({ storeId }) => active(storeId)),

    handleStream(subjects.catalog.document, async ({ storeId, ifNoneMatch }) => {
      const version = await active(storeId);
      if (etagMatches(ifNoneMatch, version.etag))
        return { result: { ...version, notModified: true } };
      let document = cache.get(version.versionId);
      if (!document) {
        const text = await readDocument(db, version.versionId);
        // Pruned between the two reads: a newer version is active now.
        if (text === undefined)
          throw new AppError('SERVICE_UNAVAILABLE', 'The CatalogSet changed; retry');
        document = Buffer.from(text);
        cache.set(version.versionId, document);
      }
      return { result: { ...version, notModified: false }, body: document };
    }),
  ];
}
