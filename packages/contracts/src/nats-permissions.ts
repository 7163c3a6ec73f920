import { events } from './events.js';
import { storeDeletionNotices, webhookAttemptNotices } from './live-events.js';
import { serviceNames, type ServiceName } from './messaging.js';
import { subjects, webhookStreamWake } from './subjects.js';

/**
 * Who may do what on NATS: one user per service and one for the gateway. Services trust
 * the partner identity in message headers, so only the gateway (and the callers named
 * below) may publish to a service's subjects, and each user subscribes only to its own
 * subjects and its own reply inbox. `npm run nats:auth` renders this into the NATS Helm
 * chart's values (deploy/nats/values.yaml); the NATS auth test runs the platform under it.
 */

/** The NATS users of the platform: the gateway and each service, named as the service. */
export const natsUsers = ['gateway', ...serviceNames] as const;
export type NatsUser = (typeof natsUsers)[number];

/**
 * The operators' user (`nats stream edit`, `nats consumer info`, `nats micro ls`): the
 * JetStream and services APIs, and none of the platform's subjects, so it cannot speak for a
 * partner either.
 */
export const natsOperatorUser = 'operator';
/**
 * The migration step's user (`npm run migrate`, the migration Job): it alone, besides the
 * operators, creates and updates streams and consumers (the JetStream topology).
 */
export const natsMigratorUser = 'migrator';
/** Every user of the `authorization` block. */
export type NatsAccountUser = NatsUser | typeof natsOperatorUser | typeof natsMigratorUser;

/**
 * A user's reply inbox (nats.js `inboxPrefix`): replies to its requests, JetStream API
 * answers and pulled messages arrive below it, and only that user may subscribe to it.
 */
export const natsInboxPrefix = (user: string) => `_INBOX_${user}`;

/**
 * Where each user's password lives in Kubernetes: the key `password` of Secret
 * `pcp-nats-<user>` (one in the service's namespace, one in the NATS server's).
 */
export const natsSecretName = (user: NatsAccountUser) => `pcp-nats-${user}`;
export const natsSecretKey = 'password';
/** The variable the NATS server reads the user's password from (set from that Secret). */
export const natsPasswordEnv = (user: NatsAccountUser) => `NATS_PW_${user.toUpperCase()}`;

/** A subject definition, by its name below the prefix. */
interface Named {
  readonly name: string;
}

/**
 * Subjects no partner request reaches: only the services named in `serviceCalls` publish to
 * them. Every other subject in `subjects` is the gateway's to call.
 */
const internalSubjects: readonly Named[] = [
  subjects.stores.orderContext,
  subjects.stores.orderProfile,
  // The signing secrets: ordering's submitter alone may ask.
  subjects.stores.submissionSecrets,
  subjects.stores.geocode,
  subjects.stores.platformPause,
  subjects.stores.denyItems,
  subjects.catalog.active,
  subjects.catalog.knownItems,
  subjects.payments.cardOwned,
  subjects.payments.sandboxCustomerCard,
  subjects.payments.authorize,
  subjects.payments.capture,
  subjects.payments.refund,
  subjects.payments.release,
  subjects.ordering.chargeOwners,
];

/** The named callers: the subjects of other services each service requests. */
const serviceCalls: Record<ServiceName, readonly Named[]> = {
  // Overrides name items of the store's active catalog.
  stores: [subjects.catalog.knownItems],
  // Notify and validate check that the store is the caller's (the reply holds no secret).
  catalog: [subjects.stores.get],
  ordering: [
    subjects.stores.get,
    subjects.stores.lookup,
    subjects.stores.orderContext,
    subjects.stores.orderProfile,
    subjects.stores.submissionSecrets,
    subjects.stores.geocode,
    subjects.stores.platformPause,
    subjects.stores.lookupItemAvailability,
    subjects.stores.denyItems,
    subjects.catalog.active,
    subjects.catalog.document,
    subjects.catalog.documentChunk,
    subjects.payments.cardOwned,
    // The sandbox customer's test card, for a test order paid by CARD at a commerce partner's
    // own test store (docs/guide/sandbox.md#test-helpers); never vaultCard itself.
    subjects.payments.sandboxCustomerCard,
    subjects.payments.authorize,
    subjects.payments.capture,
    subjects.payments.refund,
    subjects.payments.release,
  ],
  // The reconciler asks which orders hold its charges.
  payments: [subjects.ordering.chargeOwners],
};

