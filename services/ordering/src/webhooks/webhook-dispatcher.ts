import type { PartnerMode, WebhookAttemptNotice } from '@pcp/contracts';
import { open, resumeOrigin, type Keyring, type Logger } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import CircuitBreaker from 'opossum';
import { Counter, Histogram, type Registry } from 'prom-client';
import { claimDueDeliveries, type ClaimedDelivery } from './delivery-claim.repository.js';
import {
  settleDeliveries,
  wakeWaitingDeliveries,
  type Settlement,
  type TryOutcome,
} from './delivery-settle.repository.js';
import { disableEndpoint } from './endpoint.repository.js';
import { endpointApiVersion, renderDelivery } from './endpoint-version.js';
import { groupCommit } from './group-commit.js';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { nextRetryDelay } from './retry-schedule.js';
import { endpointSecretBinding } from './secret-bindings.js';
import type { SendOutcome, WebhookMessage, WebhookSend } from './webhook-sender.js';

export interface WebhookDispatcherOptions {
  readonly db: Kysely<OrderingDatabase>;
  readonly send: WebhookSend;
  /** Opens the sealed signing secrets. */
  readonly keyring: Keyring;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Names this replica in the leases it holds. */
  readonly holder: string;
  /** Deliveries this replica makes at once, across partners. */
  readonly concurrency: number;
  /**
   * Store-event deliveries among them at most (docs/guide/webhooks.md#store-events): the rest
   * of the slots are only ever for order events, so a fan-out never delays those.
   */
  readonly storeConcurrency: number;
  /** Deliveries one partner has in flight at most, across replicas. */
  readonly perPartner: number;
  /** Longer than a try can take (the sender's hard timeout), so a live try keeps its lease. */
  readonly leaseMs: number;
  /** How long a version waits for a predecessor that was never recorded. */
  readonly gapGraceMs: number;
  /** How often a replica looks for due deliveries when nothing wakes it. */
  readonly pollMs: number;
  /** Delays before each try (docs/guide/webhooks.md#retry-schedule, unless shortened for tests). */
  readonly schedule: readonly number[];
  /** A partner's breaker opens at this share of failed tries (of at least `breakerVolume`). */
  readonly breakerErrorPercentage?: number;
  readonly breakerVolume?: number;
  /** How long an open breaker holds a partner's deliveries before one try goes through. */
  readonly breakerResetMs: number;
  /** Told of each try once its outcome is committed (the gateway's live streams' cue). */
  readonly attempted: (partnerId: string, notice: WebhookAttemptNotice) => void;
}

/** A try that failed, thrown inside the breaker so it counts against the partner. */
class DeliveryFailed extends Error {
  constructor(readonly outcome: Extract<SendOutcome, { kind: 'failed' }>) {
    super(outcome.error);
  }
}

/** Partners whose breakers are kept; the least recently used beyond this are forgotten. */
const MAX_BREAKERS = 10_000;
/** Due rows a claim looks at per slot it fills (the per-partner cap skips some of them). */
const SCAN_PER_SLOT = 8;
/** Deliveries that finish within this share one claim instead of one claim each. */
const CLAIM_COALESCE_MS = 5;
/**
 * Outcomes that finish within this are settled by one statement. A delivery's slot is free
 * once its call returned; its lease (the partner's cap, its order's next version) holds until
 * its outcome is written.
 */
const SETTLE_GATHER_MS = 2;
/** Outcomes settled by one statement at most. */
const SETTLE_BATCH = 256;
/** How often waiting versions are checked for a wake a race lost, and how old they must be. */
const WAKE_SWEEP_MS = 5_000;
/**
 * Opened signing secrets kept (each try would open its endpoint's one or two sealed secrets,
 * two AES-GCM decryptions each), and for how long at most once unused.
 */
const MAX_OPENED_SECRETS = 10_000;
const OPENED_SECRET_TTL_MS = 10 * 60_000;

