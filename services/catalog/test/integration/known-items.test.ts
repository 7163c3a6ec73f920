import { subjects } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  createSubjectService,
  type AppError,
} from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { CATALOG_SCHEMA, type CatalogDatabase } from '../../src/app.js';
import { knownItemsHandlers } from '../../src/handlers/known-items.handlers.js';

let env: TestEnvironment;
let db: Kysely<CatalogDatabase>;
let stop: (() => Promise<void>) | undefined;
const storeId = randomUUID();
const catalogSetId = randomUUID();
const activeVersionId = randomUUID();
/** A large catalog: the handler must not parse it in the service. */
const ITEMS = 100_000;
let itemIds: string[] = [];

async function insertVersion(versionId: string, ids: readonly string[]) {
  await db
    .insertInto('catalog_versions')
    .values({
      version_id: versionId,
      store_id: storeId,
      run_id: randomUUID(),
      sequence: 1,
      catalog_set_id: catalogSetId,
      currency: 'USD',
      etag: '"x"',
      document_bytes: 2,
      chunk_count: 1,
      prices: JSON.stringify(Object.fromEntries(ids.map((id) => [id, 100]))),
    })
    .execute();
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<CatalogDatabase>({
    url: env.databaseUrl,
    schema: CATALOG_SCHEMA,
    applicationName: 'test-known-items',
  });
  itemIds = Array.from({ length: ITEMS }, () => randomUUID());
  await insertVersion(activeVersionId, itemIds);
  // An older version of the store that knew other items: only the active one counts.
  await insertVersion(randomUUID(), [randomUUID()]);
  await sql`insert into active_catalogs (store_id, version_id, sequence, version, activated_at)
    values (${storeId}, ${activeVersionId}, 1, 1, now())`.execute(db);
  const service = createSubjectService(
    { nc: env.nc, logger: env.logger, subjectPrefix: env.prefix, requestTimeoutMs: 5_000 },
    { name: 'catalog', version: '0.0.1' },
    knownItemsHandlers(db),
  );
  await service.start();
  stop = () => service.stop();
});

afterAll(async () => {
  await stop?.();
  await db?.destroy();
  await env?.cleanup();
});

const bus = () =>
  createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
const known = (store: string, ids: string[]) =>
  bus().request(
    subjects.catalog.knownItems,
    { storeId: store, itemIds: ids },
    { requestId: randomUUID() },
  );

describe('catalog.v1.items.known', () => {
  it('names the ids the active catalog lacks, in request order, with its item count', async () => {
    const strangers = [randomUUID(), randomUUID()];
    const asked = [itemIds[0]!, strangers[0]!, itemIds[ITEMS - 1]!, strangers[1]!];
    expect(await known(storeId, asked)).toEqual({
      catalogSetId,
      versionId: activeVersionId,
      itemCount: ITEMS,
      unknownItemIds: strangers,
    });
  });

  it('answers 1,000 ids against 100,000 items quickly', async () => {
    const asked = [...itemIds.slice(0, 999), randomUUID()];
    const started = performance.now();
    const answer = await known(storeId, asked);
    const elapsedMs = performance.now() - started;
    expect(answer.unknownItemIds).toEqual([asked[999]]);
    expect(elapsedMs).toBeLessThan(1_000);
  });

  it('answers CATALOGSET_NOT_FOUND for a store without an active catalog, and refuses 1,001 ids', async () => {
    await expect(known(randomUUID(), [randomUUID()])).rejects.toMatchObject({
      code: 'CATALOGSET_NOT_FOUND',
    });
    const refused = await known(
      storeId,
      Array.from({ length: 1_001 }, () => randomUUID()),
    ).catch((error: AppError) => error);
    expect(refused).toMatchObject({ code: 'REQUEST_INVALID' });
  });
});
