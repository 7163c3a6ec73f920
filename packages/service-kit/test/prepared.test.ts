import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createDatabase, preparedTransaction, runPrepared } from '../src/database.js';

interface TestDatabase {
  notes: { note_id: number; body: string };
}

let env: TestEnvironment;
let db: Kysely<TestDatabase>;
const schema = `prepared_${Date.now().toString(36)}`;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<TestDatabase>({ url: env.databaseUrl, schema, applicationName: 'test' });
  await db.schema.createSchema(schema).execute();
  await db.schema
    .createTable('notes')
    .addColumn('note_id', 'integer', (col) => col.primaryKey())
    .addColumn('body', 'text', (col) => col.notNull())
    .execute();
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

const unknownDb = () => db as unknown as Kysely<unknown>;
const insertNote = (id: number, body: string) =>
  db.insertInto('notes').values({ note_id: id, body }).returningAll().compile();

describe('prepared statements', () => {
  it('run a compiled statement again and again by its name, with its own values each time', async () => {
    for (let id = 1; id <= 8; id++) {
      const rows = await runPrepared<{ note_id: number; body: string }>(
        unknownDb(),
        insertNote(id, `note ${id}`),
      );
      expect(rows).toEqual([{ note_id: id, body: `note ${id}` }]);
    }
    // The connection keeps the statement under its derived name, planned once for reuse.
    const listed = await preparedTransaction(unknownDb(), async (run) => {
      await run(insertNote(9, 'note 9'));
      return run<{ name: string; statement: string }>(
        sql`select name, statement from pg_prepared_statements`.compile(db),
      );
    });
    const insert = listed.find((row) => row.statement.startsWith('insert into "notes"'));
    expect(insert?.name).toMatch(/^pcp_[0-9a-f]{20}$/);
  });

  it('commit a transaction, and roll it back when its work throws', async () => {
    await preparedTransaction(unknownDb(), async (run) => {
      await run(insertNote(100, 'kept'));
      await run(insertNote(101, 'kept too'));
    });
    await expect(
      preparedTransaction(unknownDb(), async (run) => {
        await run(insertNote(200, 'rolled back'));
        await run(insertNote(100, 'a duplicate key'));
      }),
    ).rejects.toThrow(/duplicate key/);
    const kept = await db
      .selectFrom('notes')
      .select('note_id')
      .where('note_id', '>=', 100)
      .execute();
    expect(kept.map((row) => row.note_id).sort()).toEqual([100, 101]);
  });

  it('refuse a Kysely instance createDatabase did not make', async () => {
    await expect(runPrepared({} as Kysely<unknown>, insertNote(1, 'x'))).rejects.toThrow(
      /createDatabase/,
    );
  });
});
