/** The wall-clock fields of `date` in `timeZone`. */
function zonedFields(date: Date, timeZone: string) {
  const fields = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
      .formatToParts(date)
      .filter((part) => part.type !== 'literal')
      .map((part) => [part.type, Number(part.value)]),
  ) as Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', number>;
  return fields;
}

/** How far `timeZone`'s wall clock is ahead of UTC at `date`, in milliseconds. */
function offsetAt(date: Date, timeZone: string): number {
  const f = zonedFields(date, timeZone);
  const wall = Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second);
  return wall - Math.floor(date.getTime() / 1000) * 1000;
}

/**
 * The next local midnight in `timeZone` after `now`: "until tonight" for an item that ran
 * out or a pause for the rest of the day (the platform's own rule for denied items).
 */
export function nextLocalMidnight(timeZone: string, now = new Date()): Date {
  const today = zonedFields(now, timeZone);
  const midnightWall = Date.UTC(today.year, today.month - 1, today.day + 1);
  // The wall time less the offset, corrected once for an offset change (daylight saving).
  let instant = midnightWall - offsetAt(new Date(midnightWall), timeZone);
  instant = midnightWall - offsetAt(new Date(instant), timeZone);
  return new Date(instant);
}

/** Today's date (YYYY-MM-DD) in `timeZone`. */
export function localDate(timeZone: string, now = new Date()): string {
  const f = zonedFields(now, timeZone);
  return `${f.year}-${String(f.month).padStart(2, '0')}-${String(f.day).padStart(2, '0')}`;
}
