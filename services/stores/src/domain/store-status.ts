import type { SetStoreStatusInput } from '@pcp/contracts';
import type { StoreRow } from '../db/store.table.js';

export type StatusColumns = Pick<
  StoreRow,
  'status' | 'pause_reason' | 'paused_at' | 'resume_at' | 'extra_prep_minutes' | 'paused_by'
>;

/**
 * The columns a status change sets, or a reason to refuse it. A `resumeAt` must lie in the
 * future: a pause or busy spell that is already over would be a no-op the partner did not
 * mean. A partner's change replaces any status, a platform pause included
 * (docs/guide/stores.md#busy).
 */
export function statusChangeColumns(
  change: SetStoreStatusInput,
  now: Date,
): { ok: true; columns: StatusColumns } | { ok: false; pointer: string; message: string } {
  if (change.status === 'online') {
    return {
      ok: true,
      columns: {
        status: 'online',
        pause_reason: null,
        paused_at: null,
        resume_at: null,
        extra_prep_minutes: null,
        paused_by: null,
      },
    };
  }
  const resumeAt = change.resumeAt ? new Date(change.resumeAt) : null;
  if (resumeAt && resumeAt.getTime() <= now.getTime()) {
    return { ok: false, pointer: '/resumeAt', message: 'resumeAt must be in the future' };
  }
  if (change.status === 'busy') {
    return {
      ok: true,
      columns: {
        status: 'busy',
        pause_reason: null,
        paused_at: now,
        resume_at: resumeAt,
        extra_prep_minutes: change.extraPrepMinutes,
        paused_by: null,
      },
    };
  }
  return {
    ok: true,
    columns: {
      status: 'paused',
      pause_reason: change.reason,
      paused_at: now,
      resume_at: resumeAt,
      extra_prep_minutes: null,
      paused_by: 'partner',
    },
  };
}

/** The reason a platform pause gives (docs/guide/stores.md#store-status). */
export const PLATFORM_PAUSE_REASON = 'operational_issues';

/**
 * The columns that pause the store until its partner resumes it (no resumeAt), after its
 * orders timed out in a row; undefined when it is already paused that way.
 */
export function platformPauseColumns(row: StoreRow, now: Date): StatusColumns | undefined {
  if (row.status === 'paused' && row.paused_by === 'platform' && row.resume_at === null) {
    return undefined;
  }
  return {
    status: 'paused',
    pause_reason: PLATFORM_PAUSE_REASON,
    paused_at: now,
    resume_at: null,
    extra_prep_minutes: null,
    paused_by: 'platform',
  };
}
