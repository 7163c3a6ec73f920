import { subjects } from '@pcp/contracts';
import { handle, requireTestPartner, type HandlerBinding } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { CATALOG_AGGREGATE } from '../db/catalog.repository.js';
import type { CatalogDatabase } from '../db/catalog.table.js';

/**
 * `catalog.testReset` (docs/guide/sandbox.md#reset): the calling test tenant's ingest runs,
 * the catalog versions they made (documents and activations with them), its turn in the fair
 * queue and its stores' catalog events in the outbox, in one transaction. A run a worker
 * holds right now (its lease live) is left to finish, with what it made.
 */
export function testResetHandler(db: Kysely<CatalogDatabase>): HandlerBinding {
  return handle(subjects.catalog.testReset, async (_input, ctx) => {
    const partnerId = requireTestPartner(ctx);
    const deleted = await db.transaction().execute(async (trx) => {
      const runs = await trx
        .selectFrom('ingest_runs')
        .select(['run_id', 'store_id'])
        .where('partner_id', '=', partnerId)
        .where((eb) =>
          eb.or([
            eb('lease_expires_at', 'is', null),
            eb('lease_expires_at', '<', sql<Date>`now()`),
          ]),
        )
        .forUpdate()
        .execute();
      const runIds = runs.map((run) => run.run_id);
      if (runIds.length === 0) {
        const turns = await trx
          .deleteFrom('ingest_partner_turns')
          .where('partner_id', '=', partnerId)
          .executeTakeFirst();
        return emptyCounts(Number(turns.numDeletedRows));
      }
      const storeIds = [...new Set(runs.map((run) => run.store_id))];
      const versionIds = trx
        .selectFrom('catalog_versions')
        .select('version_id')
        .where('run_id', 'in', runIds);
      const active = await trx
        .deleteFrom('active_catalogs')
        .where('version_id', 'in', versionIds)
        .executeTakeFirst();
      const chunks = await trx
        .deleteFrom('catalog_document_chunks')
        .where('version_id', 'in', versionIds)
        .executeTakeFirst();
      // A run refers to the version it made; clear it before the version goes.
      await trx
        .updateTable('ingest_runs')
        .set({ version_id: null })
        .where('run_id', 'in', runIds)
        .execute();
      const versions = await trx
        .deleteFrom('catalog_versions')
        .where('run_id', 'in', runIds)
        .executeTakeFirst();
      const deletedRuns = await trx
        .deleteFrom('ingest_runs')
        .where('run_id', 'in', runIds)
        .executeTakeFirst();
      const outbox = await trx
        .deleteFrom('outbox')
        .where('aggregate_type', '=', CATALOG_AGGREGATE)
        .where('aggregate_id', 'in', storeIds)
        .executeTakeFirst();
      const turns = await trx
        .deleteFrom('ingest_partner_turns')
        .where('partner_id', '=', partnerId)
        .executeTakeFirst();
      return {
        'catalog.ingest_runs': Number(deletedRuns.numDeletedRows),
        'catalog.catalog_versions': Number(versions.numDeletedRows),
        'catalog.catalog_document_chunks': Number(chunks.numDeletedRows),
        'catalog.active_catalogs': Number(active.numDeletedRows),
        'catalog.ingest_partner_turns': Number(turns.numDeletedRows),
        'catalog.outbox': Number(outbox.numDeletedRows),
      };
    });
    return { deleted };
  });
}

function emptyCounts(turns: number): Record<string, number> {
  return {
    'catalog.ingest_runs': 0,
    'catalog.catalog_versions': 0,
    'catalog.catalog_document_chunks': 0,
    'catalog.active_catalogs': 0,
    'catalog.ingest_partner_turns': turns,
    'catalog.outbox': 0,
  };
}
