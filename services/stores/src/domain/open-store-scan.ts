/** A candidate's place in discovery's order: nearest first, ties by id (the keyset). */
export interface ScanPosition {
  distance_meters: number;
  store_id: string;
}

/** Rows of one batch: a bound on each statement's result, whatever the request. */
export const SCAN_BATCH_MAX = 5_000;
/** Rows of the smallest batch: small ones cost a round trip each for few stores. */
export const SCAN_BATCH_MIN = 100;
/** Ask a little more than the open share seen so far predicts, to save a round trip. */
const BATCH_SLACK = 1.25;

/**
 * Rows of the next batch: enough, at the open share seen so far, for the open stores still
 * wanted (the first batch expects every store open; a scan that has found none open yet takes
 * the largest batch), within the rows the scan has left.
 */
export function nextBatchSize(progress: {
  stillWanted: number;
  examined: number;
  open: number;
  scanLeft: number;
}): number {
  const { stillWanted, examined, open, scanLeft } = progress;
  const expected =
    examined === 0 ? stillWanted : open === 0 ? SCAN_BATCH_MAX : (stillWanted * examined) / open;
  const size = Math.max(SCAN_BATCH_MIN, Math.ceil(expected * BATCH_SLACK));
  return Math.min(scanLeft, SCAN_BATCH_MAX, size);
}

export interface OpenStoresPage<C> {
  /** The open candidates at `offset`..`offset + limit` of the open ones, nearest first. */
  page: C[];
  /**
   * Open candidates among those examined: exact when the scan ran out of candidates or
   * reached its cap before `offset + limit + 1` open ones; otherwise a lower bound.
   */
  openCount: number;
  /** Whether an open candidate beyond the page was found (so the next page is not empty). */
  hasMore: boolean;
}

/**
 * One page of the open candidates, walking them nearest first in batches (`nextBatch`
 * continues after a position) until the first open one after the page is found, the
 * candidates run out, or `scanCap` of them were examined. Only the page is kept, so memory is
 * one batch and one page whatever the offset.
 */
export async function scanOpenCandidates<C extends ScanPosition>(scan: {
  offset: number;
  limit: number;
  scanCap: number;
  isOpen: (candidate: C) => boolean;
  nextBatch: (after: ScanPosition | undefined, size: number) => Promise<C[]>;
}): Promise<OpenStoresPage<C>> {
  const wanted = scan.offset + scan.limit + 1;
  const page: C[] = [];
  let open = 0;
  let examined = 0;
  let after: ScanPosition | undefined;
  while (open < wanted && examined < scan.scanCap) {
    const size = nextBatchSize({
      stillWanted: wanted - open,
      examined,
      open,
      scanLeft: scan.scanCap - examined,
    });
    const batch = await scan.nextBatch(after, size);
    for (const candidate of batch) {
      if (!scan.isOpen(candidate)) continue;
      if (open >= scan.offset && page.length < scan.limit) page.push(candidate);
      open += 1;
    }
    examined += batch.length;
    after = batch.at(-1);
    if (batch.length < size) break; // no candidates left
  }
  return { page, openCount: open, hasMore: open > scan.offset + page.length };
}
