import { z } from 'zod';
import { dateTime, guid } from './common.js';

/**
 * Every event travels in this envelope (STYLE §6). `version` is the version of the aggregate
 * the event is about (1 for its first event, one more for each change; the schema's own
 * version is in `type`), and `id` is derived from the aggregate and that version: the same
 * on every publish, it is the JetStream `Nats-Msg-Id` (publish dedupe) and the consumer's
 * idempotency key. A consumer applies an event only over an older version.
 */
export function eventEnvelope<Data extends z.ZodType>(type: string, data: Data) {
  return z.object({
    id: guid,
    type: z.literal(type),
    occurredAt: dateTime,
    version: z.number().int().positive(),
    data,
  });
}

export const catalogActivatedData = z.object({
  storeId: guid,
  catalogSetId: guid,
  versionId: guid,
  etag: z.string(),
  activatedAt: dateTime,
});
export type CatalogActivatedData = z.infer<typeof catalogActivatedData>;

/** Events, by the subject (below the deployment prefix) they are published on. */
export const events = {
  catalogActivated: {
    subject: 'events.catalog.v1.activated',
    schema: eventEnvelope('catalog.v1.activated', catalogActivatedData),
  },
} as const;
