import { describe, expect, it } from 'vitest';
import { markdown, type BenchRun, type UmbrellaResult } from '../src/summary.js';

const run = (bench: string, rows: Record<string, unknown>[]): BenchRun => ({
  bench,
  replicas: 1,
  status: 'ok',
  exitCode: 0,
  signal: null,
  timedOut: false,
  seconds: 30,
  settings: {},
  log: `logs/${bench}-x1.log`,
  records: [{ kind: 'table', title: bench, rows }],
});

const peakRow = (run: string, rate: number) => ({
  run,
  'target req/s': 'max',
  'achieved req/s': rate,
  'p50 ms': 5,
  'p99 ms': 20,
  'non-2xx': 0,
});

const result = (
  baselines: UmbrellaResult['baselines'],
  stores = [peakRow('unthrottled (32 connections)', 3000)],
) =>
  ({
    command: 'npm run bench -- stores',
    full: false,
    started: '2026-01-01T00:00:00.000Z',
    finished: '2026-01-01T00:01:00.000Z',
    seconds: 60,
    machine: { cpus: 2, memoryGB: 8, os: 'Linux', node: 'v20', uncommittedChanges: false },
    loadAverage: { before: [0], after: [0] },
    interrupted: false,
    baselines,
    runs: [run('stores', stores)],
  }) satisfies UmbrellaResult;

describe('the summary', () => {
  it('gives each platform peak as a ratio of the NestJS peer, and the stores goal', () => {
    const md = markdown(
      result(
        {
          ...run('baselines', [peakRow('NestJS peer unthrottled (32 conns)', 1500)]),
          peaks: { bare: 30000, floor: 6000, nest: 1500 },
        },
        // A peer measured beside the platform is a baseline, never the platform's best peak.
        [
          peakRow('unthrottled (32 connections)', 3000),
          peakRow('NestJS peer unthrottled (32 conns)', 5000),
        ],
      ),
    );
    expect(md).toContain('the NestJS peer (the store GET');
    expect(md).toContain('**×2** the NestJS peer');
    expect(md).toContain('meets the goal of ×1.5');
    // The stores row: × floor, × bare Fastify, × NestJS peer.
    expect(md).toMatch(/\| unthrottled \(32 connections\) \|.*\| 0\.5 \| 0\.1 \| 2 \|/);
  });

  it('renders results from before the peer without its ratios', () => {
    const md = markdown(result({ ...run('baselines', []), peaks: { bare: 30000, floor: 6000 } }));
    expect(md).not.toContain('the NestJS peer (the store GET');
    expect(md).not.toContain('goal');
    expect(md).toMatch(/\| unthrottled \(32 connections\) \|.*\| 0\.5 \| 0\.1 \| {2}\|/);
  });
});