/** JetStream stream names below the deployment prefix (service-kit's `streamName`). */
export const natsStreams = {
  events: 'events',
  catalogIngest: 'catalog_ingest',
  deadLetters: 'dead_letters',
} as const;

interface JetStreamUse {
  /** Streams the service uses (it checks them at start; it may not create or change them). */
  readonly streams: readonly string[];
  /** Its durable pull consumers; each also dead-letters under its own name. */
  readonly consumers: readonly { readonly stream: string; readonly durable: string }[];
  /** Stream subjects it publishes to besides its events (below the prefix). */
  readonly publishes: readonly string[];
  /** Whether it runs an outbox relay (which looks streams up by subject). */
  readonly outbox: boolean;
  /**
   * Durables whose dead letters its admin command republishes: their messages' subjects are
   * ones it publishes anyway (events it owns, streams in `publishes`).
   */
  readonly republishes: readonly string[];
}

const { events: eventsStream, catalogIngest, deadLetters } = natsStreams;
const jetStreamUse: Record<ServiceName, JetStreamUse | undefined> = {
  stores: {
    streams: [eventsStream, deadLetters],
    consumers: [{ stream: eventsStream, durable: 'stores-catalog-activated' }],
    publishes: [],
    // Store events (docs/guide/stores.md#item-availability) leave through an outbox.
    outbox: true,
    // Ordering's store-event recorder takes stores' events, which only stores may publish.
    republishes: ['ordering-store-webhook-deliveries'],
  },
  catalog: {
    streams: [catalogIngest, eventsStream, deadLetters],
    consumers: [{ stream: catalogIngest, durable: 'catalog-ingest' }],
    publishes: ['catalog.ingest.requested'],
    outbox: true,
    // Stores' consumer takes catalog's activation events, which only catalog may publish.
    republishes: ['catalog-ingest', 'stores-catalog-activated'],
  },
  ordering: {
    streams: [eventsStream, deadLetters],
    consumers: [
      { stream: eventsStream, durable: 'ordering-webhook-deliveries' },
      { stream: eventsStream, durable: 'ordering-store-webhook-deliveries' },
    ],
    publishes: [],
    outbox: true,
    republishes: ['ordering-webhook-deliveries'],
  },
  payments: undefined,
};

/** Every durable consumer a service runs (the JetStream topology declares each). */
export const jetStreamConsumers = serviceNames.flatMap(
  (service) => jetStreamUse[service]?.consumers ?? [],
);

/**
 * The service whose admin command republishes `durable`'s dead letters (it may publish their
 * subject), or undefined for a durable the platform does not have.
 */
export function deadLetterRepublisher(durable: string): ServiceName | undefined {
  return serviceNames.find((service) => jetStreamUse[service]?.republishes.includes(durable));
}

/** Events a service takes with a plain subscription (not a durable consumer). */
const eventSubscriptions: Record<ServiceName, readonly { subject: string }[]> = {
  // Each replica's row cache drops a store's row when its event arrives.
  stores: [events.storeChanged],
  catalog: [],
  // Each replica's catalog cache drops a store's entry when its catalog changes, its item
  // availability cache when the store's overrides do, and its profile cache on any change.
  ordering: [events.catalogActivated, events.storeChanged, events.storeProfileChanged],
  payments: [],
};

/**
 * The most messages one reply may take: a reply in parts (service-kit's bus) is at most
 * 16 MiB in parts of at least 16 KiB. NATS allows each responder this many messages to a
 * request's reply subject, for `REPLY_WINDOW` after the request.
 */
export const MAX_REPLY_MESSAGES = 1_024;
const REPLY_WINDOW = '2m';

/** One user's NATS permissions, in the server's configuration shape. */
export interface NatsPermissions {
  /** `deny` takes precedence over `allow`. */
  readonly publish: { readonly allow: readonly string[]; readonly deny?: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[] };
  /** Replies to the requests it received (services only), bounded in count and time. */
  readonly allow_responses?: { readonly max: number; readonly expires: string };
}

