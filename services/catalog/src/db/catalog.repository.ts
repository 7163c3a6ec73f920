import {
  events,
  type CatalogActivatedData,
  type CatalogIngestSummary,
  type PartnerMode,
} from '@pcp/contracts';
import { insertOutboxEvent } from '@pcp/service-kit';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { randomUUID } from 'node:crypto';
import type { CatalogDatabase, IngestRunRow } from './catalog.table.js';

type Db = Kysely<CatalogDatabase>;

/** Aggregate of the activation events: a store's catalog, versioned by activation. */
export const CATALOG_AGGREGATE = 'store-catalog';

/** Versions kept per store besides the active one (documents are large). */
const KEEP_PREVIOUS_VERSIONS = 2;

/**
 * Bytes per stored chunk of a document. Readers fetch one chunk per request, so this is
 * also the most a reader holds of a document at once; it is well below NATS's 1 MB
 * default max payload (a larger reply would still arrive, in parts).
 */
export const DOCUMENT_CHUNK_BYTES = 512 * 1024;

/** What activation stores of a validated CatalogSet (prepared off the request loop). */
export interface ActivatedCatalog {
  catalogSetId: string;
  currency: string;
  /** The document as served: UTF-8 JSON. */
  document: Uint8Array;
  /** Strong ETag of `document`, quoted. */
  etag: string;
  /** JSON object itemId → basePrice in minor units, for this and the next change summary. */
  pricesJson: string;
  counts: { items: number; sections: number; modifierGroups: number };
}

export type ActivationOutcome =
  | { outcome: 'activated'; summary: CatalogIngestSummary; versionId: string }
  | { outcome: 'superseded' }
  | { outcome: 'lease_lost' };

/**
 * Make the validated catalog the store's active one, in one transaction: readers see the
 * old catalog or the new one, never a mix. Runs of a store apply in notification order:
 * when a later notification is already active, this run is superseded instead.
 */
export function activateCatalog(
  db: Db,
  input: {
    run: IngestRunRow;
    workerId: string;
    catalog: ActivatedCatalog;
    eventSubject: string;
  },
): Promise<ActivationOutcome> {
  const { run } = input;
  return db.transaction().execute(async (trx) => {
    // Serializes activations of one store, including its very first (no row to lock yet).
    await sql`select pg_advisory_xact_lock(hashtextextended(${run.store_id}, 0))`.execute(trx);
    const owned = await trx
      .selectFrom('ingest_runs')
      .select('run_id')
      .where('run_id', '=', run.run_id)
      .where('lease_owner', '=', input.workerId)
      .forUpdate()
      .executeTakeFirst();
    if (!owned) return { outcome: 'lease_lost' };

    const active = await trx
      .selectFrom('active_catalogs')
      .select(['sequence', 'version_id', 'version'])
      .where('store_id', '=', run.store_id)
      .executeTakeFirst();
    if (active && active.sequence > run.sequence) return { outcome: 'superseded' };

    const { catalog } = input;
    const versionId = randomUUID();
    const activatedAt = new Date();
    await trx
      .insertInto('catalog_versions')
      .values({
        version_id: versionId,
        store_id: run.store_id,
        run_id: run.run_id,
        sequence: run.sequence,
        mode: run.mode,
        catalog_set_id: catalog.catalogSetId,
        currency: catalog.currency,
        etag: catalog.etag,
        document_bytes: catalog.document.length,
        chunk_count: chunkCount(catalog.document.length),
        prices: catalog.pricesJson,
      })
      .execute();
    await insertChunks(trx, versionId, catalog.document);
    const version = (active?.version ?? 0) + 1;
    const summary: CatalogIngestSummary = {
      items: catalog.counts.items,
      sections: catalog.counts.sections,
      modifierGroups: catalog.counts.modifierGroups,
      ...(await priceChanges(trx, versionPrices(versionId), versionPrices(active?.version_id))),
    };
    await trx
      .insertInto('active_catalogs')
      .values({
        store_id: run.store_id,
        version_id: versionId,
        sequence: run.sequence,
        version,
        activated_at: activatedAt,
      })
      .onConflict((oc) =>
        oc.column('store_id').doUpdateSet({
          version_id: versionId,
          sequence: run.sequence,
          version,
          activated_at: activatedAt,
        }),
      )
      .execute();
    // Inserted under the store's activation lock: the outbox keeps activations in order.
    const event = await insertOutboxEvent<CatalogDatabase, string, CatalogActivatedData>(trx, {
      subject: input.eventSubject,
      type: events.catalogActivated.schema.shape.type.value,
      aggregate: { type: CATALOG_AGGREGATE, id: run.store_id, version },
      occurredAt: activatedAt,
      data: {
        storeId: run.store_id,
        catalogSetId: catalog.catalogSetId,
        versionId,
        etag: catalog.etag,
        activatedAt: activatedAt.toISOString(),
      },
    });
    await trx
      .updateTable('ingest_runs')
      .set({
        status: 'succeeded',
        activation_event_id: event.id,
        errors: '[]',
        summary: JSON.stringify(summary),
        version_id: versionId,
        lease_owner: null,
        lease_expires_at: null,
        updated_at: sql`now()`,
      })
      .where('run_id', '=', run.run_id)
      .execute();
    await pruneVersions(trx, run.store_id, versionId);
    return { outcome: 'activated', summary, versionId };
  });
}

