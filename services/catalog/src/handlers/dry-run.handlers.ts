import { subjects, type CatalogIngestError, type CatalogSetDryRun } from '@pcp/contracts';
import {
  AppError,
  handle,
  requirePartner,
  type BusClient,
  type HandlerBinding,
  type Logger,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { summarizeAgainstActive } from '../db/catalog.repository.js';
import type { CatalogDatabase } from '../db/catalog.table.js';
import type { DryRunSlots } from '../domain/dry-run-slots.js';
import { downloadCatalogSet, type CatalogFetchSettings } from '../worker/download-catalog.js';
import type { CatalogPreparationPool } from '../worker/prepare-catalog.pool.js';
import type { DryRunCatalogResult } from '../worker/prepare-catalog.task.js';

/** When a refused dry run may try again: about one validation of a large document. */
const BUSY_RETRY_AFTER_SECONDS = 5;

const invalid = (errors: CatalogIngestError[]): CatalogSetDryRun => ({
  valid: false,
  errors,
  summary: null,
});

/**
 * The dry run of an ingest: the document at callbackUrl downloaded by the same function and
 * settings, validated on the same preparation threads and summarized against the store's
 * active catalog, storing nothing (no run, no version, no event).
 */
export function dryRunHandlers(deps: {
  db: Kysely<CatalogDatabase>;
  bus: BusClient;
  preparation: CatalogPreparationPool;
  fetch: CatalogFetchSettings;
  slots: DryRunSlots;
  logger: Logger;
}): HandlerBinding[] {
  return [
    handle(subjects.catalog.dryRun, async ({ storeId, callbackUrl }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      // The stores service answers 404 for another partner's store; that error passes through.
      const store = await deps.bus.request(subjects.stores.get, { storeId }, ctx);
      const slot = deps.slots.take(partnerId);
      if (!slot.ok) {
        throw slot.reason === 'partner_busy'
          ? new AppError(
              'RATE_LIMITED',
              'This partner already has the most catalog validations in progress; retry when one finishes',
              { retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS },
            )
          : new AppError('SERVICE_UNAVAILABLE', 'Catalog validation is busy; retry later', {
              retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS,
            });
      }
      try {
        const download = await downloadCatalogSet(callbackUrl, deps.fetch);
        if (!download.ok) {
          deps.logger.info(
            { failure: download.failure, storeId },
            'dry run: callbackUrl download failed',
          );
          return invalid([{ message: download.message, path: '' }]);
        }
        let checked: DryRunCatalogResult;
        try {
          checked = await deps.preparation.dryRun(download.body, {
            storeId,
            currency: store.currency,
          });
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ERR_WORKER_OUT_OF_MEMORY') throw error;
          deps.logger.error(
            { err: error, storeId },
            'dry run: the document exhausted a thread’s heap',
          );
          return invalid([
            {
              message: `The catalog could not be processed; contact support quoting requestId ${ctx.requestId}`,
              path: '',
            },
          ]);
        }
        switch (checked.outcome) {
          case 'invalid_json':
            return invalid([{ message: checked.message, path: '' }]);
          case 'invalid':
            return invalid(checked.errors);
          case 'valid':
            return {
              valid: true,
              errors: [],
              summary: await summarizeAgainstActive(deps.db, storeId, checked.catalog),
            };
        }
      } finally {
        slot.release();
      }
    }),
  ];
}
