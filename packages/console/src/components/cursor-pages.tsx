import { useState } from 'preact/hooks';

/**
 * Where a list read page by page with the API's opaque cursors is: the cursors of the pages
 * before this one (the newest page has none), so Newer goes back without a cursor of its own.
 */
export function useCursorPages() {
  const [cursors, setCursors] = useState<readonly string[]>([]);
  return {
    /** The cursor to read this page with; undefined for the newest page. */
    cursor: cursors.at(-1),
    firstPage: cursors.length === 0,
    pageNumber: cursors.length + 1,
    /** Back to the newest page (a filter changed). */
    reset: () => setCursors([]),
    newer: () => setCursors((current) => current.slice(0, -1)),
    older: (nextCursor: string) => setCursors((current) => [...current, nextCursor]),
  };
}

export type CursorPages = ReturnType<typeof useCursorPages>;

/** Newer and Older buttons under a list, when it has more than one page. */
export function CursorPager({
  pages,
  nextCursor,
}: {
  pages: CursorPages;
  nextCursor: string | null | undefined;
}) {
  if (pages.firstPage && !nextCursor) return null;
  return (
    <div class="pager">
      <button
        type="button"
        class="button secondary"
        disabled={pages.firstPage}
        onClick={pages.newer}
      >
        Newer
      </button>
      <span class="muted">Page {pages.pageNumber}</span>
      <button
        type="button"
        class="button secondary"
        disabled={!nextCursor}
        onClick={() => nextCursor && pages.older(nextCursor)}
      >
        Older
      </button>
    </div>
  );
}
