import { describe, expect, it } from 'vitest';
import { areaOf, summarizeProfile, type CpuProfile } from '../src/profile-summary.js';

const frame = (functionName: string, url = '', lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
});

describe('areaOf', () => {
  it('names a package, a service feature folder, Node internals and V8 pseudo-frames', () => {
    expect(areaOf(frame('parse', 'file:///app/node_modules/pg-protocol/dist/parser.js'))).toBe(
      'pg-protocol',
    );
    expect(
      areaOf(frame('x', 'file:///app/node_modules/@opentelemetry/api/build/src/index.js')),
    ).toBe('@opentelemetry/api');
    expect(areaOf(frame('price', 'file:///app/services/ordering/src/cart/pricing.ts'))).toBe(
      'ordering/cart',
    );
    expect(areaOf(frame('main', 'file:///app/services/ordering/dist/main.js'))).toBe('ordering');
    expect(areaOf(frame('writev', 'node:internal/stream_base_commons'))).toBe('node internals');
    expect(areaOf(frame('(garbage collector)'))).toBe('(garbage collector)');
    expect(areaOf(frame('writeUtf8String'))).toBe('native');
  });
});

describe('summarizeProfile', () => {
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: frame('(root)') },
      { id: 2, callFrame: frame('(idle)') },
      {
        id: 3,
        callFrame: frame('priceCart', 'file:///app/services/ordering/src/cart/pricing.ts', 9),
      },
      { id: 4, callFrame: frame('parse', 'file:///app/node_modules/zod/v4/core/parse.js') },
      { id: 5, callFrame: frame('(garbage collector)') },
    ],
    // Self time is the delta leading to each sample: 6 ms pricing, 3 ms zod, 1 ms GC, 90 idle.
    samples: [3, 4, 2, 3, 5],
    timeDeltas: [2_000, 3_000, 90_000, 4_000, 1_000],
  };

  it('shares the busy time (idle left out) by area and by function, largest first', () => {
    const summary = summarizeProfile(profile);
    expect(summary.process).toBe('ordering');
    expect(summary.busyMs).toBe(10);
    expect(summary.areas).toEqual([
      { area: 'ordering/cart', ms: 6, share: 60 },
      { area: 'zod', ms: 3, share: 30 },
      { area: '(garbage collector)', ms: 1, share: 10 },
    ]);
    expect(summary.functions[0]).toEqual({
      fn: 'priceCart pricing.ts:10',
      area: 'ordering/cart',
      ms: 6,
      share: 60,
    });
  });

  it('keeps only the top entries asked for', () => {
    const summary = summarizeProfile(profile, 1);
    expect(summary.areas).toHaveLength(1);
    expect(summary.functions).toHaveLength(1);
  });
});
