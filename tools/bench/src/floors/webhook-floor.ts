// The floor of webhook delivery: what any durable, at-least-once dispatcher must do per event,
// and nothing else. A JetStream pull consumer on a stream of its own; per message a row
// inserted (committed), the Standard Webhooks signature (node:crypto), an HTTP POST on a
// keep-alive connection (as ordering's, which checks each new connection's address), the row
// marked delivered, the ack. No in-order rule, leases, per-partner cap, breaker, retry schedule
// or metrics.
import { randomUUID } from 'node:crypto';
import type { BenchPlatform } from '../platform/bench-platform.js';
import { startFloorChild } from './child.js';

/**
 * Start the floor as the child `webhook-floor`, delivering to `targets` (partnerId → url and
 * secret); resolves the subject to publish its events on.
 */
export async function startWebhookFloor(
  platform: BenchPlatform,
  targets: Record<string, { url: string; secret: string }>,
): Promise<string> {
  const id = randomUUID().slice(0, 8);
  const subject = `${platform.subjectPrefix}_floor_${id}.events`;
  await startFloorChild(
    platform,
    'webhook-floor',
    'floors/webhook-floor.child.ts',
    JSON.stringify(targets),
    {
      DATABASE_URL: platform.databaseUrl.toString(),
      FLOOR_STREAM: `${platform.subjectPrefix}_floor_${id}`,
      FLOOR_SUBJECT: subject,
    },
  );
  return subject;
}
