import { subjects } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  createSubjectService,
  migrateToLatest,
} from '@pcp/service-kit';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { CATALOG_SCHEMA, catalogMigrations, type CatalogDatabase } from '../../src/app.js';
import { DOCUMENT_CHUNK_BYTES } from '../../src/db/catalog.repository.js';
import { catalogHandlers } from '../../src/handlers/catalog.handlers.js';
import { sql, type Kysely } from 'kysely';

let env: TestEnvironment;
let db: Kysely<CatalogDatabase>;
/** Chunk reads that reached Postgres. */
let chunkQueries = 0;
const versionId = randomUUID();
const document = randomBytes(3 * DOCUMENT_CHUNK_BYTES);

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<CatalogDatabase>({
    url: env.databaseUrl,
    schema: CATALOG_SCHEMA,
    applicationName: 'test-chunks',
  }).withPlugin({
    transformQuery(args) {
      if (JSON.stringify(args.node).includes('catalog_document_chunks')) chunkQueries++;
      return args.node;
    },
    transformResult: (args) => Promise.resolve(args.result),
  });
  await db
    .insertInto('catalog_versions')
    .values({
      version_id: versionId,
      store_id: randomUUID(),
      run_id: randomUUID(),
      sequence: 1,
      catalog_set_id: randomUUID(),
      currency: 'USD',
      etag: '"x"',
      document_bytes: document.length,
      chunk_count: 3,
      prices: '{}',
    })
    .execute();
  await db
    .insertInto('catalog_document_chunks')
    .values(
      [0, 1, 2].map((index) => ({
        version_id: versionId,
        chunk_index: index,
        bytes: document.subarray(index * DOCUMENT_CHUNK_BYTES, (index + 1) * DOCUMENT_CHUNK_BYTES),
      })),
    )
    .execute();
  // Room for one and a half chunks.
  await createSubjectService(
    { nc: env.nc, logger: env.logger, subjectPrefix: env.prefix, requestTimeoutMs: 5_000 },
    { name: 'catalog', version: '0.0.1' },
    catalogHandlers(db, { documentCacheBytes: DOCUMENT_CHUNK_BYTES * 1.5 }),
  ).start();
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

describe('document chunks', () => {
  const bus = () =>
    createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  const chunk = (index: number) =>
    bus().requestRaw(
      subjects.catalog.documentChunk,
      { versionId, index },
      { requestId: randomUUID() },
    );

  it('serves each chunk as stored, from an LRU cache bounded by bytes', async () => {
    const before = chunkQueries;
    expect((await chunk(0)).equals(document.subarray(0, DOCUMENT_CHUNK_BYTES))).toBe(true);
    await chunk(0);
    expect(chunkQueries - before).toBe(1); // the second read came from memory
    await chunk(1); // the budget holds one chunk: chunk 0 is evicted
    await chunk(0);
    expect(chunkQueries - before).toBe(3);
    const all = Buffer.concat([await chunk(0), await chunk(1), await chunk(2)]);
    expect(all.equals(document)).toBe(true);
  });

  it('answers CATALOGSET_NOT_FOUND for a chunk of a pruned version', async () => {
    await expect(
      bus().requestRaw(
        subjects.catalog.documentChunk,
        { versionId: randomUUID(), index: 0 },
        { requestId: randomUUID() },
      ),
    ).rejects.toMatchObject({ code: 'CATALOGSET_NOT_FOUND' });
  });
});

describe('the migration to chunked documents', () => {
  it('moves every stored document into chunks that read back byte for byte', async () => {
    const schema = `catalog_upgrade_${randomBytes(3).toString('hex')}`;
    const upgrading = createDatabase<CatalogDatabase>({
      url: env.databaseUrl,
      schema,
      applicationName: 'test-upgrade',
    });
    try {
      const [before, after] = [
        Object.fromEntries(Object.entries(catalogMigrations).slice(0, 2)),
        catalogMigrations,
      ];
      await migrateToLatest(upgrading, schema, before);
      // Multi-byte characters across the chunk boundary, and a document of one chunk.
      const large = JSON.stringify({ text: 'é€'.repeat(DOCUMENT_CHUNK_BYTES / 2) });
      const small = '{"small":true}';
      const ids = [randomUUID(), randomUUID()];
      for (const [index, text] of [large, small].entries()) {
        await sql`insert into catalog_versions
            (version_id, store_id, run_id, sequence, catalog_set_id, currency, etag, document, prices)
          values (${ids[index]}, ${randomUUID()}, ${randomUUID()}, ${index}, ${randomUUID()}, 'USD',
            '"e"', ${text}, '{}')`.execute(upgrading);
      }
      await migrateToLatest(upgrading, schema, after);

      for (const [index, text] of [large, small].entries()) {
        const version = await upgrading
          .selectFrom('catalog_versions')
          .select(['document_bytes', 'chunk_count'])
          .where('version_id', '=', ids[index]!)
          .executeTakeFirstOrThrow();
        const chunks = await upgrading
          .selectFrom('catalog_document_chunks')
          .select('bytes')
          .where('version_id', '=', ids[index]!)
          .orderBy('chunk_index')
          .execute();
        const bytes = Buffer.from(text);
        expect(version.document_bytes).toBe(bytes.length);
        expect(chunks).toHaveLength(version.chunk_count);
        expect(Buffer.concat(chunks.map((chunk) => chunk.bytes)).equals(bytes)).toBe(true);
      }
      expect(
        (
          await upgrading
            .selectFrom('catalog_versions')
            .select('chunk_count')
            .where('version_id', '=', ids[0]!)
            .executeTakeFirstOrThrow()
        ).chunk_count,
      ).toBeGreaterThan(1);
    } finally {
      await sql`drop schema ${sql.id(schema)} cascade`.execute(upgrading);
      await upgrading.destroy();
    }
  });
});
