import { sql, type Kysely } from 'kysely';

/**
 * A card's declines are counted per mode (subject `mode/cardHash`), so test-mode declines never
 * hold back the same card live. The declines counted so far keep counting, as live ones.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update velocity_events set subject = 'live/' || subject
    where scope = 'decline' and subject not like '%/%'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from velocity_events where scope = 'decline' and subject like 'test/%'`.execute(
    db,
  );
  await sql`update velocity_events set subject = substr(subject, length('live/') + 1)
    where scope = 'decline' and subject like 'live/%'`.execute(db);
}
