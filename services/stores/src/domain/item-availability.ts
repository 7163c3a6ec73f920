import type { ItemAvailabilityChange, ItemAvailabilityOverride } from '@pcp/contracts';
import { DateTime } from 'luxon';

/** How far ahead an override may end: a year and a leap day. */
export const MAX_OVERRIDE_DAYS_AHEAD = 366;

export interface ChangeProblem {
  readonly pointer: string;
  readonly message: string;
}

/**
 * Why a set of changes cannot apply, one problem per bad entry (at most one per entry, so the
 * list is bounded by the request's 1,000): an item named twice, an `until` already past or
 * more than 366 days ahead, an `until` on a clear.
 */
export function changeProblems(
  changes: readonly ItemAvailabilityChange[],
  now: Date,
): ChangeProblem[] {
  const seen = new Set<string>();
  const latest = now.getTime() + MAX_OVERRIDE_DAYS_AHEAD * 86_400_000;
  const problems: ChangeProblem[] = [];
  changes.forEach((change, index) => {
    const at = `/items/${index}`;
    if (seen.has(change.itemId)) {
      problems.push({ pointer: `${at}/itemId`, message: 'Each item once per request' });
      return;
    }
    seen.add(change.itemId);
    if (change.until === undefined || change.until === null) return;
    if (change.available) {
      problems.push({ pointer: `${at}/until`, message: 'until applies to available: false only' });
      return;
    }
    const until = new Date(change.until).getTime();
    if (until <= now.getTime()) {
      problems.push({ pointer: `${at}/until`, message: 'until must be in the future' });
    } else if (until > latest) {
      problems.push({
        pointer: `${at}/until`,
        message: `until must be at most ${MAX_OVERRIDE_DAYS_AHEAD} days ahead`,
      });
    }
  });
  return problems;
}

/**
 * The first instant of the store's next local day: a denied item is unavailable until then
 * (docs/guide/stores.md#item-availability). Luxon resolves the zone's rules, so a day of 23 or
 * 25 hours (a DST change) ends at its real local midnight.
 */
export function endOfLocalDay(now: Date, timezone: string): Date {
  return DateTime.fromJSDate(now, { zone: timezone }).plus({ days: 1 }).startOf('day').toJSDate();
}

/** An override as the API shows it. */
export function toOverride(row: { item_id: string; until: Date | null }): ItemAvailabilityOverride {
  return { itemId: row.item_id, available: false, until: row.until?.toISOString() ?? null };
}
