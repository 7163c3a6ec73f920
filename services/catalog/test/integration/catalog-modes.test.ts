import { subjects, type PartnerMode } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  createSubjectService,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { CATALOG_SCHEMA, type CatalogDatabase } from '../../src/app.js';
import { activateCatalog } from '../../src/db/catalog.repository.js';
import { insertRun } from '../../src/db/ingest-run.repository.js';
import { catalogHandlers } from '../../src/handlers/catalog.handlers.js';

// A store's catalog is read by other partners only in its store's mode
// (docs/guide/sandbox.md#modes): the notifying request's mode goes with the run to the version
// it activates.

let env: TestEnvironment;
let db: Kysely<CatalogDatabase>;
let bus: BusClient;
let stop: (() => Promise<void>) | undefined;

const modes: readonly PartnerMode[] = ['live', 'test'];
const other = (mode: PartnerMode): PartnerMode => (mode === 'live' ? 'test' : 'live');
const WORKER = 'test-worker';

const reader = (mode: PartnerMode): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution',
  mode,
});
/** Ordering's caches refreshing on an activation event: no partner, every mode. */
const platform = (): RequestContext => ({ requestId: randomUUID() });

/** A run of `mode` recorded as notify does, claimed by WORKER and activated. */
async function activatedStore(mode: PartnerMode) {
  const storeId = randomUUID();
  const recorded = await insertRun(
    db,
    {
      runId: randomUUID(),
      storeId,
      partnerId: randomUUID(),
      mode,
      callbackUrl: 'https://partner.example/catalog.json',
      currency: 'USD',
    },
    10,
  );
  if (recorded.outcome !== 'queued') throw new Error('the run was not queued');
  const run = await db
    .updateTable('ingest_runs')
    .set({ status: 'processing', lease_owner: WORKER, parked_at: null })
    .where('run_id', '=', recorded.run.run_id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const document = Buffer.from(JSON.stringify({ mode }));
  const activation = await activateCatalog(db, {
    run,
    workerId: WORKER,
    eventSubject: `${env.prefix}.test.catalog-activated`,
    catalog: {
      catalogSetId: randomUUID(),
      currency: 'USD',
      document,
      etag: `"${mode}"`,
      pricesJson: '{}',
      counts: { items: 0, sections: 0, modifierGroups: 0 },
    },
  });
  if (activation.outcome !== 'activated') throw new Error('the catalog was not activated');
  return { storeId, versionId: activation.versionId, document };
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<CatalogDatabase>({
    url: env.databaseUrl,
    schema: CATALOG_SCHEMA,
    applicationName: 'test-catalog-modes',
  });
  const service = createSubjectService(
    { nc: env.nc, logger: env.logger, subjectPrefix: env.prefix, requestTimeoutMs: 5_000 },
    { name: 'catalog', version: '0.0.1' },
    catalogHandlers(db, { documentCacheBytes: 1024 * 1024 }),
  );
  await service.start();
  stop = () => service.stop();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
});

afterAll(async () => {
  await stop?.();
  await db?.destroy();
  await env?.cleanup();
});

describe.each(modes)('the catalog of a %s store', (mode) => {
  let store: Awaited<ReturnType<typeof activatedStore>>;
  beforeAll(async () => {
    store = await activatedStore(mode);
  });

  it('keeps its run’s mode', async () => {
    const version = await db
      .selectFrom('catalog_versions')
      .select('mode')
      .where('version_id', '=', store.versionId)
      .executeTakeFirstOrThrow();
    expect(version.mode).toBe(mode);
  });

  it(`is read whole by a ${mode} request`, async () => {
    const ctx = reader(mode);
    const active = await bus.request(subjects.catalog.active, { storeId: store.storeId }, ctx);
    expect(active.versionId).toBe(store.versionId);
    const described = await bus.request(subjects.catalog.document, { storeId: store.storeId }, ctx);
    expect(described.chunks).toBe(1);
    const chunk = await bus.requestRaw(
      subjects.catalog.documentChunk,
      { versionId: store.versionId, index: 0 },
      ctx,
    );
    expect(chunk.equals(store.document)).toBe(true);
  });

  it(`is CATALOGSET_NOT_FOUND to a ${other(mode)} request, its chunks too once read and cached`, async () => {
    const ctx = reader(other(mode));
    await expectAppError(
      bus.request(subjects.catalog.active, { storeId: store.storeId }, ctx),
      'CATALOGSET_NOT_FOUND',
    );
    await expectAppError(
      bus.request(subjects.catalog.document, { storeId: store.storeId }, ctx),
      'CATALOGSET_NOT_FOUND',
    );
    // The chunk was read (and cached) by the same-mode request above.
    await expectAppError(
      bus.requestRaw(subjects.catalog.documentChunk, { versionId: store.versionId, index: 0 }, ctx),
      'CATALOGSET_NOT_FOUND',
    );
  });

  it('is read by the platform’s own calls, which carry no partner', async () => {
    const active = await bus.request(
      subjects.catalog.active,
      { storeId: store.storeId },
      platform(),
    );
    expect(active.versionId).toBe(store.versionId);
    const chunk = await bus.requestRaw(
      subjects.catalog.documentChunk,
      { versionId: store.versionId, index: 0 },
      platform(),
    );
    expect(chunk.equals(store.document)).toBe(true);
  });
});
