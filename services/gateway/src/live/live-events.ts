import {
  events,
  liveEventSources,
  natsStreams,
  orderEventPayload,
  storeEventPayload,
  WEBHOOK_ATTEMPT_EVENT,
  webhookAttemptNotice,
  webhookAttemptNotices,
} from '@pcp/contracts';
import { requireStreams, streamName, type Logger } from '@pcp/service-kit';
import {
  ConsumerEvents,
  DeliverPolicy,
  type ConsumerMessages,
  type JsMsg,
  type NatsConnection,
  type Subscription,
} from 'nats';
import { Gauge, type Registry } from 'prom-client';
import { sseFrame } from '../http/sse.js';

/** What a live stream listens to: a store's events, or a tenant's (docs/guide/live-events.md). */
export const liveTopic = {
  store: (storeId: string) => `store:${storeId}`,
  partner: (tenantId: string) => `partner:${tenantId}`,
} as const;

/** The open live streams of this gateway, by topic: each event's frame goes to its listeners. */
export interface LiveEventHub {
  /** Hand `listener` each frame of `topic` until the returned function is called. */
  listen(topic: string, listener: (frame: string) => void): () => void;
}

export function createLiveEventHub(registry?: Registry) {
  const listeners = new Map<string, Set<(frame: string) => void>>();
  let open = 0;
  if (registry) {
    new Gauge({
      name: 'pcp_live_streams_open',
      help: 'Live event streams open on this gateway',
      registers: [registry],
      collect() {
        this.set(open);
      },
    });
  }
  return {
    listen(topic: string, listener: (frame: string) => void) {
      let set = listeners.get(topic);
      if (!set) listeners.set(topic, (set = new Set()));
      set.add(listener);
      open += 1;
      let listening = true;
      return () => {
        if (!listening) return;
        listening = false;
        open -= 1;
        set.delete(listener);
        if (set.size === 0) listeners.delete(topic);
      };
    },
    /** Whether any stream of this gateway is open: none, and a message needs no decoding. */
    idle: () => listeners.size === 0,
    /** Whether a stream listens to `topic`. */
    listened: (topic: string) => listeners.has(topic),
    /** One frame, built once, to every listener of each topic. */
    publish(topics: readonly string[], frame: string) {
      for (const topic of topics) {
        for (const listener of listeners.get(topic) ?? []) {
          try {
            listener(frame);
          } catch {
            // One stream's failure is its own (it ends on its socket's close), never the others'.
          }
        }
      }
    },
  };
}
export type LiveEventFanout = ReturnType<typeof createLiveEventHub>;

/** A message of the source: the topics it goes to and its frame, or undefined to drop it. */
type Decoded = { topics: string[]; frame: string } | undefined;

const text = new TextDecoder();

function json(data: Uint8Array): unknown {
  try {
    return JSON.parse(text.decode(data));
  } catch {
    return undefined;
  }
}

/**
 * An order event: to its store's streams and its distribution partner's; an order whose store
 * was deleted under it (`storePartnerId` null) is no store's any more, so only to the partner's.
 */
function decodeOrderEvent(data: Uint8Array): Decoded {
  const parsed = events.orderStatusChanged.schema.safeParse(json(data));
  if (!parsed.success) return undefined;
  const event = parsed.data;
  const payload = orderEventPayload(event);
  const partnerTopic = liveTopic.partner(event.data.partnerId);
  return {
    topics:
      event.data.storePartnerId === null
        ? [partnerTopic]
        : [liveTopic.store(event.data.storeId), partnerTopic],
    frame: sseFrame({ id: event.id, event: payload.type, data: payload.data }),
  };
}

/** A store event: to the store's streams. */
function decodeStoreEvent(data: Uint8Array): Decoded {
  const parsed = events.storeChanged.schema.safeParse(json(data));
  if (!parsed.success) return undefined;
  const event = parsed.data;
  const payload = storeEventPayload(event);
  return {
    topics: [liveTopic.store(event.data.storeId)],
    frame: sseFrame({ id: event.id, event: payload.type, data: payload.data }),
  };
}

const decoders: Record<
  (typeof liveEventSources)[number]['subject'],
  (data: Uint8Array) => Decoded
