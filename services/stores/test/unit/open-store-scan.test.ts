import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  nextBatchSize,
  SCAN_BATCH_MAX,
  SCAN_BATCH_MIN,
  scanOpenCandidates,
  type ScanPosition,
} from '../../src/domain/open-store-scan.js';

type Candidate = ScanPosition & { open: boolean };

/** Candidates nearest first; every third shares its predecessor's distance (a tie). */
const candidatesOf = (open: boolean[]): Candidate[] =>
  open.map((isOpen, index) => ({
    distance_meters: index - (index % 3 === 2 ? 1 : 0),
    store_id: `store-${String(index).padStart(6, '0')}`,
    open: isOpen,
  }));

const isAfter = (candidate: ScanPosition, after: ScanPosition) =>
  candidate.distance_meters > after.distance_meters ||
  (candidate.distance_meters === after.distance_meters && candidate.store_id > after.store_id);

/** A scan over `candidates` as the repository would serve them, recording each batch asked. */
function scanOf(candidates: Candidate[], page: { offset: number; limit: number; scanCap: number }) {
  const batches: number[] = [];
  const result = scanOpenCandidates({
    ...page,
    isOpen: (candidate: Candidate) => candidate.open,
    nextBatch: (after, size) => {
      batches.push(size);
      const rest = after ? candidates.filter((candidate) => isAfter(candidate, after)) : candidates;
      return Promise.resolve(rest.slice(0, size));
    },
  });
  return { result, batches };
}

describe('nextBatchSize', () => {
  it('first expects every store open, with some slack, and at least the smallest batch', () => {
    expect(nextBatchSize({ stillWanted: 21, examined: 0, open: 0, scanLeft: 20_000 })).toBe(
      SCAN_BATCH_MIN,
    );
    expect(nextBatchSize({ stillWanted: 1_001, examined: 0, open: 0, scanLeft: 20_000 })).toBe(
      1_252,
    );
  });

  it('then scales by the open share seen, never above the largest batch or the scan left', () => {
    // One in ten open so far: 50 more open stores need about 500 rows.
    expect(nextBatchSize({ stillWanted: 50, examined: 1_000, open: 100, scanLeft: 9_000 })).toBe(
      625,
    );
    expect(nextBatchSize({ stillWanted: 50, examined: 100, open: 0, scanLeft: 9_000 })).toBe(
      SCAN_BATCH_MAX,
    );
    expect(nextBatchSize({ stillWanted: 10_101, examined: 0, open: 0, scanLeft: 20_000 })).toBe(
      SCAN_BATCH_MAX,
    );
    expect(nextBatchSize({ stillWanted: 50, examined: 100, open: 0, scanLeft: 30 })).toBe(30);
  });
});

describe('scanOpenCandidates', () => {
  it('pages the open candidates among the first scanCap, as filtering all of them would', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Open shares from none to all, over up to 3,000 candidates.
        fc
          .tuple(
            fc.integer({ min: 0, max: 10 }),
            fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 3_000, size: 'max' }),
          )
          .map(([tenths, digits]) => digits.map((digit) => digit < tenths)),
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 3_000 }),
        async (open, offset, limit, scanCap) => {
          const candidates = candidatesOf(open);
          const { result, batches } = scanOf(candidates, { offset, limit, scanCap });
          const { page, openCount, hasMore } = await result;

          const openWithinCap = candidates.slice(0, scanCap).filter((candidate) => candidate.open);
          expect(page).toEqual(openWithinCap.slice(offset, offset + limit));
          expect(hasMore).toBe(openWithinCap.length > offset + limit);
          if (hasMore) {
            expect(openCount).toBeGreaterThan(offset + limit);
            expect(openCount).toBeLessThanOrEqual(openWithinCap.length);
          } else {
            expect(openCount).toBe(openWithinCap.length);
          }
          expect(Math.max(0, ...batches)).toBeLessThanOrEqual(SCAN_BATCH_MAX);
          expect(batches.reduce((sum, size) => sum + size, 0)).toBeLessThanOrEqual(scanCap);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('stops at the first open candidate after the page', async () => {
    const candidates = candidatesOf(Array.from({ length: 10_000 }, () => true));
    const { result, batches } = scanOf(candidates, { offset: 0, limit: 20, scanCap: 10_000 });
    expect(await result).toMatchObject({ openCount: SCAN_BATCH_MIN, hasMore: true });
    expect(batches).toEqual([SCAN_BATCH_MIN]);
  });
});