async function pruneVersions(trx: Db, storeId: string, activeVersionId: string): Promise<void> {
  const keep = await trx
    .selectFrom('catalog_versions')
    .select('version_id')
    .where('store_id', '=', storeId)
    .where('version_id', '!=', activeVersionId)
    .orderBy('sequence', 'desc')
    .limit(KEEP_PREVIOUS_VERSIONS)
    .execute();
  await trx
    .deleteFrom('catalog_versions')
    .where('store_id', '=', storeId)
    .where('version_id', 'not in', [activeVersionId, ...keep.map((row) => row.version_id)])
    .execute();
}

function chunkCount(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / DOCUMENT_CHUNK_BYTES));
}

/**
 * Chunks per insert statement (2 MB): pg serializes a statement's parameters on the event
 * loop in one go, and 32 MB at once stalled it for 300 ms.
 */
const CHUNKS_PER_INSERT = 4;

/** Rows (key = itemId, value = minor units) of one stored version's prices. */
const versionPrices = (versionId: string | undefined) =>
  sql`select key, value from catalog_versions, jsonb_each(prices)
      where version_id = ${versionId ?? null}::uuid`;

/**
 * Items added, removed and re-priced against the previously active version
 * (docs/guide/catalogs.md#ingest), counted by Postgres from both sets of prices, so the service
 * never parses 100,000 previous prices on its event loop.
 */
async function priceChanges(
  db: Db,
  next: RawBuilder<unknown>,
  previous: RawBuilder<unknown>,
): Promise<Pick<CatalogIngestSummary, 'added' | 'removed' | 'priceChanged'>> {
  const { rows } = await sql<{ added: number; removed: number; price_changed: number }>`
    with next as (${next}), previous as (${previous})
    select
      (select count(*) from next left join previous using (key) where previous.key is null)::int
        as added,
      (select count(*) from previous left join next using (key) where next.key is null)::int
        as removed,
      (select count(*) from next join previous using (key) where next.value <> previous.value)::int
        as price_changed
  `.execute(db);
  const [counted] = rows;
  return {
    added: counted?.added ?? 0,
    removed: counted?.removed ?? 0,
    priceChanged: counted?.price_changed ?? 0,
  };
}

/**
 * The summary an ingest of a validated document would report (a dry run): the candidate's
 * prices (a JSON object itemId → minor units) counted against the store's active version,
 * stored nowhere.
 */
export async function summarizeAgainstActive(
  db: Db,
  storeId: string,
  candidate: Pick<ActivatedCatalog, 'pricesJson' | 'counts'>,
): Promise<CatalogIngestSummary> {
  const changes = await priceChanges(
    db,
    sql`select key, value from jsonb_each(${candidate.pricesJson}::jsonb)`,
    sql`select key, value from active_catalogs
        join catalog_versions using (version_id), jsonb_each(prices)
        where active_catalogs.store_id = ${storeId}::uuid`,
  );
  return {
    items: candidate.counts.items,
    sections: candidate.counts.sections,
    modifierGroups: candidate.counts.modifierGroups,
    ...changes,
  };
}

async function insertChunks(trx: Db, versionId: string, document: Uint8Array): Promise<void> {
  const chunks = chunkCount(document.length);
  for (let first = 0; first < chunks; first += CHUNKS_PER_INSERT) {
    const rows = [];
    for (let index = first; index < Math.min(chunks, first + CHUNKS_PER_INSERT); index++) {
      const offset = index * DOCUMENT_CHUNK_BYTES;
      rows.push({
        version_id: versionId,
        chunk_index: index,
        bytes: Buffer.from(
          document.buffer,
          document.byteOffset + offset,
          Math.min(DOCUMENT_CHUNK_BYTES, document.length - offset),
        ),
      });
    }
    await trx.insertInto('catalog_document_chunks').values(rows).execute();
  }
}

/**
 * The store's active version, described (its document is read chunk by chunk); only one of
 * `mode` (docs/guide/sandbox.md#modes), any when `mode` is undefined (the platform's own calls).
 */
export function findActiveVersion(db: Db, storeId: string, mode: PartnerMode | undefined) {
  const query = db
    .selectFrom('active_catalogs')
    .innerJoin('catalog_versions', 'catalog_versions.version_id', 'active_catalogs.version_id')
    .select([
      'active_catalogs.store_id',
      'active_catalogs.version_id',
      'active_catalogs.activated_at',
      'catalog_versions.catalog_set_id',
      'catalog_versions.currency',
      'catalog_versions.etag',
      'catalog_versions.document_bytes',
      'catalog_versions.chunk_count',
    ])
    .where('active_catalogs.store_id', '=', storeId);
  return (mode ? query.where('catalog_versions.mode', '=', mode) : query).executeTakeFirst();
}

/**
 * One chunk of a version's document; undefined once the version was pruned, or when it is not
 * of `mode` (any mode when undefined).
 */
export async function readDocumentChunk(
  db: Db,
  versionId: string,
  index: number,
  mode: PartnerMode | undefined,
): Promise<Buffer | undefined> {
  const query = db
    .selectFrom('catalog_document_chunks')
    .innerJoin(
      'catalog_versions',
      'catalog_versions.version_id',
      'catalog_document_chunks.version_id',
    )
    .select('catalog_document_chunks.bytes')
    .where('catalog_document_chunks.version_id', '=', versionId)
    .where('catalog_document_chunks.chunk_index', '=', index);
  const row = await (
    mode ? query.where('catalog_versions.mode', '=', mode) : query
  ).executeTakeFirst();
  return row?.bytes;
}