/** Every subject in the subjects table, in order. */
function allSubjects(): Named[] {
  return Object.values(subjects).flatMap((group) => Object.values<Named>(group));
}

/** The request subjects `user` may publish to (below the prefix). */
export function natsCalls(user: NatsUser): string[] {
  if (user === 'gateway') {
    const internal = new Set(internalSubjects.map((s) => s.name));
    return allSubjects()
      .map((s) => s.name)
      .filter((name) => !internal.has(name));
  }
  return serviceCalls[user].map((s) => s.name);
}

/**
 * The JetStream API and ack subjects a service needs, scoped to its streams and consumers:
 * reading, never creating or changing them. A stream captures any subject of the account, so
 * a user that may update one could make it capture card data; only the migrator may.
 */
function jetStreamSubjects(prefix: string, use: JetStreamUse): string[] {
  const stream = (name: string) => `${prefix}_${name}`;
  return [
    // Account info: what `jetstreamManager()` asks first.
    '$JS.API.INFO',
    ...(use.outbox ? ['$JS.API.STREAM.NAMES'] : []),
    ...use.streams.map((name) => `$JS.API.STREAM.INFO.${stream(name)}`),
    ...use.consumers.flatMap(({ stream: name, durable }) => {
      const id = `${stream(name)}.${durable}`;
      return [
        `$JS.API.CONSUMER.INFO.${id}`,
        `$JS.API.CONSUMER.MSG.NEXT.${id}`,
        `$JS.ACK.${id}.>`,
        `${prefix}.dead-letters.${durable}`,
      ];
    }),
    ...use.publishes.map((subject) => `${prefix}.${subject}`),
    // The admin command reads dead letters without consuming them, and deletes those it
    // republished.
    ...(use.streams.includes(deadLetters) ? [`$JS.API.STREAM.MSG.GET.${stream(deadLetters)}`] : []),
    ...(use.republishes.length > 0 ? [`$JS.API.STREAM.MSG.DELETE.${stream(deadLetters)}`] : []),
  ];
}

/** The events the gateway's live streams read (docs/guide/live-events.md). */
export const liveEventSources = [events.orderStatusChanged, events.storeChanged] as const;

/**
 * The JetStream API the gateway's live streams use: an ordered consumer of each event of
 * `liveEventSources` (the filter is in the create subject, so it can read no other), created,
 * pulled, checked and deleted by name. Consumer names are one token, so `*` would reach the
 * services' durables too: `durableSubjects` denies those.
 */
function liveEventSubjects(prefix: string): string[] {
  const stream = `${prefix}_${natsStreams.events}`;
  return [
    `$JS.API.STREAM.INFO.${stream}`,
    ...liveEventSources.map(
      (event) => `$JS.API.CONSUMER.CREATE.${stream}.*.${prefix}.${event.subject}`,
    ),
    ...['MSG.NEXT', 'INFO', 'DELETE'].map((verb) => `$JS.API.CONSUMER.${verb}.${stream}.*`),
  ];
}

/** The API subjects of the services' durables of the events stream: the gateway's deny list. */
function durableSubjects(prefix: string): string[] {
  const durables = jetStreamConsumers.filter(({ stream }) => stream === natsStreams.events);
  return durables.flatMap(({ durable }) => {
    const id = `${prefix}_${natsStreams.events}.${durable}`;
    return [
      `$JS.API.CONSUMER.CREATE.${id}`,
      `$JS.API.CONSUMER.CREATE.${id}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${id}`,
      `$JS.API.CONSUMER.DELETE.${id}`,
    ];
  });
}

