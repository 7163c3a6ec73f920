import { retryWindowMs, type RetrySchedule } from '@pcp/service-kit';

/** The durable consumer that records order events as webhook deliveries. */
export const WEBHOOK_DURABLE = 'ordering-webhook-deliveries';

/**
 * How the recorder retries an event it could not record (one insert: a pool timing out, a
 * database restarting or failing over): soon at first, then every minute, for about eight
 * minutes of failures. Then the event is dead-lettered (alert PcpOrderEventsDeadLettered)
 * and waits for an operator's `dead-letters-republish`.
 */
export const WEBHOOK_RECORDER_SCHEDULE: RetrySchedule = {
  ackWaitMs: 30_000,
  timeoutMs: 10_000,
  backoffMs: [1_000, 5_000, 15_000, 30_000, 60_000],
  maxDeliveries: 12,
};

/**
 * How long a version waits for its predecessor's row before it may be sent without it:
 * derived from the recorder's schedule, never set apart from it. The predecessor's event was
 * delivered to the recorder first (the outbox publishes an order's versions in order), so
 * within its retry window it is recorded or dead-lettered; waiting that long, no version
 * overtakes one the recorder is still retrying. Past it the gap stops blocking the order
 * (an event that never comes: dead-lettered, or parked in the outbox). A version recorded
 * later still is delivered when it is; the later ones already sent are not sent again.
 */
export const WEBHOOK_GAP_GRACE_MS = retryWindowMs(WEBHOOK_RECORDER_SCHEDULE);
