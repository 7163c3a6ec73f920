// What a bench prints, and records for the umbrella run (`npm run bench`) to read back as JSON
// lines instead of parsing the printout.
import { appendFileSync } from 'node:fs';

export type Row = Record<string, unknown>;

/**
 * A record of a bench's results file: a table (`kind` table, memory, or limits: peak RSS
 * against the manifests' memory limits, each row with its verdict), verdicts or peaks.
 */
export type BenchRecord =
  | { kind: 'table' | 'memory' | 'limits'; title: string; rows: Row[] }
  | { kind: 'verdicts'; lines: string[] }
  | { kind: 'peaks'; peaks: Record<string, number> };

/**
 * With BENCH_RESULTS_FILE set (the umbrella run sets it), append `{ bench, ...record }` to it
 * as one JSON line.
 */
export function recordResult(record: BenchRecord): void {
  const file = process.env.BENCH_RESULTS_FILE;
  if (!file) return;
  appendFileSync(file, `${JSON.stringify({ bench: process.env.BENCH_NAME, ...record })}\n`);
}

/** Print a table; also record it. */
export function printTable(title: string, rows: Row[], kind: 'table' | 'memory' = 'table'): void {
  process.stdout.write(`\n${title}\n`);
  console.table(rows);
  recordResult({ kind, title, rows });
}

/** Tables and verdict lines, printed together at the end, or as far as they got on failure. */
export class Report {
  tables: { title: string; rows: Row[] }[] = [];
  verdicts: string[] = [];

  table(title: string, rows: Row[]): void {
    this.tables.push({ title, rows });
  }

  print(): void {
    for (const { title, rows } of this.tables) printTable(title, rows);
    if (this.verdicts.length) {
      process.stdout.write(`\n${this.verdicts.join('\n')}\n`);
      recordResult({ kind: 'verdicts', lines: this.verdicts });
    }
    this.tables = [];
    this.verdicts = [];
  }
}
