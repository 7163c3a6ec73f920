import type { SetStoreStatusInput } from '@pcp/contracts';
import type { StoreRow } from '../db/store.table.js';

export type StatusColumns = Pick<StoreRow, 'status' | 'pause_reason' | 'paused_at' | 'resume_at'>;

/**
 * The columns a status change sets, or a reason to refuse it. A `resumeAt` must lie in the
 * future: a pause that is already over would be a no-op the partner did not mean.
 */
export function statusChangeColumns(
  change: SetStoreStatusInput,
  now: Date,
): { ok: true; columns: StatusColumns } | { ok: false; pointer: string; message: string } {
  if (change.status === 'online') {
    return {
      ok: true,
      columns: { status: 'online', pause_reason: null, paused_at: null, resume_at: null },
    };
  }
  if (change.status === 'busy') {
    return { ok: false, pointer: '/status', message: 'busy is being built (issue 29)' };
  }
  const resumeAt = change.resumeAt ? new Date(change.resumeAt) : null;
  if (resumeAt && resumeAt.getTime() <= now.getTime()) {
    return { ok: false, pointer: '/resumeAt', message: 'resumeAt must be in the future' };
  }
  return {
    ok: true,
    columns: { status: 'paused', pause_reason: change.reason, paused_at: now, resume_at: resumeAt },
  };
}

/** The reason a platform pause gives (docs/guide/stores.md#store-status). */
export const PLATFORM_PAUSE_REASON = 'operational_issues';

/**
 * The columns that pause the store until its partner resumes it (no resumeAt), after its
 * orders timed out in a row; undefined when it is already paused that way.
 */
export function platformPauseColumns(row: StoreRow, now: Date): StatusColumns | undefined {
  const pausedIndefinitely =
    row.status === 'paused' && row.resume_at === null && row.pause_reason === PLATFORM_PAUSE_REASON;
  if (pausedIndefinitely) return undefined;
  return { status: 'paused', pause_reason: PLATFORM_PAUSE_REASON, paused_at: now, resume_at: null };
}
