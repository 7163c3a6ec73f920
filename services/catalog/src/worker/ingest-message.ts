import { messageHeaders } from '@pcp/service-kit';
import type { JetStreamClient } from 'nats';
import { z } from 'zod';

/** The work message on the ingest stream: which run to carry out. */
export const ingestMessage = z.object({ runId: z.guid() });

export const ingestSubject = (prefix: string) => `${prefix}.catalog.ingest.requested`;

/**
 * Publish a run's work message and wait for JetStream to store it. The message id dedupes
 * a re-publish within the stream's duplicate window; a later one is harmless (a run that
 * is finished or claimed is skipped). The headers carry the notifying request's trace, so
 * the run continues it.
 */
export async function publishIngest(
  js: JetStreamClient,
  prefix: string,
  runId: string,
  msgId = runId,
) {
  const subject = ingestSubject(prefix);
  await js.publish(subject, JSON.stringify({ runId }), {
    msgID: msgId,
    headers: messageHeaders(subject),
  });
}
