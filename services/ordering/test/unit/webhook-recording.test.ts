import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WEBHOOK_RECORDER_SCHEDULE } from '@pcp/service-kit';
import { WEBHOOK_GAP_GRACE_MS } from '../../src/webhooks/webhook-recording.js';

type Failure = 'throws' | 'times out' | 'dies';

const { ackWaitMs, timeoutMs, backoffMs, maxDeliveries } = WEBHOOK_RECORDER_SCHEDULE;
const MINUTE = 60_000;

/**
 * When the recorder is done with an event (recorded or dead-lettered) whose deliveries fail
 * as `failures` says, each first waiting `slotWaitsMs[i]` for a free slot, by the consumer
 * loop's rules: a failure is retried after its backoff step (a hang fails at the timeout), a
 * process that dies hands the event back after the ack wait, and the last delivery's
 * failure dead-letters it (if its process died, the next delivery records the dead letter).
 */
function doneAt(failures: readonly Failure[], slotWaitsMs: readonly number[]): number {
  let at = 0;
  failures.forEach((failure, index) => {
    const delivery = index + 1;
    at += slotWaitsMs[index]!;
    if (failure === 'dies') {
      at += ackWaitMs;
      if (delivery === maxDeliveries) at += slotWaitsMs[index + 1]!;
      return;
    }
    if (failure === 'times out') at += timeoutMs;
    if (delivery < maxDeliveries) at += backoffMs[Math.min(delivery, backoffMs.length) - 1]!;
  });
  return at;
}

describe('the webhook gap grace and the recorder’s schedule', () => {
  it('keeps a version waiting for as long as the recorder may still record its predecessor', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<Failure>('throws', 'times out', 'dies'), {
          minLength: maxDeliveries,
          maxLength: maxDeliveries,
        }),
        fc.array(fc.integer({ min: 0, max: timeoutMs }), {
          minLength: maxDeliveries + 1,
          maxLength: maxDeliveries + 1,
        }),
        (failures, slotWaits) => doneAt(failures, slotWaits) <= WEBHOOK_GAP_GRACE_MS,
      ),
    );
  });

  it('is the recorder’s worst case, not longer: a missing version holds its order that long', () => {
    const worst = Array.from({ length: maxDeliveries }, (_, index): Failure => {
      const delivery = index + 1;
      if (delivery === maxDeliveries) return 'dies';
      const backoff = backoffMs[Math.min(delivery, backoffMs.length) - 1]!;
      return timeoutMs + backoff >= ackWaitMs ? 'times out' : 'dies';
    });
    const slotWaits = Array.from({ length: maxDeliveries + 1 }, () => timeoutMs);
    expect(doneAt(worst, slotWaits)).toBe(WEBHOOK_GAP_GRACE_MS);
    expect(WEBHOOK_GAP_GRACE_MS).toBeLessThanOrEqual(15 * MINUTE);
  });

  it('gives the recorder minutes of a database outage before it dead-letters an event', () => {
    const failingAtOnce = Array.from({ length: maxDeliveries }, (): Failure => 'throws');
    const noWait = Array.from({ length: maxDeliveries + 1 }, () => 0);
    expect(doneAt(failingAtOnce, noWait)).toBeGreaterThanOrEqual(5 * MINUTE);
  });
});
