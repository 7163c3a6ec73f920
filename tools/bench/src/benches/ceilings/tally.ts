// What the ceilings bench reports of a drive: each worker (a replica's loop) counts its
// operations, the rows they moved and how long each took, lock wait included.
import { round2 } from '../../helpers.js';
import { latencySummary } from '../../load/paced-load.js';

export interface WorkerTally {
  /** Operations finished (a claim, a relay batch, an insert). */
  ops: number;
  /** Rows those operations moved (claimed, published, inserted). */
  rows: number;
  /** Each operation's duration, ms. */
  durationsMs: number[];
  /** Tries that moved nothing: stood by (another held the lock) or found nothing to do. */
  idle: number;
}

export const emptyTally = (): WorkerTally => ({ ops: 0, rows: 0, durationsMs: [], idle: 0 });

const mean = (values: readonly number[]) =>
  values.reduce((sum, value) => sum + value, 0) / values.length;

/** One table row of a drive: totals per second, per-operation latency and each worker's share. */
export function ceilingRow(run: string, workers: readonly WorkerTally[], seconds: number) {
  const ops = workers.reduce((sum, worker) => sum + worker.ops, 0);
  const rows = workers.reduce((sum, worker) => sum + worker.rows, 0);
  const durations = workers.flatMap((worker) => worker.durationsMs);
  const latency = latencySummary(durations);
  return {
    run,
    workers: workers.length,
    'ops/s': round2(ops / seconds),
    'rows/s': round2(rows / seconds),
    'rows/op': ops === 0 ? 0 : round2(rows / ops),
    'p50 ms': latency.p50,
    'p99 ms': latency.p99,
    // One worker's operations never wait for another's: back to back, the serialized part
    // allows this many a second, however many replicas ask.
    'ceiling ops/s':
      workers.length === 1 && durations.length > 0 ? round2(1000 / mean(durations)) : '',
    'idle tries': workers.reduce((sum, worker) => sum + worker.idle, 0),
    // "100/0": the second worker stood by; "50/50": they took turns.
    'rows share %':
      rows === 0 ? '' : workers.map((worker) => Math.round((100 * worker.rows) / rows)).join('/'),
  };
}

/**
 * What a second worker bought: its rows/s as a multiple of one worker's. About 1 means the
 * work is serialized (the lock is the ceiling); about 2 means it scaled.
 */
export function scaling(one: { 'rows/s': number }, two: { 'rows/s': number }): number {
  return one['rows/s'] === 0 ? NaN : round2(two['rows/s'] / one['rows/s']);
}
