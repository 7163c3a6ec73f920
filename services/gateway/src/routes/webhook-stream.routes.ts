import {
  LATEST_API_VERSION,
  MAX_WEBHOOK_STREAM_READ,
  subjects,
  type WebhookStreamEvent,
} from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SSE_HEARTBEAT, sseFrame, sseStreams } from '../http/sse.js';
import { problemResponses } from '../openapi/responses.js';

/** Wake-ups of a tenant's open streams: ordering appended to its log. */
export interface StreamWakeups {
  /** Call `wake` on each of the tenant's wake-ups until the returned function is called. */
  watch(tenantId: string, wake: () => void): () => void;
}

export interface WebhookStreamOptions {
  readonly wakeups: StreamWakeups;
  /** Streams one partner may hold open at once, across every replica. */
  readonly perPartner: number;
  /** A comment line this often keeps proxies from closing a quiet stream; the log is read too. */
  readonly heartbeatMs: number;
}

/** The first event of a stream: the secret the listener signs its forwarded deliveries with. */
export const STREAM_OPENED_EVENT = 'pcp.stream_opened';

const seqText = z.string().regex(/^\d{1,15}$/, 'a sequence number (digits)');

/** Where a stream resumes: the Last-Event-ID header, else the lastEventId query. */
function resumeAfter(request: FastifyRequest, query: string | undefined): number | undefined {
  const header = request.headers['last-event-id'];
  const value = typeof header === 'string' && header !== '' ? header : query;
  if (value === undefined) return undefined;
  if (!seqText.safeParse(value).success) {
    const message = 'Last-Event-ID must be the id of an event of this stream (digits)';
    throw new AppError('REQUEST_INVALID', `/lastEventId: ${message}`, {
      errors: [{ code: 'INVALID_VALUE', message, pointer: '/lastEventId' }],
    });
  }
  return Number(value);
}

/** One stream event as a server-sent event. */
function frame(event: WebhookStreamEvent): string {
  const data = {
    webhookId: event.webhookId,
    type: event.type,
    createdAt: event.createdAt,
    body: event.body,
    apiVersion: event.apiVersion ?? LATEST_API_VERSION,
  };
  return sseFrame({ id: String(event.seq), event: event.type, data });
}

/**
 * The test-mode webhook stream (docs/guide/sandbox.md#webhook-stream): a test tenant's webhook
 * events as server-sent events, from its stream log in ordering, resumable by Last-Event-ID.
 */
export const webhookStreamRoutes: FastifyPluginAsync<WebhookStreamOptions> = async (
  gateway,
  options,
) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();
  const streams = sseStreams(gateway, {
    family: 'webhook',
    perPartner: options.perPartner,
    what: 'webhook streams',
  });

  app.get(
    '/v1/marketfront/webhooks/stream',
    {
      config: { area: 'distribution', rateClass: 'reads', testOnly: true },
      schema: {
        tags: ['Marketfront: webhooks'],
        operationId: 'streamWebhooks',
        summary: 'Receive your test-mode webhooks as server-sent events',
        description:
          'Test keys only (403 FORBIDDEN for a live key). The first event, ' +
          `${STREAM_OPENED_EVENT}, carries {"secret": "whsec_…"}: the secret a listener signs ` +
          'the deliveries it forwards with (the same for every stream of your test tenant). ' +
          'Then each webhook event of your test tenant since the stream was first opened, as ' +
          '`id: <seq>`, `event: <type>`, ' +
          '`data: {"webhookId", "type", "createdAt", "body", "apiVersion"}` (body: the exact ' +
          'JSON text a delivery carries, in apiVersion, your endpoint’s version or, without ' +
          'an endpoint, this request’s; events it does not know are left out). Comment lines keep a quiet stream ' +
          'open. Reconnect with Last-Event-ID (or the lastEventId query) set to the last id ' +
          'received to continue strictly after it. The log keeps the last 1,000 events of ' +
          'the tenant for at most 3 days. A few streams per partner may be open at once ' +
          '(429 RATE_LIMITED beyond). A stream ends when its key is revoked, its partner ' +
          'suspended, its console session ends, or it reaches its maximum age: reconnect ' +
          'with Last-Event-ID.',
        querystring: z.object({ lastEventId: seqText.optional() }),
        response: {
          200: {
            description: 'The stream of your test-mode webhook events',
            content: { 'text/event-stream': { schema: z.string() } },
            headers: [],
          },
          ...problemResponses('FORBIDDEN'),
        },
      },
    },
    async (request, reply) => {
      const tenant = request.ctx.partnerId!;
      let after = resumeAfter(request, request.query.lastEventId);
      const release = await streams.admit(request);
      let secret: string;
      try {
        ({ secret } = await bus.request(subjects.ordering.openWebhookStream, {}, request.ctx));
      } catch (error) {
        release();
        throw error;
      }

      const stream = streams.open(request, reply, release);
      let wake: (() => void) | undefined;
      const stopWatching = options.wakeups.watch(tenant, () => wake?.());
      stream.onClose(() => {
        wake?.();
        stopWatching();
      });
      /** Until a wake-up or the heartbeat; true when it was the heartbeat. */
      const nextWake = () =>
        new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), options.heartbeatMs);
          wake = () => {
            clearTimeout(timer);
            resolve(false);
          };
        });

      const pump = async () => {
        // A wake-up while reading is not lost: it sets `pending`, and the next read runs.
        let pending = false;
        wake = () => {
          pending = true;
        };
        await stream.write(
          `retry: 1000\nevent: ${STREAM_OPENED_EVENT}\ndata: ${JSON.stringify({ secret })}\n\n`,
        );
        while (!stream.closed) {
          pending = false;
          wake = () => {
            pending = true;
          };
          const page = await bus.request(
            subjects.ordering.readWebhookStream,
            { ...(after === undefined ? {} : { after }), limit: MAX_WEBHOOK_STREAM_READ },
            request.ctx,
          );
          for (const event of page.events) {
            if (stream.closed) return;
            await stream.write(frame(event));
            after = event.seq;
          }
          if (page.events.length === MAX_WEBHOOK_STREAM_READ || pending || stream.closed) continue;
          if (await nextWake()) await stream.write(SSE_HEARTBEAT);
        }
      };
      pump().then(
        () => stream.close(),
        (error: unknown) => {
          // The listener reconnects with its Last-Event-ID and loses nothing.
          request.log.warn({ err: error, requestId: request.id }, 'webhook stream ended');
          stream.close();
        },
      );
    },
  );
};
