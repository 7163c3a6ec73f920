import { catalogLimits, events, type CatalogIngestError } from '@pcp/contracts';
import type { AddressAllowlist, Logger, OutboxRelay } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import { createHash } from 'node:crypto';
import { activateCatalog } from '../db/catalog.repository.js';
import type { CatalogDatabase, IngestRunRow } from '../db/catalog.table.js';
import {
  claimRun,
  extendLease,
  findRun,
  releaseLease,
  transitionRun,
} from '../db/ingest-run.repository.js';
import { validateCatalogSet } from '../domain/validate-catalog-set.js';
import { safeFetch } from '../fetch/safe-fetch.js';
import { ingestMessage } from './ingest-message.js';

export interface IngestWorkerDeps {
  db: Kysely<CatalogDatabase>;
  relay: OutboxRelay;
  logger: Logger;
  prefix: string;
  workerId: string;
  leaseMs: number;
  maxAttempts: number;
  fetch: {
    allowHttp: boolean;
    allowlist: AddressAllowlist;
    timeoutMs: number;
    connectTimeoutMs: number;
  };
}

/** The worker lost its claim (it stalled past the lease and another worker took over). */
class LeaseLost extends Error {}

const failure = (message: string, path = ''): CatalogIngestError[] => [{ message, path }];

/**
 * Handles one work message. Terminal outcomes are written before the ack, so a crash at any
 * point leaves the run claimable again (lease lapses, JetStream redelivers or the reconciler
 * re-publishes) and no run stays unfinished.
 */
export function createIngestHandler(deps: IngestWorkerDeps) {
  const { db, workerId, leaseMs, logger } = deps;

  return async function handleIngest(msg: JsMsg): Promise<void> {
    const parsed = ingestMessage.safeParse(safeJson(msg.data));
    if (!parsed.success) {
      logger.error({ subject: msg.subject }, 'malformed ingest message');
      msg.term();
      return;
    }
    const { runId } = parsed.data;
    const run = await claimRun(db, runId, workerId, leaseMs);
    if (!run) {
      const current = await findRun(db, runId);
      if (!current) msg.term();
      else if (current.status === 'succeeded' || current.status === 'failed') msg.ack();
      else {
        // Another worker holds it; look again after its lease would lapse.
        const wait = Math.max(
          1_000,
          (current.lease_expires_at?.getTime() ?? Date.now()) - Date.now() + 1_000,
        );
        msg.nak(wait);
      }
      return;
    }
    const log = logger.child({ runId, storeId: run.store_id, attempt: run.attempts });
    if (run.attempts > deps.maxAttempts) {
      await transitionRun(
        db,
        runId,
        workerId,
        'failed',
        failure(
          `The catalog could not be processed; contact support quoting catalogIngestId ${runId}`,
        ),
      );
      log.error('ingest failed after the maximum number of attempts');
      msg.ack();
      return;
    }

    let leaseLost = false;
    const heartbeat = setInterval(
      () => {
        msg.working();
        extendLease(db, runId, workerId, leaseMs).then(
          (held) => (leaseLost ||= !held),
          (error: unknown) => log.warn({ err: error }, 'lease renewal failed'),
        );
      },
      Math.max(1_000, leaseMs / 3),
    );
    const ensureLease = () => {
      if (leaseLost) throw new LeaseLost();
    };
    try {
      await ingest(run, ensureLease, () => msg.working());
      msg.ack();
    } catch (error) {
      if (error instanceof LeaseLost) {
        log.warn('lost the lease; another worker carries the run');
        msg.ack();
        return;
      }
      log.error({ err: error }, 'ingest attempt failed; will retry');
      await releaseLease(db, runId, workerId).catch(() => undefined);
      msg.nak(5_000);
    } finally {
      clearInterval(heartbeat);
    }
  };

  async function move(
    run: IngestRunRow,
    status: 'processing' | 'failed',
    errors: CatalogIngestError[] = [],
  ) {
    if (!(await transitionRun(db, run.run_id, workerId, status, errors))) throw new LeaseLost();
  }

  async function ingest(
    run: IngestRunRow,
    ensureLease: () => void,
    progress: () => void,
  ): Promise<void> {
    let lastProgress = 0;
    const download = await safeFetch(run.callback_url, {
      allowHttp: deps.fetch.allowHttp,
      allowlist: deps.fetch.allowlist,
      maxBytes: catalogLimits.maxDocumentBytes,
      maxRedirects: 3,
      connectTimeoutMs: deps.fetch.connectTimeoutMs,
      totalTimeoutMs: deps.fetch.timeoutMs,
      onProgress: () => {
        // Long downloads tell JetStream they are alive, at most once a second.
        if (Date.now() - lastProgress > 1_000) {
          lastProgress = Date.now();
          progress();
        }
      },
    });
    ensureLease();
    if (!download.ok) return move(run, 'failed', failure(download.message));

    let document: unknown;
    try {
      document = JSON.parse(download.body.toString('utf8').replace(/^\uFEFF/, ''));
    } catch (error) {
      // V8's message quotes the body; only the position is safe to repeat to the partner.
      const position =
        error instanceof SyntaxError ? /position (\d+)/.exec(error.message)?.[1] : undefined;
      const where = position === undefined ? '' : ` (error at character ${position})`;
      return move(run, 'failed', failure(`callbackUrl did not return valid JSON${where}`));
    }
    await move(run, 'processing');

    const validation = validateCatalogSet(document, {
      storeId: run.store_id,
      catalogIngestId: run.run_id,
      currency: run.currency,
    });
    ensureLease();
    if (!validation.ok) return move(run, 'failed', validation.errors);

    const documentText = JSON.stringify(validation.catalog.document);
    const etag = `"${createHash('sha256').update(documentText).digest('base64url')}"`;
    const activation = await activateCatalog(db, {
      run,
      workerId,
      catalog: validation.catalog,
      document: Buffer.from(documentText),
      etag,
      eventSubject: `${deps.prefix}.${events.catalogActivated.subject}`,
    });
    switch (activation.outcome) {
      case 'lease_lost':
        throw new LeaseLost();
      case 'superseded':
        return move(
          run,
          'failed',
          failure(
            'A later notification for this store was applied first; this CatalogSet was not activated',
          ),
        );
      case 'activated':
        void deps.relay.nudge();
        return;
    }
  }
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}
