// What the receivers got, checked as a partner would: every event delivered at least once,
// no version of an order before its predecessor, duplicates, each body matching its event,
// and the sampled signatures verified (and a changed body rejected).
import type { Webhook } from 'standardwebhooks';
import { latencySummary } from '../../load/paced-load.js';
import type { BenchEvent } from './events.js';
import type { Delivery, ReceiversMessage } from './receivers.worker.js';

export interface WebhookPartner {
  name: string;
  failing: boolean;
  webhook: Webhook;
}

export type Received = Extract<ReceiversMessage, { type: 'end' }>;

export type Checked = ReturnType<typeof check>;

/** How a delivery's body differs from its event, if it does. */
function payloadMismatch(
  partners: WebhookPartner[],
  event: BenchEvent,
  record: Delivery,
): string | undefined {
  if (record.method !== 'POST') return `delivered with ${record.method}`;
  if (record.server !== event.partner) {
    return `delivered to ${partners[record.server]?.name}'s endpoint, not ${partners[event.partner]?.name}'s`;
  }
  let body: { type?: string; timestamp?: string; data?: Record<string, unknown> };
  try {
    body = JSON.parse(record.body) as typeof body;
  } catch {
    return `a body that is not JSON: ${record.body.slice(0, 200)}`;
  }
  const expected = {
    orderId: event.orderId,
    storeId: event.storeId,
    state: 'open',
    status: event.status,
    previousStatus: event.previousStatus,
    version: event.version,
  };
  const wrong = [
    body?.type === event.kind ? undefined : 'type',
    Date.parse(body?.timestamp ?? '') === Date.parse(event.occurredAt) ? undefined : 'timestamp',
    ...Object.entries(expected).map(([key, value]) =>
      body?.data?.[key] === value ? undefined : `data.${key}`,
    ),
  ].filter(Boolean);
  return wrong.length > 0 ? `${wrong.join(', ')} differ: ${record.body.slice(0, 500)}` : undefined;
}

/** Verify the sampled signatures, and that a body changed by one byte fails verification. */
function verifySignatures(partners: WebhookPartner[], received: Received, problems: string[]) {
  let verified = 0;
  for (const sample of received.samples) {
    try {
      partners[sample.server]!.webhook.verify(sample.body, sample.headers);
      verified++;
    } catch (error) {
      problems.push(`signature of ${sample.headers['webhook-id']}: ${(error as Error).message}`);
    }
  }
  const [control] = received.samples;
  if (control) {
    let rejected = false;
    try {
      partners[control.server]!.webhook.verify(`${control.body} `, control.headers);
    } catch {
      rejected = true;
    }
    if (!rejected) problems.push('a changed body passed signature verification');
  }
  return { verified, sampled: received.samples.length };
}

/** The phase's deliveries against its events (and every event published so far). */
export function check(
  partners: WebhookPartner[],
  events: BenchEvent[],
  published: Map<string, BenchEvent>,
  received: Received,
) {
  const phase = new Map(events.map((event) => [event.id, event]));
  const arrivals = new Set<string>();
  const versionsArrived = new Map<string, Set<number>>();
  const lags: number[] = [];
  const lagsByPartner = new Map<number, number[]>();
  const problems: string[] = [];
  let duplicates = 0;
  let outOfOrder = 0;
  let mismatches = 0;
  let unknown = 0;
  let first = Infinity;
  let last = -Infinity;
  for (const record of received.records) {
    const event = phase.get(record.id);
    if (!event) {
      // A late duplicate of an earlier phase's event, or something nobody sent.
      if (published.has(record.id)) duplicates++;
      else {
        unknown++;
        problems.push(`an unknown delivery (webhook-id ${record.id}): ${record.body}`);
      }
      continue;
    }
    if (arrivals.has(record.id)) {
      duplicates++;
      continue;
    }
    arrivals.add(record.id);
    const mismatch = payloadMismatch(partners, event, record);
    if (mismatch) {
      mismatches++;
      problems.push(`event ${event.id}: ${mismatch}`);
    }
    const orderVersions = versionsArrived.get(event.orderId) ?? new Set();
    versionsArrived.set(event.orderId, orderVersions);
    if (event.version > 1 && !orderVersions.has(event.version - 1)) {
      outOfOrder++;
      problems.push(
        `order ${event.orderId}: version ${event.version} arrived before version ${event.version - 1}`,
      );
    }
    orderVersions.add(event.version);
    const lag = record.receivedAt - event.scheduledAt;
    lags.push(lag);
    const partnerLags = lagsByPartner.get(event.partner) ?? [];
    lagsByPartner.set(event.partner, partnerLags);
    partnerLags.push(lag);
    first = Math.min(first, record.receivedAt);
    last = Math.max(last, record.receivedAt);
  }
  const signatures = verifySignatures(partners, received, problems);
  const worstP99 = Math.max(
    ...[...lagsByPartner.values()].map((partnerLags) => latencySummary(partnerLags).p99),
  );
  const healthyCount = events.filter((event) => !partners[event.partner]!.failing).length;
  return {
    delivered: arrivals.size,
    missing: healthyCount - arrivals.size,
    deliveriesPerSecond:
      arrivals.size > 1 ? Math.round(((arrivals.size - 1) * 1000) / (last - first)) : NaN,
    lag: latencySummary(lags),
    worstP99,
    duplicates,
    outOfOrder,
    mismatches,
    unknown,
    signatures,
    problems,
    failingTries: received.failingTries,
    loopDelay: received.loopDelay,
  };
}