> = {
  [events.orderStatusChanged.subject]: decodeOrderEvent,
  [events.storeChanged.subject]: decodeStoreEvent,
};

export interface LiveEventSourceOptions {
  readonly nc: NatsConnection;
  readonly prefix: string;
  readonly logger: Logger;
  readonly hub: LiveEventFanout;
}

/**
 * What feeds this gateway's live streams: an ordered consumer of each event the streams carry
 * (ephemeral, from the newest message on, in the stream's order: a NATS reconnect or a gap
 * recreates it after the last message seen), and a plain subscription to the webhook attempt
 * notices. One of each per gateway, however many streams are open. Resolves once the
 * consumers exist, so every event published after it reaches the streams then open.
 */
export async function startLiveEventSource(options: LiveEventSourceOptions) {
  const { nc, prefix, logger, hub } = options;
  const deliver = (decoded: Decoded) => {
    if (decoded) hub.publish(decoded.topics, decoded.frame);
  };
  // Every event and notice reaches every gateway, listened to or not: one with no stream to go
  // to is dropped before it is parsed, validated and framed (most of them, on most replicas).

  /** Say what the consumer went through: nats.js recreates it by itself. */
  const watch = async (messages: ConsumerMessages, subject: string) => {
    const known = new Set<string>(Object.values(ConsumerEvents));
    for await (const status of await messages.status()) {
      if (!known.has(status.type)) continue;
      const level = status.type === ConsumerEvents.OrderedConsumerRecreated ? 'info' : 'warn';
      logger[level]({ subject, status: status.type, data: status.data }, 'live event consumer');
    }
  };
  const js = nc.jetstream();
  const consuming: ConsumerMessages[] = [];
  const consumers: { delete(): Promise<boolean> }[] = [];
  let notices: Subscription | undefined;
  const stop = async () => {
    notices?.unsubscribe();
    for (const messages of consuming) await messages.close();
    // Ephemeral: the server deletes them after a while anyway; this is only tidier.
    await Promise.allSettled(consumers.map((consumer) => consumer.delete()));
  };
  try {
    // The migration step creates the stream; a gateway may start before it has. No account
    // check: the gateway's NATS user may only read this stream's info ($JS.API.STREAM.INFO).
    const jsm = await nc.jetstreamManager({ checkAPI: false });
    await requireStreams(jsm, [streamName(prefix, natsStreams.events)], { logger });
    for (const source of liveEventSources) {
      const decode = decoders[source.subject];
      const consumer = await js.consumers.get(streamName(prefix, natsStreams.events), {
        filterSubjects: `${prefix}.${source.subject}`,
        deliver_policy: DeliverPolicy.New,
        name_prefix: 'gateway_live_',
      });
      consumers.push(consumer);
      const messages = await consumer.consume({
        max_messages: 256,
        callback: (msg: JsMsg) => {
          if (!hub.idle()) deliver(decode(msg.data));
        },
      });
      consuming.push(messages);
      watch(messages, source.subject).catch((error: unknown) =>
        logger.warn({ err: error, subject: source.subject }, 'live event consumer status lost'),
      );
    }
    const noticeSubject = `${prefix}.${webhookAttemptNotices.wildcard}`;
    const tenantAt = noticeSubject.split('.').length - 1;
    notices = nc.subscribe(noticeSubject, {
      // Never throws: a throw in a subscription's callback closes the connection.
      callback: (error, msg) => {
        if (error) return;
        const tenant = msg.subject.split('.')[tenantAt];
        if (!tenant || !hub.listened(liveTopic.partner(tenant))) return;
        const parsed = webhookAttemptNotice.safeParse(json(msg.data));
        if (!parsed.success) return;
        const { deliveryId, attempts } = parsed.data;
        const frame = sseFrame({
          id: `${deliveryId}.${attempts}`,
          event: WEBHOOK_ATTEMPT_EVENT,
          data: parsed.data,
        });
        hub.publish([liveTopic.partner(tenant)], frame);
      },
    });
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  logger.info({ subjects: liveEventSources.map((s) => s.subject) }, 'live event source started');
  return { stop };
}
