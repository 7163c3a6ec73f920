import { retryWindowMs, WEBHOOK_RECORDER_SCHEDULE } from '@pcp/service-kit';

/**
 * How long a version waits for its predecessor's row before it may be sent without it:
 * derived from the recorder's schedule (the JetStream topology's WEBHOOK_RECORDER_SCHEDULE),
 * never set apart from it. The predecessor's event was
 * delivered to the recorder first (the outbox publishes an order's versions in order), so
 * within its retry window it is recorded or dead-lettered; waiting that long, no version
 * overtakes one the recorder is still retrying. Past it the gap stops blocking the order
 * (an event that never comes: dead-lettered, or parked in the outbox). A version recorded
 * later still is delivered when it is; the later ones already sent are not sent again.
 */
export const WEBHOOK_GAP_GRACE_MS = retryWindowMs(WEBHOOK_RECORDER_SCHEDULE);

/** What the recorders need of the test-mode webhook streams (docs/guide/sandbox.md#webhook-stream). */
export interface WebhookStreamLog {
  /** Events kept in each tenant's stream log (the oldest go). */
  readonly keep: number;
  /** Called after an event was appended to the tenant's log (committed): wake its readers. */
  appended(partnerId: string): void;
}
