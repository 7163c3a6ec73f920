import { describe, expect, it } from 'vitest';
import { ceilingRow, emptyTally, scaling } from '../src/benches/ceilings/tally.js';

const tally = (ops: number, rows: number, durationsMs: number[], idle = 0) => ({
  ...emptyTally(),
  ops,
  rows,
  durationsMs,
  idle,
});

describe("the ceilings bench's tally", () => {
  it('gives one worker its back-to-back ceiling from the mean time of an operation', () => {
    const row = ceilingRow('claim', [tally(4, 200, [4, 4, 6, 6])], 2);
    expect(row).toMatchObject({
      workers: 1,
      'ops/s': 2,
      'rows/s': 100,
      'rows/op': 50,
      'ceiling ops/s': 200,
      'rows share %': '100',
      'idle tries': 0,
    });
  });

  it('gives no ceiling when workers waited for each other, and shows who did the work', () => {
    const row = ceilingRow('relay', [tally(3, 300, [10, 10, 10]), tally(0, 0, [], 7)], 1);
    expect(row['ceiling ops/s']).toBe('');
    expect(row['rows share %']).toBe('100/0');
    expect(row['idle tries']).toBe(7);
  });

  it('reports a drive that moved nothing without dividing by zero', () => {
    const row = ceilingRow('empty', [tally(0, 0, [], 3)], 1);
    expect(row).toMatchObject({
      'rows/s': 0,
      'rows/op': 0,
      'rows share %': '',
      'ceiling ops/s': '',
    });
  });

  it('says what a second worker bought', () => {
    expect(scaling({ 'rows/s': 1000 }, { 'rows/s': 1040 })).toBe(1.04);
    expect(scaling({ 'rows/s': 1000 }, { 'rows/s': 1900 })).toBe(1.9);
    expect(scaling({ 'rows/s': 0 }, { 'rows/s': 5 })).toBeNaN();
  });
});
