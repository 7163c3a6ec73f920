import { subjects } from '@pcp/contracts';
import {
  handle,
  open,
  requestApiVersion,
  requirePartner,
  requireTestPartner,
  seal,
  type HandlerBinding,
  type Keyring,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { findEndpoint } from './endpoint.repository.js';
import { endpointApiVersion, kindsUnknownIn, renderDelivery } from './endpoint-version.js';
import { newWebhookSecret } from './webhook.handlers.js';
import { openStream, readStream } from './stream.repository.js';
import { endpointSecretBinding, streamSecretBinding } from './secret-bindings.js';

/**
 * The test-mode webhook stream (docs/guide/sandbox.md#webhook-stream): the gateway opens a
 * test tenant's stream log and reads it; the recorders append to it.
 */
export function streamHandlers(db: Kysely<OrderingDatabase>, keyring: Keyring): HandlerBinding[] {
  /** The calling test tenant (a distribution partner's); FORBIDDEN for a live key. */
  const tenant = (ctx: Parameters<typeof requirePartner>[0]) => {
    const partnerId = requirePartner(ctx, 'distribution');
    requireTestPartner(ctx);
    return partnerId;
  };
  return [
    // What the CLI signs forwarded deliveries with: the tenant's endpoint secret when it has
    // an endpoint, so a receiver verifies with the secret it uses in production; otherwise
    // the stream's own (docs/guide/sandbox.md#webhook-stream). Each opens only as sealed for
    // this tenant's own test-mode row: one copied from another row fails closed
    // (SecretBindingError, logged; the caller gets INTERNAL and no secret).
    handle(subjects.ordering.openWebhookStream, async (_input, ctx) => {
      const partnerId = tenant(ctx);
      const fresh = seal(keyring, streamSecretBinding(partnerId), newWebhookSecret());
      const sealed = await openStream(db, partnerId, fresh);
      const endpoint = await findEndpoint(db, partnerId);
      if (!endpoint) return { secret: open(keyring, streamSecretBinding(partnerId), sealed) };
      const binding = endpointSecretBinding({ partner_id: partnerId, mode: 'test' });
      return { secret: open(keyring, binding, endpoint.secret) };
    }),

    // Each event as the tenant's endpoint would get it: in the endpoint's version (without one,
    // the request's), the kinds that version does not know left out by the query, so a page
    // is never emptied of them and a reader always moves on.
    handle(subjects.ordering.readWebhookStream, async ({ after, limit }, ctx) => {
      const partnerId = tenant(ctx);
      const endpoint = await findEndpoint(db, partnerId);
      const apiVersion = endpoint
        ? endpointApiVersion(endpoint.api_version)
        : requestApiVersion(ctx);
      const rows = await readStream(db, partnerId, after, limit, kindsUnknownIn(apiVersion));
      return {
        events: rows.flatMap((row) => {
          const body = renderDelivery(apiVersion, row.body);
          if (body === undefined) return [];
          return [
            {
              seq: Number(row.seq),
              webhookId: row.webhook_id,
              type: row.event_type,
              body,
              apiVersion,
              createdAt: row.created_at.toISOString(),
            },
          ];
        }),
      };
    }),
  ];
}
