// Workers, each a replica's loop with a pool of its own, calling one serialized operation back
// to back for a while; the timing and scratch-schema plumbing the ceilings bench shares.
import { performance } from 'node:perf_hooks';
import { createDatabase, migrateToLatest, type Migration } from '@pcp/service-kit';
import { sql } from 'kysely';
import { sleep } from '../../helpers.js';
import type { BenchPlatform } from '../../platform/bench-platform.js';
import { emptyTally, type WorkerTally } from './tally.js';

/** What one call of the operation did: rows moved, and ms spent in the serialized part. */
export interface OpResult {
  rows: number;
  ms: number;
}

export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

/**
 * Run `workers` loops of `op` until `seconds` pass or `done()` says so. An operation that moved
 * no row (stood by, found nothing) is counted as idle and followed by `idleMs`: the next nudge
 * or poll, not a spin on the lock.
 */
export async function drive(options: {
  workers: number;
  seconds: number;
  op: (worker: number) => Promise<OpResult>;
  done?: () => boolean;
  idleMs?: number;
}): Promise<{ tallies: WorkerTally[]; seconds: number }> {
  const tallies = Array.from({ length: options.workers }, emptyTally);
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  const over = () => performance.now() >= deadline || (options.done?.() ?? false);
  await Promise.all(
    tallies.map(async (tally, worker) => {
      while (!over()) {
        const { rows, ms } = await options.op(worker);
        if (rows === 0) {
          tally.idle += 1;
          await sleep(options.idleMs ?? 2);
          continue;
        }
        tally.ops += 1;
        tally.rows += rows;
        tally.durationsMs.push(ms);
      }
    }),
  );
  return { tallies, seconds: (performance.now() - started) / 1000 };
}

/**
 * A scratch schema of the bench database, brought to a service's latest migration, and one
 * pool on it per worker (each a replica of its own). `close()` ends the pools and drops it.
 */
export async function scratchSchema<DB>(
  platform: BenchPlatform,
  name: string,
  migrations: Record<string, Migration>,
  options: { workers: number; connections: number },
) {
  const open = () =>
    createDatabase<DB>({
      url: platform.databaseUrl.toString(),
      schema: name,
      maxConnections: options.connections,
      applicationName: `bench-ceilings-${name}`,
    });
  const admin = open();
  await migrateToLatest(admin, name, migrations);
  const pools = Array.from({ length: options.workers }, open);
  return {
    admin,
    pools,
    async close() {
      // Kysely ends a pool only once a query of its own has opened it; the prepared
      // statements (runPrepared) go to the pg pool directly.
      await Promise.all(
        pools.map(async (pool) => {
          await sql`select 1`.execute(pool);
          await pool.destroy();
        }),
      );
      await sql`drop schema ${sql.id(name)} cascade`.execute(admin);
      await admin.destroy();
    },
  };
}
