import { guid, subjects } from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SSE_HEARTBEAT, sseStreams, type StreamScope } from '../http/sse.js';
import { liveTopic, type LiveEventHub } from '../live/live-events.js';
import { problemResponses } from '../openapi/responses.js';

export interface LiveEventsOptions {
  readonly hub: LiveEventHub;
  /** Live streams one partner may hold open at once, across its modes and every replica. */
  readonly perPartner: number;
  /** A comment line this often keeps proxies from closing a quiet stream. */
  readonly heartbeatMs: number;
  /** Bytes a stream may have waiting for a slow client before it is dropped. */
  readonly maxQueuedBytes: number;
}

const eventStream = (description: string) => ({
  description,
  content: { 'text/event-stream': { schema: z.string() } },
  headers: [],
});

const common =
  'Each event is `id: <event id>`, `event: <type>`, `data: <JSON>` (the data of the webhook ' +
  'of that type); comment lines keep a quiet stream open. A stream starts with what happens ' +
  'after it opens: there is no resume, so on a reconnect read the resource again, then ' +
  'listen. A client that falls behind by more than a bounded backlog is disconnected. A few ' +
  'live streams per partner may be open at once, across its live and test modes (429 ' +
  'RATE_LIMITED beyond). A stream ends when its key is revoked, its partner suspended, its ' +
  'console session ends, or it reaches its maximum age: reconnect, which authenticates again.';

/**
 * Live events (docs/guide/live-events.md): a store's and a distribution partner's events as
 * server-sent events, pushed from this gateway's one source of them (live-events.ts).
 */
export const liveEventRoutes: FastifyPluginAsync<LiveEventsOptions> = async (gateway, options) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();
  const streams = sseStreams(gateway, {
    family: 'live',
    perPartner: options.perPartner,
    what: 'live event streams',
  });

  /** Stream `topic`'s events until the client, a slow queue or the gateway ends it. */
  function listen(
    request: FastifyRequest,
    reply: FastifyReply,
    topic: string,
    release: () => void,
    scope: StreamScope = {},
  ) {
    const stream = streams.open(request, reply, release, scope);
    const push = (text: string) => stream.push(text, options.maxQueuedBytes);
    const stopListening = options.hub.listen(topic, push);
    const heartbeat = setInterval(() => push(SSE_HEARTBEAT), options.heartbeatMs);
    stream.onClose(() => {
      stopListening();
      clearInterval(heartbeat);
    });
    // Sent at once, so the client knows the stream is open (EventSource's `open`).
    push('retry: 1000\n\n');
  }

  app.get(
    '/v1/commerce/stores/:storeId/events',
    {
      config: { area: 'commerce', rateClass: 'reads' },
      schema: {
        tags: ['Live events'],
        operationId: 'streamStoreEvents',
        summary: 'Receive a store’s order and store events as server-sent events',
        description:
          'The store’s order events (order.created, order.status_changed, order.cancelled) and ' +
          'store events (store.status_changed, store.hours_changed, ' +
          'store.items_availability_changed, catalog.activated), as they happen. ' +
          `${common} Another partner’s store answers 404 STORE_NOT_FOUND; the stream of a ` +
          'store that is deleted (a sandbox reset) ends.',
        params: z.object({ storeId: guid }),
        response: {
          200: eventStream('The stream of the store’s events'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      const { params, ctx } = request;
      const release = await streams.admit(request);
      try {
        // The store is the caller's, in the caller's mode, as every store route checks.
        await bus.request(subjects.stores.get, params, ctx);
      } catch (error) {
        release();
        throw error;
      }
      // Checked again while the stream is open: a lost deletion notice still ends it.
      const stillServed = async () => {
        try {
          await bus.request(subjects.stores.get, params, ctx);
          return true;
        } catch (error) {
          if (error instanceof AppError && error.code === 'STORE_NOT_FOUND') return false;
          throw error;
        }
      };
      listen(request, reply, liveTopic.store(params.storeId), release, {
        storeId: params.storeId,
        stillServed,
      });
    },
  );

  app.get(
    '/v1/marketfront/events',
    {
      config: { area: 'distribution', rateClass: 'reads' },
      schema: {
        tags: ['Live events'],
        operationId: 'streamEvents',
        summary: 'Receive your orders’ events and webhook tries as server-sent events',
        description:
          'The order events of your orders (order.created, order.status_changed, ' +
          'order.cancelled), whether or not your webhook endpoint subscribes to them, and a ' +
          'webhook.delivery_attempted event each time a try of one of your webhook deliveries ' +
          'is recorded: {deliveryId, orderId, storeId, status, attempts, responseStatus, ' +
          `attemptedAt}. ${common}`,
        response: {
          200: eventStream('The stream of your orders’ events and webhook tries'),
        },
      },
    },
    async (request, reply) => {
      const release = await streams.admit(request);
      listen(request, reply, liveTopic.partner(request.ctx.partnerId!), release);
    },
  );
};