/** What `user` may publish and subscribe to in the deployment (or test run) `prefix`. */
export function natsPermissions(prefix: string, user: NatsUser): NatsPermissions {
  const inbox = `${natsInboxPrefix(user)}.>`;
  const calls = natsCalls(user).map((name) => `${prefix}.${name}`);
  if (user === 'gateway') {
    return {
      // Its own subjects (the admin command announces key changes to every gateway) and its
      // live streams' consumers.
      publish: {
        allow: [...calls, `${prefix}.gateway.>`, ...liveEventSubjects(prefix)],
        deny: durableSubjects(prefix),
      },
      // Its open webhook streams wake when ordering appends to their tenant's log; its live
      // streams hear of each webhook try, and end when stores deletes their store.
      subscribe: {
        allow: [
          `${prefix}.gateway.>`,
          inbox,
          `${prefix}.${webhookStreamWake.wildcard}`,
          `${prefix}.${webhookAttemptNotices.wildcard}`,
          `${prefix}.${storeDeletionNotices.subject}`,
        ],
      },
    };
  }
  const use = jetStreamUse[user];
  const owned = Object.values(events)
    .filter((event) => event.subject.startsWith(`events.${user}.`))
    .map((event) => `${prefix}.${event.subject}`);
  // Ordering wakes the gateway's open webhook streams and tells its live streams of each
  // webhook try; stores tells them of deleted stores (plain publishes, no reply).
  const wakes =
    user === 'ordering'
      ? [`${prefix}.${webhookStreamWake.wildcard}`, `${prefix}.${webhookAttemptNotices.wildcard}`]
      : user === 'stores'
        ? [`${prefix}.${storeDeletionNotices.subject}`]
        : [];
  return {
    publish: {
      allow: [...calls, ...owned, ...wakes, ...(use ? jetStreamSubjects(prefix, use) : [])],
    },
    subscribe: {
      allow: [
        // Its request subjects (in its queue group) and nothing of another service's.
        `${prefix}.${user}.>`,
        inbox,
        ...eventSubscriptions[user].map((event) => `${prefix}.${event.subject}`),
        // The NATS services API: $SRV.PING|INFO|STATS, for all, by name and by id.
        '$SRV.*',
        `$SRV.*.${user}`,
        `$SRV.*.${user}.*`,
      ],
    },
    allow_responses: { max: MAX_REPLY_MESSAGES, expires: REPLY_WINDOW },
  };
}

/** The operators' permissions: every JetStream API call and service ping, replies to itself. */
export function natsOperatorPermissions(): NatsPermissions {
  return {
    publish: { allow: ['$JS.API.>', '$SRV.>'] },
    subscribe: { allow: [`${natsInboxPrefix(natsOperatorUser)}.>`, '_INBOX.>'] },
  };
}

/**
 * The migrator's permissions: the JetStream API calls that apply the topology (account info,
 * stream and consumer create, update and info), nothing of the platform's subjects.
 */
export function natsMigratorPermissions(prefix: string): NatsPermissions {
  const streams = Object.values(natsStreams).map((name) => `${prefix}_${name}`);
  return {
    publish: {
      allow: [
        '$JS.API.INFO',
        ...streams.flatMap((stream) => [
          ...['CREATE', 'UPDATE', 'INFO'].map((verb) => `$JS.API.STREAM.${verb}.${stream}`),
          ...['CREATE', 'DURABLE.CREATE', 'INFO'].map(
            (verb) => `$JS.API.CONSUMER.${verb}.${stream}.>`,
          ),
        ]),
      ],
    },
    subscribe: { allow: [`${natsInboxPrefix(natsMigratorUser)}.>`] },
  };
}

/** A user entry of the NATS server's `authorization` block. */
export interface NatsUserEntry {
  readonly user: NatsAccountUser;
  readonly password: string;
  readonly permissions: NatsPermissions;
}

/**
 * The NATS server's `authorization` block for `prefix`; `password(user)` is what the
 * configuration holds for each password (a variable reference, in deployments).
 */
export function natsAuthorization(
  prefix: string,
  password: (user: NatsAccountUser) => string,
): { users: NatsUserEntry[] } {
  return {
    users: [
      ...natsUsers.map((user) => ({
        user,
        password: password(user),
        permissions: natsPermissions(prefix, user),
      })),
      {
        user: natsOperatorUser,
        password: password(natsOperatorUser),
        permissions: natsOperatorPermissions(),
      },
      {
        user: natsMigratorUser,
        password: password(natsMigratorUser),
        permissions: natsMigratorPermissions(prefix),
      },
    ],
  };
}