/**
 * The dispatch workers of one replica: they lease due deliveries (in order per order and per
 * partner and store, order deliveries first, store deliveries within their own share of the
 * slots, at most `perPartner` in flight per partner), make each HTTP call outside any transaction
 * with a hard timeout behind the partner's own breaker, and record the outcome: delivered,
 * retried on the schedule (Retry-After honoured), dead when it runs out, and the endpoint
 * disabled on 410. A failing partner holds only its own slots, so others go on.
 */
export function createWebhookDispatcher(options: WebhookDispatcherOptions) {
  const { db, logger, holder } = options;
  const deliveries = new Counter({
    name: 'pcp_webhook_deliveries_total',
    help: 'Webhook tries by outcome: delivered, retry (failed, tried again later), dead, gone (410), postponed (breaker open), skipped (an event the endpoint’s API version does not know)',
    labelNames: ['outcome'] as const,
    registers: [options.registry],
  });
  const attempts = new Counter({
    name: 'pcp_webhook_delivery_attempts_total',
    help: 'HTTP calls made to partners’ webhook endpoints',
    registers: [options.registry],
  });
  const lagBuckets = [
    0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1_800, 7_200, 36_000, 86_400,
  ];
  const lag = new Histogram({
    name: 'pcp_webhook_delivery_lag_seconds',
    help: 'From the order status change to its successful delivery',
    buckets: lagBuckets,
    registers: [options.registry],
  });
  const storeLag = new Histogram({
    name: 'pcp_webhook_store_event_lag_seconds',
    help: 'From the store event to its successful delivery to one partner',
    buckets: lagBuckets,
    registers: [options.registry],
  });
  const settleBatched = groupCommit(
    async (settlements: Settlement[]) => {
      await settleDeliveries(db, settlements);
      return settlements.map(() => undefined);
    },
    { maxBatch: SETTLE_BATCH, gatherMs: SETTLE_GATHER_MS },
  );
  // By the sealed value and the row it is bound to: a rotation or a re-wrap seals a new value,
  // and a value copied to another row still has to open there (and fails).
  const openedSecrets = new LRUCache<string, string>({
    max: MAX_OPENED_SECRETS,
    ttl: OPENED_SECRET_TTL_MS,
    updateAgeOnGet: true,
  });
  const openSecret = (partnerId: string, mode: PartnerMode, sealed: string): string => {
    const key = `${mode}:${partnerId}:${sealed}`;
    let secret = openedSecrets.get(key);
    if (secret === undefined) {
      secret = open(
        options.keyring,
        endpointSecretBinding({ partner_id: partnerId, mode }),
        sealed,
      );
      openedSecrets.set(key, secret);
    }
    return secret;
  };
  const breakers = new LRUCache<string, CircuitBreaker<[WebhookMessage], SendOutcome>>({
    max: MAX_BREAKERS,
    dispose: (breaker) => breaker.shutdown(),
  });

  let running = false;
  /** Calls being made (the slots), of store events among them. */
  let inFlight = 0;
  let storeInFlight = 0;
  /** Tries whose call returned and whose outcome is not written yet. */
  let unsettled = 0;
  const settling = new Set<Promise<void>>();
  let loop: Promise<void> | undefined;
  let woken = false;
  let wake: (() => void) | undefined;

  function breakerFor(partnerId: string) {
    let breaker = breakers.get(partnerId);
    if (!breaker) {
      breaker = new CircuitBreaker(
        async (message: WebhookMessage) => {
          const outcome = await options.send(message);
          if (outcome.kind === 'failed') throw new DeliveryFailed(outcome);
          return outcome;
        },
        {
          // The sender has the hard timeout; the breaker only counts.
          timeout: false,
          errorThresholdPercentage: options.breakerErrorPercentage ?? 50,
          volumeThreshold: options.breakerVolume ?? 5,
          resetTimeout: options.breakerResetMs,
        },
      );
      breakers.set(partnerId, breaker);
    }
    return breaker;
  }

  /**
   * One try of a leased delivery, through the partner's breaker, its body rendered in its
   * endpoint's version now (a resend, or an endpoint moved to another version, gets the
   * version it has at the time); `unknown` when that version does not know the event.
   */
  async function attempt(
    delivery: ClaimedDelivery,
  ): Promise<SendOutcome | 'postponed' | 'unknown'> {
    const apiVersion = endpointApiVersion(delivery.endpoint_api_version);
    const payload = renderDelivery(apiVersion, delivery.body);
    if (payload === undefined) return 'unknown';
    let secrets: string[];
    try {
      secrets = signingSecrets(delivery, openSecret);
    } catch (error) {
      // Not sealed for this endpoint's row (copied from another, or altered): nothing is
      // signed with it, and the try fails like an unreachable endpoint's.
      logger.error(
        { err: error, deliveryId: delivery.delivery_id, partnerId: delivery.partner_id },
        'webhook signing secret does not open',
      );
      return { kind: 'failed', status: null, error: 'the signing secret cannot be used' };
    }
    const breaker = breakerFor(delivery.partner_id);
    if (breaker.opened) return 'postponed';
    attempts.inc();
    try {
      return await breaker.fire({
        eventId: delivery.event_id,
        payload,
        apiVersion,
        url: delivery.url,
        secrets,
      });
    } catch (error) {
      if (error instanceof DeliveryFailed) return error.outcome;
      // The breaker opened meanwhile, or is half open with its one trial call out.
      if ((error as { code?: string }).code === 'EOPENBREAKER') return 'postponed';
      logger.error({ err: error, deliveryId: delivery.delivery_id }, 'webhook delivery crashed');
      return { kind: 'failed', status: null, error: 'the delivery could not be made' };
    }
  }

  /** One try, then its outcome written; `called` once the call is over. */
  async function deliver(delivery: ClaimedDelivery, called: () => void): Promise<void> {
    // Each try continues the trace of the request that changed the order.
    const started = performance.now();
    const outcome = await resumeOrigin(delivery.origin, 'webhook deliver', () => attempt(delivery));
    const latencyMs = performance.now() - started;
    called();
    // This try's own lease: a resend or a takeover gives the next try another.
    const settle = (tried: TryOutcome) =>
      settleBatched({
        deliveryId: delivery.delivery_id,
        holder: delivery.lease_owner!,
        outcome: tried,
      });
    const attempts = delivery.attempts + 1;
    if (outcome === 'unknown') {
      // Not the partner's (its endpoint's version has no such event): no try, and the
      // sequence goes on past it, as past an event nobody subscribed to.
      deliveries.inc({ outcome: 'skipped' });
      await settle({
        kind: 'skipped',
        error: 'the endpoint’s API version does not know this event',
      });
      return;
    }
    if (outcome === 'postponed') {
      deliveries.inc({ outcome: 'postponed' });
      await settle({
        kind: 'postponed',
        delayMs: options.breakerResetMs,
        error: 'the endpoint keeps failing; deliveries are paused for a while',
      });
      return;
    }
    /** Record a try that was made, then tell of it. */
    const record = async (tried: Exclude<TryOutcome, { kind: 'postponed' | 'skipped' }>) => {
      await settle(tried);
      options.attempted(delivery.partner_id, {
        deliveryId: delivery.delivery_id,
        orderId: delivery.order_id,
        storeId: delivery.store_id,
        status: tried.kind === 'retry' ? 'failed' : tried.kind,
        attempts,
        responseStatus: tried.status,
        attemptedAt: new Date().toISOString(),
      });
    };
    if (outcome.kind === 'delivered') {
      deliveries.inc({ outcome: 'delivered' });
      const seconds = Math.max(0, Date.now() - delivery.occurred_at.getTime()) / 1000;
      (delivery.order_id === null ? storeLag : lag).observe(seconds);
      await record({ kind: 'delivered', attempts, status: outcome.status, latencyMs });
      return;
    }
    if (outcome.kind === 'gone') {
      deliveries.inc({ outcome: 'gone' });
      const reason = 'the endpoint answered 410 Gone, so it was disabled';
      await record({
        kind: 'dead',
        attempts,
        status: outcome.status,
        error: reason,
        latencyMs,
      });
      await disableEndpoint(db, delivery.partner_id, reason);
      logger.warn({ partnerId: delivery.partner_id }, 'webhook endpoint gone (410); disabled');
      return;
    }
    const delay = nextRetryDelay(options.schedule, attempts, outcome.retryAfterMs);
    deliveries.inc({ outcome: delay === undefined ? 'dead' : 'retry' });
    const failed = { attempts, status: outcome.status, error: outcome.error, latencyMs };
    await record(
      delay === undefined
        ? { kind: 'dead', ...failed }
        : { kind: 'retry', delayMs: delay, ...failed },
    );
  }

  function start(delivery: ClaimedDelivery): void {
    const storeEvent = delivery.order_id === null;
    inFlight += 1;
    if (storeEvent) storeInFlight += 1;
    let calling = true;
    const called = () => {
      if (!calling) return;
      calling = false;
      inFlight -= 1;
      if (storeEvent) storeInFlight -= 1;
      unsettled += 1;
      poke();
    };
    const settled = deliver(delivery, called)
      .catch((error: unknown) => {
        // Its lease lapses and another try follows: at least once.
        logger.warn({ err: error, deliveryId: delivery.delivery_id }, 'webhook settle failed');
      })
      .finally(() => {
        called();
        unsettled -= 1;
        settling.delete(settled);
        poke();
      });
    settling.add(settled);
  }

  function poke(): void {
    woken = true;
    wake?.();
  }

  async function nap(): Promise<void> {
    if (woken) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.pollMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = undefined;
  }

  async function run(): Promise<void> {
    let lastSweep = Date.now();
    while (running) {
      woken = false;
      if (Date.now() - lastSweep >= WAKE_SWEEP_MS) {
        lastSweep = Date.now();
        await wakeWaitingDeliveries(db, WAKE_SWEEP_MS).catch((error: unknown) =>
          logger.warn({ err: error }, 'waking waiting webhook deliveries failed'),
        );
      }
      // Let deliveries finishing together free their slots before one claim fills them.
      if (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, CLAIM_COALESCE_MS));
      // Slots free, while the outcomes waiting to be written stay within as many again.
      const free = Math.min(
        options.concurrency - inFlight,
        2 * options.concurrency - inFlight - unsettled,
      );
      if (free > 0) {
        try {
          const claimed = await claimDueDeliveries(db, {
            holder,
            leaseMs: options.leaseMs,
            limit: free,
            storeLimit: Math.max(0, Math.min(free, options.storeConcurrency - storeInFlight)),
            scanLimit: free * SCAN_PER_SLOT,
            perPartner: options.perPartner,
            gapGraceMs: options.gapGraceMs,
          });
          for (const delivery of claimed) start(delivery);
          // A full batch: more may be due at once.
          if (claimed.length === free) continue;
        } catch (error) {
          logger.warn({ err: error }, 'claiming webhook deliveries failed; will retry');
        }
      }
      await nap();
    }
  }

  return {
    start(): void {
      if (running) return;
      running = true;
      loop = run();
    },
    /** New deliveries were recorded: look for due ones now. */
    poke,
    /** Claim nothing more and wait for the tries in flight (their leases cover the rest). */
    async stop(): Promise<void> {
      running = false;
      poke();
      await loop;
      await Promise.allSettled([...settling]);
      breakers.clear();
      openedSecrets.clear();
    },
  };
}

export type WebhookDispatcher = ReturnType<typeof createWebhookDispatcher>;

/** The endpoint's secrets that sign now: its current one, and its previous one in the overlap. */
function signingSecrets(
  delivery: ClaimedDelivery,
  openSecret: (partnerId: string, mode: PartnerMode, sealed: string) => string,
): string[] {
  const { partner_id: partnerId, endpoint_mode: mode } = delivery;
  const secrets = [openSecret(partnerId, mode, delivery.secret)];
  if (
    delivery.previous_secret &&
    delivery.previous_secret_expires_at &&
    delivery.previous_secret_expires_at.getTime() > Date.now()
  ) {
    secrets.push(openSecret(partnerId, mode, delivery.previous_secret));
  }
  return secrets;
}
