import { sql, type Kysely } from 'kysely';

/** Bytes per stored chunk of a document: well below NATS's 1 MB default max payload. */
const CHUNK_BYTES = 512 * 1024;

/**
 * Documents are stored in chunks, so a reader (the gateway streaming a CatalogSet, or
 * ordering compiling one) fetches one chunk at a time, each an indexed read of its own,
 * and no process holds a whole 50 MB document to serve a slice of it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('catalog_document_chunks')
    .addColumn('version_id', 'uuid', (col) =>
      col.notNull().references('catalog_versions.version_id').onDelete('cascade'),
    )
    .addColumn('chunk_index', 'integer', (col) => col.notNull())
    .addColumn('bytes', 'bytea', (col) => col.notNull())
    .addPrimaryKeyConstraint('catalog_document_chunks_pkey', ['version_id', 'chunk_index'])
    .execute();
  await db.schema
    .alterTable('catalog_versions')
    .addColumn('document_bytes', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('chunk_count', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await sql`
    insert into catalog_document_chunks (version_id, chunk_index, bytes)
    select v.version_id, part.index,
           substring(convert_to(v.document, 'UTF8') from part.index * ${sql.lit(CHUNK_BYTES)} + 1
                     for ${sql.lit(CHUNK_BYTES)})
    from catalog_versions v,
         generate_series(0, greatest(0, (octet_length(v.document) - 1) / ${sql.lit(CHUNK_BYTES)}))
           as part(index)
  `.execute(db);
  await sql`
    update catalog_versions
    set document_bytes = octet_length(document),
        chunk_count = greatest(1, (octet_length(document) + ${sql.lit(CHUNK_BYTES)} - 1) / ${sql.lit(CHUNK_BYTES)})
  `.execute(db);
  await db.schema.alterTable('catalog_versions').dropColumn('document').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('catalog_versions').addColumn('document', 'text').execute();
  await sql`
    update catalog_versions v
    set document = (select convert_from(string_agg(c.bytes, ''::bytea order by c.chunk_index), 'UTF8')
                    from catalog_document_chunks c where c.version_id = v.version_id)
  `.execute(db);
  await sql`alter table catalog_versions alter column document set not null`.execute(db);
  await db.schema
    .alterTable('catalog_versions')
    .dropColumn('document_bytes')
    .dropColumn('chunk_count')
    .execute();
  await db.schema.dropTable('catalog_document_chunks').execute();
}
