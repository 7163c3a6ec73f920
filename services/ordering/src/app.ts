import { events, natsStreams, webhookAttemptNotices, webhookStreamWake } from '@pcp/contracts';
import {
  createBusClient,
  createOutboxRelay,
  createLocalSubjects,
  createSubjectService,
  keyringFromEnv,
  type Keyring,
  durables,
  jetStreamTopology,
  requireStreams,
  streamName,
  topologyConsumer,
  parseAllowlist,
  startConsumer,
  type ConsumerLoop,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { Msg, Subscription } from 'nats';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostname } from 'node:os';
import type { z } from 'zod';
import { createCatalogCache } from './catalog/catalog-cache.js';
import { createCatalogCompilePool } from './catalog/compile-pool.js';
import { createItemAvailabilityCache } from './catalog/item-availability-cache.js';
import type { OrderingConfig } from './config.js';
import type { OrderingDatabase } from './db/ordering.table.js';
import { addressHandlers } from './addresses/address.handlers.js';
import { cartHandlers } from './carts/cart.handlers.js';
import { createAcceptanceSweeper } from './lifecycle/acceptance-sweeper.js';
import { createRefundSweeper } from './lifecycle/order-refunds.js';
import { createFixtureKitchen } from './fixtures/fixture-kitchen.js';
import {
  createOrderStatusChanges,
  orderLifecycleHandlers,
} from './lifecycle/lifecycle.handlers.js';
import { createOrderEvaluator } from './validate/order-evaluator.js';
import { validateHandlers } from './validate/validate.handlers.js';
import { createStoreProfileCache } from './validate/store-profile-cache.js';
import { chargeOwnersHandler } from './place/charge-owners.handlers.js';
import { createPlaceOrder, placeHandler } from './place/place.handlers.js';
import { createPlaceSaga } from './place/place-saga.js';
import { createPlaceSweeper } from './place/place-sweeper.js';
import { createStoreSubmitter } from './place/store-submitter.js';
import { testAdvanceHandler } from './sandbox/test-advance.handlers.js';
import { testPlaceHandler } from './sandbox/test-place.handlers.js';
import { testResetHandler } from './sandbox/test-reset.handlers.js';
import { pruneSettledDeliveries } from './webhooks/delivery-settle.repository.js';
import { streamHandlers } from './webhooks/stream.handlers.js';
import { pruneStreamEvents } from './webhooks/stream.repository.js';
import { webhookHandlers } from './webhooks/webhook.handlers.js';
import { createWebhookDispatcher } from './webhooks/webhook-dispatcher.js';
import { webhookRecorder } from './webhooks/order-status-changed.consumer.js';
import { storeEventRecorder } from './webhooks/store-changed.consumer.js';
import { WEBHOOK_GAP_GRACE_MS, type WebhookStreamLog } from './webhooks/webhook-recording.js';
import { createWebhookSender } from './webhooks/webhook-sender.js';

export { orderingEnvSchema, type OrderingConfig } from './config.js';
export { ORDERING_SCHEMA, orderingMigrations } from './db/migrations/index.js';
export type { OrderDetails, OrderingDatabase } from './db/ordering.table.js';
/** Writes an order as place records it (the lifecycle and webhook tests seed orders with it). */
export { insertOrder } from './lifecycle/order.repository.js';
export { rewrapWebhookSecrets } from './webhooks/endpoint.repository.js';

export interface OrderingServiceDeps extends ServiceDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly config: OrderingConfig;
  /** Injected so tests can pin time (opening hours, scheduled times). */
  readonly clock?: () => Date;
  /** Seals stored secrets; defaults to SECRETS_KEYS (the local key outside production). */
  readonly keyring?: Keyring;
}

/**
 * A plain subscription's event, or undefined for a message that is not one. Never throws: a
 * throw in a subscription's callback closes the whole NATS connection.
 */
