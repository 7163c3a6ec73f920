import { MAX_WEBHOOK_STREAM_READ, subjects, type WebhookStreamEvent } from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { problemResponses } from '../openapi/responses.js';

/** Wake-ups of a tenant's open streams: ordering appended to its log. */
export interface StreamWakeups {
  /** Call `wake` on each of the tenant's wake-ups until the returned function is called. */
  watch(tenantId: string, wake: () => void): () => void;
}

export interface WebhookStreamOptions {
  readonly wakeups: StreamWakeups;
  /** Streams one tenant may hold open on this gateway at once. */
  readonly perPartner: number;
  /** A comment line this often keeps proxies from closing a quiet stream; the log is read too. */
  readonly heartbeatMs: number;
}

/** The first event of a stream: the secret the listener signs its forwarded deliveries with. */
export const STREAM_OPENED_EVENT = 'pcp.stream_opened';

/** How long an ended stream's socket may take to flush before it is destroyed. */
const END_GRACE_MS = 1_000;

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

/** One server-sent event. Every field is one line: the data is JSON, which has no newline. */
function frame(event: WebhookStreamEvent): string {
  const data = {
    webhookId: event.webhookId,
    type: event.type,
    createdAt: event.createdAt,
    body: event.body,
  };
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
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
  const openByTenant = new Map<string, number>();
  /** Ends every open stream: the gateway is closing. */
  const closers = new Set<() => void>();
  gateway.addHook('preClose', (done) => {
    for (const close of closers) close();
    done();
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
          '`id: <seq>`, `event: <type>`, `data: {"webhookId", "type", "createdAt", "body"}` ' +
          '(body: the exact JSON text a delivery carries). Comment lines keep a quiet stream ' +
          'open. Reconnect with Last-Event-ID (or the lastEventId query) set to the last id ' +
          'received to continue strictly after it. The log keeps the last 1,000 events of ' +
          'the tenant for at most 3 days. A few streams per partner may be open at once ' +
          '(429 RATE_LIMITED beyond).',
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
      const open = openByTenant.get(tenant) ?? 0;
      if (open >= options.perPartner) {
        throw new AppError(
          'RATE_LIMITED',
          `At most ${options.perPartner} webhook streams of a partner may be open at once; ` +
            'close one first',
          { retryAfterSeconds: 5 },
        );
      }
      openByTenant.set(tenant, open + 1);
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        const left = (openByTenant.get(tenant) ?? 1) - 1;
        if (left > 0) openByTenant.set(tenant, left);
        else openByTenant.delete(tenant);
      };
      let secret: string;
      try {
        ({ secret } = await bus.request(subjects.ordering.openWebhookStream, {}, request.ctx));
      } catch (error) {
        release();
        throw error;
      }

      reply.hijack();
      const res: ServerResponse = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        // A stream's connection is not reused: once it ends (a drop, the gateway closing) the
        // socket goes too, and a closing gateway is not kept waiting by it.
        connection: 'close',
      });
      let closed = false;
      let wake: (() => void) | undefined;
      const stopWatching = options.wakeups.watch(tenant, () => wake?.());
      const close = () => {
        if (closed) return;
        closed = true;
        wake?.();
        stopWatching();
        closers.delete(close);
        release();
        res.end();
        // A client that stopped reading never takes the end: its socket goes after a grace,
        // so neither it nor a closing gateway waits on it.
        setTimeout(() => res.destroy(), END_GRACE_MS).unref();
      };
      closers.add(close);
      res.on('close', close);

      /** Write, and wait while the client is slow: at most one page is ever held here. */
      const write = async (text: string) => {
        if (res.write(text) || closed) return;
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
      };
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
        await write(
          `retry: 1000\nevent: ${STREAM_OPENED_EVENT}\ndata: ${JSON.stringify({ secret })}\n\n`,
        );
        while (!closed) {
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
            if (closed) return;
            await write(frame(event));
            after = event.seq;
          }
          if (page.events.length === MAX_WEBHOOK_STREAM_READ || pending || closed) continue;
          if (await nextWake()) await write(': heartbeat\n\n');
        }
      };
      pump().then(close, (error: unknown) => {
        // The listener reconnects with its Last-Event-ID and loses nothing.
        request.log.warn({ err: error, requestId: request.id }, 'webhook stream ended');
        close();
      });
    },
  );
};