function decodeEvent<T>(schema: z.ZodType<T>, msg: Msg): T | undefined {
  try {
    const event = schema.safeParse(msg.json());
    return event.success ? event.data : undefined;
  } catch {
    return undefined;
  }
}

/** How often settled webhook deliveries past their retention are deleted. */
const WEBHOOK_PRUNE_INTERVAL_MS = 3_600_000;

/**
 * The ordering service: the stateless cart helpers, saved addresses, validate and place
 * (idempotent, resumable), the order lifecycle, whose every change goes out through the
 * outbox, and the order-status webhooks driven by those events.
 */
export function createOrderingService(deps: OrderingServiceDeps): ServiceInstance & {
  /** Settle abandoned place keys and forget expired answers now (tests; a timer does it too). */
  sweepPlaces(): Promise<{ settled: number; forgotten: number }>;
  /** Cancel orders past their acceptance window and ask for due pauses now (tests; a timer too). */
  sweepAcceptance(): Promise<{ cancelled: number; paused: number }>;
  /** Ask payments for the refunds cancels owe now (tests; a timer and each cancel do too). */
  sweepRefunds(): Promise<number>;
} {
  const bus = createBusClient(deps.nc, {
    prefix: deps.subjectPrefix,
    timeoutMs: deps.requestTimeoutMs,
    logger: deps.logger,
    metrics: deps.metrics,
  });
  const compilePool = createCatalogCompilePool({
    threads: deps.config.ORDERING_CATALOG_COMPILE_THREADS,
    heapMb: deps.config.ORDERING_CATALOG_COMPILE_THREAD_HEAP_MB,
    logger: deps.logger,
  });
  const catalogs = createCatalogCache({
    bus,
    logger: deps.logger,
    maxBytes: deps.config.ORDERING_CATALOG_CACHE_BYTES,
    pool: compilePool,
    compiles: {
      concurrency: deps.config.ORDERING_CATALOG_COMPILE_THREADS,
      perPartner: deps.config.ORDERING_CATALOG_COMPILES_PER_PARTNER,
      queuedPerPartner: deps.config.ORDERING_CATALOG_COMPILES_QUEUED_PER_PARTNER,
    },
  });
  const availability = createItemAvailabilityCache({
    bus,
    logger: deps.logger,
    maxBytes: deps.config.ORDERING_ITEM_AVAILABILITY_CACHE_BYTES,
  });
  const profiles = createStoreProfileCache({
    bus,
    maxBytes: deps.config.ORDERING_STORE_PROFILE_CACHE_BYTES,
  });
  const { config, db } = deps;
  const clock = deps.clock ?? (() => new Date());
  const keyring = deps.keyring ?? keyringFromEnv();
  const js = deps.nc.jetstream();
  // Test-only: the fault suite's planted defect, for the parts that have one, and its hold
  // between the reconciler's two reads.
  const mutant = config.ORDERING_TEST_MUTANT ? { mutant: config.ORDERING_TEST_MUTANT } : {};
  const holdMs = config.ORDERING_TEST_OWNERS_READ_HOLD_MS;
  const ownersReadHold = holdMs === undefined ? {} : { betweenReads: () => sleep(holdMs) };
  const relay = createOutboxRelay({ db, js, logger: deps.logger, metrics: deps.metrics });
  const nudge = () => void relay.nudge();
  const evaluate = createOrderEvaluator({ db, bus, catalogs, availability, profiles, clock });
  const holder = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const webhookSender = createWebhookSender({
    allowHttp: config.WEBHOOK_ALLOW_HTTP === 'true',
    allowlist: parseAllowlist(config.WEBHOOK_ALLOWLIST),
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
  });
  const dispatcher = createWebhookDispatcher({
    db,
    keyring,
    send: webhookSender,
    logger: deps.logger,
    registry: deps.metrics.registry,
    holder,
    concurrency: config.WEBHOOK_CONCURRENCY,
    storeConcurrency: Math.min(config.WEBHOOK_STORE_EVENT_CONCURRENCY, config.WEBHOOK_CONCURRENCY),
    perPartner: config.WEBHOOK_MAX_IN_FLIGHT_PER_PARTNER,
    // A try ends within its timeout: twice that and some is a lease only a dead replica loses.
    leaseMs: 2 * config.WEBHOOK_TIMEOUT_MS + 5_000,
    gapGraceMs: WEBHOOK_GAP_GRACE_MS,
    pollMs: config.WEBHOOK_POLL_MS,
    schedule: config.WEBHOOK_RETRY_SCHEDULE_MS,
    breakerResetMs: config.WEBHOOK_BREAKER_RESET_MS,
    attempted: (partnerId, notice) => {
      try {
        const subject = `${deps.subjectPrefix}.${webhookAttemptNotices.subject(partnerId)}`;
        deps.nc.publish(subject, JSON.stringify(notice));
      } catch (error) {
        // A closing connection: the try is recorded; only the live streams' cue is lost.
        deps.logger.debug({ err: error }, 'webhook attempt notice not published');
      }
    },
  });
  const saga = createPlaceSaga({
    db,
    bus,
    evaluate,
    submitter: createStoreSubmitter({
      allowHttp: config.ORDERING_SUBMISSION_ALLOW_HTTP === 'true',
      allowlist: parseAllowlist(config.ORDERING_SUBMISSION_ALLOWLIST),
      timeoutMs: config.ORDERING_SUBMISSION_TIMEOUT_MS,
      connectTimeoutMs: config.ORDERING_SUBMISSION_CONNECT_TIMEOUT_MS,
    }),
    clock,
    logger: deps.logger,
    registry: deps.metrics.registry,
    prefix: deps.subjectPrefix,
    nudge,
    leaseMs: config.ORDERING_PLACE_LEASE_MS,
    retentionMs: config.ORDERING_IDEMPOTENCY_RETENTION_MS,
    settleAfterMs: config.ORDERING_PLACE_SETTLE_AFTER_MS,
    paymentsTimeoutMs: config.ORDERING_PAYMENTS_TIMEOUT_MS,
    ...(config.ORDERING_FAILPOINT
      ? { failpoint: config.ORDERING_FAILPOINT, failpointRate: config.ORDERING_FAILPOINT_RATE }
      : {}),
    ...(config.ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS === undefined
      ? {}
      : { testAcceptanceWindowSeconds: config.ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS }),
    ...mutant,
  });
  const sweeper = createPlaceSweeper({
    db,
    saga,
    logger: deps.logger,
    registry: deps.metrics.registry,
    holder,
    leaseMs: config.ORDERING_PLACE_LEASE_MS,
    backoffMs: config.ORDERING_PLACE_SETTLE_AFTER_MS,
  });
  const refunds = createRefundSweeper({
    db,
    bus,
    logger: deps.logger,
    registry: deps.metrics.registry,
    paymentsTimeoutMs: config.ORDERING_PAYMENTS_TIMEOUT_MS,
    retryMs: config.ORDERING_REFUND_RETRY_MS,
    retryMaxMs: config.ORDERING_REFUND_RETRY_MAX_MS,
  });
  const nudgeRefunds = () => refunds.nudge();
  const acceptance = createAcceptanceSweeper({
    db,
    bus,
    clock,
    prefix: deps.subjectPrefix,
    logger: deps.logger,
    registry: deps.metrics.registry,
    nudge,
    nudgeRefunds,
    ...mutant,
  });
  const lifecycle = {
    db,
    bus,
    clock,
    prefix: deps.subjectPrefix,
    nudge,
    nudgeRefunds,
    ...mutant,
  };
  const kitchen = createFixtureKitchen({
    db,
    clock,
    logger: deps.logger,
    registry: deps.metrics.registry,
    changeLockedOrder: createOrderStatusChanges(lifecycle).changeLockedOrder,
    nudge,
    stepScale: config.ORDERING_FIXTURE_KITCHEN_STEP_SCALE,
  });
  // What the service asks of itself, in-process: its NATS user may not publish to its own
  // subjects.
  const local = createLocalSubjects();
  const place = createPlaceOrder({
    db,
    saga,
    registry: deps.metrics.registry,
    holder,
    leaseMs: config.ORDERING_PLACE_LEASE_MS,
    retentionMs: config.ORDERING_IDEMPOTENCY_RETENTION_MS,
  });
  const bindings = [
    ...cartHandlers(catalogs, availability, clock),
    ...addressHandlers(db, bus, deps.config.ORDERING_MAX_ADDRESSES_PER_END_USER),
    ...validateHandlers(evaluate),
    placeHandler(place.fromBytes),
    chargeOwnersHandler({ db, ...mutant, ...ownersReadHold }),
    ...orderLifecycleHandlers(lifecycle),
    testAdvanceHandler({ db, clock, prefix: deps.subjectPrefix, nudge, nudgeRefunds, ...mutant }),
    testPlaceHandler({ bus, local, place: place.fromBody }),
    testResetHandler(db),
    ...webhookHandlers({
      db,
      allowHttp: config.WEBHOOK_ALLOW_HTTP === 'true',
      secretOverlapMs: config.WEBHOOK_SECRET_OVERLAP_MS,
      keyring,
      resent: dispatcher.poke,
    }),
    ...streamHandlers(db, keyring),
  ];
  local.bind(bindings);
  const subjects = createSubjectService(deps, { name: 'ordering', version: '0.1.0' }, bindings);
  const streamLog: WebhookStreamLog = {
    keep: config.WEBHOOK_STREAM_MAX_EVENTS,
    // A wake-up lost (the gateway's subscription is not there) costs a heartbeat's delay: the
    // gateway also reads on every heartbeat.
    appended: (partnerId) =>
      deps.nc.publish(`${deps.subjectPrefix}.${webhookStreamWake.subject(partnerId)}`),
  };
  let activations: Subscription | undefined;
  let storeChanges: Subscription | undefined;
  let profileChanges: Subscription | undefined;
  let sweeping: NodeJS.Timeout | undefined;
  let acceptanceSweeping: NodeJS.Timeout | undefined;
  let refundSweeping: NodeJS.Timeout | undefined;
  let kitchenPassing: NodeJS.Timeout | undefined;
  let pruner: NodeJS.Timeout | undefined;
  let recorder: ConsumerLoop | undefined;
  let storeRecorder: ConsumerLoop | undefined;
  return {
    sweepPlaces: () => sweeper.sweep(),
    sweepAcceptance: () => acceptance.sweep(),
    sweepRefunds: () => refunds.sweep(),
    async start() {
      const jsm = await deps.nc.jetstreamManager();
      // The outbox publishes events; the recorder checks its own consumer.
      await requireStreams(jsm, [streamName(deps.subjectPrefix, natsStreams.events)]);
      await subjects.start();
      relay.start();
      recorder = await startConsumer({
        // The dispatcher's gapGraceMs is derived from its schedule (webhook-recording.ts).
        ...topologyConsumer(
          jetStreamTopology(deps.subjectPrefix),
          durables.orderingWebhookDeliveries,
        ),
        js,
        jsm,
        prefix: deps.subjectPrefix,
        concurrency: 16,
        // Recordings are one short statement each: one fetch per four of them.
        refillWhenFree: 4,
        logger: deps.logger,
        metrics: deps.metrics,
        handle: webhookRecorder(db, dispatcher.poke, streamLog),
      });
      storeRecorder = await startConsumer({
        ...topologyConsumer(
          jetStreamTopology(deps.subjectPrefix),
          durables.orderingStoreWebhookDeliveries,
        ),
        js,
        jsm,
        prefix: deps.subjectPrefix,
        // A fan-out is one transaction of a few statements; a few at once are plenty.
        concurrency: 4,
        logger: deps.logger,
        metrics: deps.metrics,
        handle: storeEventRecorder(db, dispatcher.poke, streamLog),
      });
      dispatcher.start();
      pruner = setInterval(() => {
        pruneSettledDeliveries(db, config.WEBHOOK_RETENTION_MS).catch((error: unknown) => {
          deps.logger.warn({ err: error }, 'pruning webhook deliveries failed');
        });
        pruneStreamEvents(db, config.WEBHOOK_STREAM_RETENTION_MS).catch((error: unknown) => {
          deps.logger.warn({ err: error }, 'pruning webhook stream logs failed');
        });
      }, WEBHOOK_PRUNE_INTERVAL_MS);
      sweeping = setInterval(() => {
        sweeper.sweep().catch((error: unknown) => {
          deps.logger.warn({ err: error }, 'sweeping place keys failed');
        });
      }, config.ORDERING_PLACE_SWEEP_INTERVAL_MS);
      acceptanceSweeping = setInterval(() => {
        acceptance.sweep().catch((error: unknown) => {
          deps.logger.warn({ err: error }, 'sweeping orders past their acceptance window failed');
        });
      }, config.ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS);
      refundSweeping = setInterval(() => {
        refunds.sweep().catch((error: unknown) => {
          deps.logger.warn({ err: error }, 'sweeping owed refunds failed');
        });
      }, config.ORDERING_REFUND_SWEEP_INTERVAL_MS);
      kitchenPassing = setInterval(() => {
        kitchen.pass().catch((error: unknown) => {
          deps.logger.warn({ err: error }, 'the fixture kitchen’s pass failed');
        });
      }, config.ORDERING_FIXTURE_KITCHEN_INTERVAL_MS);
      // Every replica keeps its own cache, so a plain subscription (no queue group, no
      // durable consumer): a missed event is covered by the cache's short TTL.
      activations = deps.nc.subscribe(`${deps.subjectPrefix}.${events.catalogActivated.subject}`, {
        callback: (error, msg) => {
          const event = error ? undefined : decodeEvent(events.catalogActivated.schema, msg);
          if (event) {
            const { storeId, versionId, activatedAt } = event.data;
            catalogs.activated(storeId, versionId, activatedAt, event.id);
          }
        },
      });
      // Likewise for item availability overrides; place also compares the version its live
      // order context names, so a missed event never lets an order through (validate's
      // cached profile names one at most 5 s old).
      storeChanges = deps.nc.subscribe(`${deps.subjectPrefix}.${events.storeChanged.subject}`, {
        callback: (error, msg) => {
          const event = error ? undefined : decodeEvent(events.storeChanged.schema, msg);
          // Every store event may move what validate checks (status, hours, items, catalog).
          if (event) profiles.changed(event.data.storeId);
          if (event?.data.event === 'store.items_availability_changed') {
            const { storeId, itemAvailabilityVersion } = event.data;
            availability.changed(storeId, itemAvailabilityVersion, event.id);
          }
        },
      });
      // A profile change no store event announces (an upserted profile).
      profileChanges = deps.nc.subscribe(
        `${deps.subjectPrefix}.${events.storeProfileChanged.subject}`,
        {
          callback: (error, msg) => {
            const event = error ? undefined : decodeEvent(events.storeProfileChanged.schema, msg);
            if (event) profiles.changed(event.data.storeId);
          },
        },
      );
    },
    async stop(timeoutMs) {
      clearInterval(sweeping);
      clearInterval(acceptanceSweeping);
      clearInterval(refundSweeping);
      clearInterval(kitchenPassing);
      clearInterval(pruner);
      activations?.unsubscribe();
      storeChanges?.unsubscribe();
      profileChanges?.unsubscribe();
      await Promise.all([
        subjects.stop(timeoutMs),
        recorder?.stop(timeoutMs),
        sweeper.stop(),
        acceptance.stop(),
        refunds.stop(),
        kitchen.stop(),
        storeRecorder?.stop(timeoutMs),
      ]);
      await Promise.all([relay.stop(), dispatcher.stop(), compilePool.close()]);
      webhookSender.close();
    },
    serving: () => subjects.serving(),
  };
}
