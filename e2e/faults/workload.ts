import {
  createPlatformClient,
  ingestCatalog,
  placeOrder,
  PlatformProblem,
  type operations,
  type PlaceOrderRequest,
  type PlatformClient,
} from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startCatalogHost } from '../catalog-host.js';
import type { FaultPlatform } from './platform.js';
import { FaultReceiver } from './receiver.js';
import { StoreReceiver } from './store-receiver.js';

type StatusChange = operations['changeOrderStatus']['requestBody']['content']['application/json'];
type Random = () => number;

/** A request's client deadline: place may take the gateway's 30 s; the others far less. */
const PLACE_DEADLINE_MS = 40_000;
const REQUEST_DEADLINE_MS = 20_000;
/** The test card that authorizes. */
const CARD = '4242424242424242';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One place's Idempotency-Key and what the partner finally learnt about it. */
export interface PlaceOutcome {
  readonly key: string;
  readonly partnerIndex: number;
  readonly endUserId: string;
  readonly body: PlaceOrderRequest;
  result: 'ok' | 'rejected' | 'unknown';
  orderId?: string;
  /** The final answer's status and errorCode when it was not 2xx. */
  problem?: string;
  /** Set on a key used again after its retention: the order its first life placed. */
  readonly reusedFrom?: string;
  /** When its 2xx arrived (ms since the epoch). */
  answeredAt?: number;
}

export interface IngestRun {
  readonly storeId: string;
  readonly catalogIngestId: string;
}

/** What the workload did during one fault's phase. */
export class PhaseLog {
  readonly outcomes: PlaceOutcome[] = [];
  readonly ingests: IngestRun[] = [];
  requests = 0;
  /** Requests the client gave up on at their deadline, without an answer. */
  readonly pastDeadline: string[] = [];
  statusChanges = 0;
  /** Journeys that ended before place, by why: shows a phase whose load did not get through. */
  readonly failures = new Map<string, number>();
  /** When the phase's load started (ms since the epoch). */
  readonly startedAt = Date.now();
  /** Orders the store never answered (the "store never answers" fault): the platform cancels them. */
  readonly leftPending: string[] = [];

  failed(reason: string): void {
    this.failures.set(reason, (this.failures.get(reason) ?? 0) + 1);
  }
}

interface Partner {
  readonly partnerId: string;
  readonly client: PlatformClient;
  readonly receiver?: FaultReceiver;
}

interface Store {
  readonly storeId: string;
  readonly catalogSetId: string;
  readonly sodaId: string;
  readonly callbackUrl: string;
}

/** How long a store that answers late waits: past the suite's submission timeout. */
export const STORE_LATE_MS = 3_000;
/** The share of the orders it moves that the store cancels, but while a fault raises it. */
export const CANCEL_SHARE = 0.15;
/** Keys placed (2xx) remembered for reuse, at most. */
const MAX_REMEMBERED = 200;

interface Buyer {
  readonly partnerIndex: number;
  readonly endUserId: string;
  readonly paymentId: string;
}

/**
 * The partners' traffic: catalog pushes, cart helpers, validate, place with retries under one
 * Idempotency-Key, status changes, and the distribution partners' webhook receivers. Every
 * request goes to one of the gateways (the other one when the first refuses the connection)
 * with a client deadline, and is counted in the current phase.
 */
export class Workload {
  phase = new PhaseLog();
  /**
   * Set: some journeys use a key again this long after its 2xx (past its retention), as a
   * partner replaying an old request would; the platform must place a new order on a new
   * charge (or replay the first answer while it still keeps it).
   */
  reuseKeysAfterMs: number | undefined;
  /** Set: the commerce partner moves no order (each is left pending to time out). */
  storeSilent = false;
  /** Of the orders the store moves, the share it cancels (each cancel owes a refund). */
  cancelShare = CANCEL_SHARE;
  #stopping = false;
  #running: Promise<void>[] = [];
  readonly #placed: PlaceOutcome[] = [];

  private constructor(
    readonly commerce: Partner,
    readonly distribution: readonly Partner[],
    readonly stores: readonly Store[],
    readonly buyers: readonly Buyer[],
    /** The order-submission endpoint of the last store (the others have none). */
    readonly store: StoreReceiver,
    private readonly closeHost: () => Promise<void>,
  ) {}

  /** The commerce partner sets its stores online (after the platform paused one). */
  async resumeStores(): Promise<void> {
    for (const { storeId } of this.stores) {
      await expectOk(
        this.commerce.client.POST('/v1/commerce/stores/{storeId}/status', {
          params: { path: { storeId } },
          body: { status: 'online' },
        }),
        'set a store online',
      );
    }
  }

  get receivers(): FaultReceiver[] {
    return this.distribution.flatMap((partner) => (partner.receiver ? [partner.receiver] : []));
  }

  /** A fetch over the gateways, with a deadline per request, counted in the current phase. */
  static routedFetch(
    workload: () => Workload | undefined,
    gateways: readonly string[],
    random: Random,
  ) {
    return async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
      const request = new Request(input, init);
      const body = request.body ? await request.arrayBuffer() : undefined;
      const place = new URL(request.url).pathname.endsWith('/orders/place');
      const deadlineMs = place ? PLACE_DEADLINE_MS : REQUEST_DEADLINE_MS;
      const phase = workload()?.phase;
      const first = Math.floor(random() * gateways.length);
      for (let i = 0; ; i++) {
        const gateway = new URL(gateways[(first + i) % gateways.length]!);
        const url = new URL(request.url);
        url.host = gateway.host;
        const deadline = AbortSignal.timeout(deadlineMs);
        if (phase) phase.requests += 1;
        try {
          return await fetch(url, {
            method: request.method,
            headers: request.headers,
            ...(body ? { body } : {}),
            signal: AbortSignal.any([deadline, request.signal]),
          });
        } catch (error) {
          if (deadline.aborted) phase?.pastDeadline.push(`${request.method} ${url.pathname}`);
          const code = (error as { cause?: { code?: string } }).cause?.code;
          // Refused: never sent, so the other gateway may take it (a load balancer would).
          if (code !== 'ECONNREFUSED' || i + 1 >= gateways.length) throw error;
        }
      }
    };
  }

  /** Partners, stores with an ingested catalog, receivers and buyers with a vaulted card. */
  static async create(
    platform: FaultPlatform,
    options: { distributionPartners: number; stores: number; buyers: number; random: Random },
  ): Promise<Workload> {
    // Requests count in the phase of the workload made below, once it exists.
    const made: { workload?: Workload } = {};
    const fetch = Workload.routedFetch(() => made.workload, platform.gatewayUrls, options.random);
    const newPartner = (kind: 'commerce' | 'distribution', index: number) => {
      const created = platform.admin(
        'create-partner',
        '--kind',
        kind,
        '--name',
        `faults ${kind} ${index}`,
        ...(kind === 'distribution' ? ['--payment-types', 'CARD'] : []),
      );
      const partnerId = created.partnerId!;
      platform.admin(
        'set-rate-limits',
        '--partner',
        partnerId,
        '--reads',
        '100000',
        '--writes',
        '100000',
        '--discovery',
        '10000',
      );
      return {
        partnerId,
        client: createPlatformClient({
          baseUrl: platform.gatewayUrls[0]!,
          apiKey: created.apiKey!,
          fetch,
        }),
      };
    };
    const commerce = newPartner('commerce', 0);
    const host = await startCatalogHost();
    const storeReceiver = await StoreReceiver.start(STORE_LATE_MS, options.random);
    const stores: Store[] = [];
    for (let index = 0; index < options.stores; index++) {
      const storeId = randomUUID();
      const submits = index === options.stores - 1;
      await expectOk(
        commerce.client.PUT('/v1/commerce/stores/{storeId}', {
          params: { path: { storeId } },
          body: storeProfile({
            name: `Faults ${index}`,
            orderSubmissionUrl: submits ? storeReceiver.url : undefined,
            fulfillmentTypes: ['PICKUP'],
            // Open every day, all day: the orders are placed whatever the time in Chicago.
            availability: alwaysOpen,
          }),
        }),
        'create a store',
      );
      await expectOk(
        commerce.client.POST('/v1/commerce/stores/{storeId}/status', {
          params: { path: { storeId } },
          body: { status: 'online' },
        }),
        'set a store online',
      );
      const { document, ids } = cartTestCatalog(storeId);
      const callbackUrl = host.serveJson(`/${storeId}.json`, document);
      const run = await ingestCatalog(commerce.client, { storeId, callbackUrl, timeoutMs: 60_000 });
      if (run.status !== 'succeeded') throw new Error(`set-up ingest ${run.status}`);
      stores.push({ storeId, catalogSetId: ids.catalogSetId, sodaId: ids.soda, callbackUrl });
    }

    const distribution: Partner[] = [];
    for (let index = 0; index < options.distributionPartners; index++) {
      const partner = newPartner('distribution', index);
      const receiver = await FaultReceiver.start();
      const { data } = await expectOk(
        partner.client.PUT('/v1/marketfront/webhooks', {
          body: {
            url: receiver.url,
            events: ['order.created', 'order.status_changed', 'order.cancelled'],
          },
        }),
        'register a webhook endpoint',
      );
      receiver.secret = data.secret ?? '';
      distribution.push({ ...partner, receiver });
    }

    const buyers: Buyer[] = [];
    for (let index = 0; index < options.buyers; index++) {
      const partnerIndex = index % distribution.length;
      const endUserId = `faults-buyer-${index}`;
      const { data } = await expectOk(
        distribution[partnerIndex]!.client.POST('/v1/marketfront/payments/cards', {
          params: { header: { 'X-End-User-Id': endUserId } },
          body: {
            cardNumber: CARD,
            expMonth: 12,
            expYear: 2035,
            cvc: '123',
            cardholderName: 'Pat Doe',
          },
        }),
        'vault a card',
      );
      buyers.push({ partnerIndex, endUserId, paymentId: data.paymentId });
    }
    made.workload = new Workload(commerce, distribution, stores, buyers, storeReceiver, () =>
      Promise.all([host.close(), storeReceiver.close()]).then(() => undefined),
    );
    return made.workload;
  }

  /** Start one worker per buyer, each with its own seeded choices, logging into `phase`. */
  start(phase: PhaseLog, randoms: readonly Random[]): void {
    this.phase = phase;
    this.#stopping = false;
    this.#running = this.buyers.map((buyer, index) => this.#work(buyer, randoms[index]!));
  }

  /** Let every worker finish the journey it is in, then stop. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#running);
  }

  /** Send every key whose outcome the partner does not know again until it does. */
  async resolveUnknown(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const open = this.phase.outcomes.filter((outcome) => outcome.result === 'unknown');
    await Promise.all(
      open.map(async (outcome) => {
        while (outcome.result === 'unknown' && Date.now() < deadline) {
          await this.#place(outcome, 10);
        }
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.receivers.map((receiver) => receiver.down()));
    await this.closeHost();
  }

  async #work(buyer: Buyer, random: Random): Promise<void> {
    while (!this.#stopping) {
      try {
        if (random() < 0.06) await this.#pushCatalog(random);
        else await this.#journey(buyer, random);
      } catch (error) {
        // A request without an answer ends this journey; the next one starts.
        const cause = (error as { cause?: { code?: string } }).cause?.code;
        this.phase.failed(cause ?? (error as Error).name);
      }
      await sleep(50 + random() * 150);
    }
  }

  async #pushCatalog(random: Random): Promise<void> {
    const store = this.stores[Math.floor(random() * this.stores.length)]!;
    const { data } = await this.commerce.client.POST('/v1/commerce/catalogset-notification', {
      params: { query: { storeId: store.storeId } },
      body: { callbackUrl: store.callbackUrl },
    });
    if (data) {
      this.phase.ingests.push({ storeId: store.storeId, catalogIngestId: data.catalogIngestId });
    }
  }

  async #journey(buyer: Buyer, random: Random): Promise<void> {
    const reused = this.#reusable(random);
    if (reused) {
      const outcome: PlaceOutcome = {
        key: reused.key,
        partnerIndex: reused.partnerIndex,
        endUserId: reused.endUserId,
        body: reused.body,
        result: 'unknown',
        reusedFrom: reused.orderId!,
      };
      this.phase.outcomes.push(outcome);
      return this.#place(outcome, 6);
    }
    const partner = this.distribution[buyer.partnerIndex]!;
    const store = this.stores[Math.floor(random() * this.stores.length)]!;
    const line = () => ({
      itemId: store.sodaId,
      lineItemId: randomUUID(),
      quantity: 1 + Math.floor(random() * 3),
    });
    const first = await partner.client.POST('/v1/marketfront/carts/add', {
      body: { item: line(), cart: null, catalogSetId: store.catalogSetId, storeId: store.storeId },
    });
    let cart = first.data;
    if (!cart) return this.phase.failed(`carts/add ${first.response.status}`);
    if (random() < 0.5) {
      const second = await partner.client.POST('/v1/marketfront/carts/add', {
        body: { item: line(), cart },
      });
      cart = second.data;
      if (!cart) return this.phase.failed(`carts/add ${second.response.status}`);
    }
    const order = {
      cart,
      fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
      client: { ip: '8.8.4.4', userAgent: 'faults' },
      paymentType: 'CARD',
      paymentId: buyer.paymentId,
      tip: 1,
    } as const;
    const validation = await partner.client.POST('/v1/marketfront/orders/validate', {
      params: { header: { 'X-End-User-Id': buyer.endUserId } },
      body: order,
    });
    const validated = validation.data;
    if (!validated?.isValid || !validated.amounts) {
      return this.phase.failed(`validate ${validation.response.status}`);
    }
    const outcome: PlaceOutcome = {
      key: randomUUID(),
      partnerIndex: buyer.partnerIndex,
      endUserId: buyer.endUserId,
      body: { ...order, amounts: { total: validated.amounts.total } },
      result: 'unknown',
    };
    this.phase.outcomes.push(outcome);
    await this.#place(outcome, 6);
    if (outcome.result === 'ok' && outcome.orderId) await this.#moveOrder(outcome.orderId, random);
  }

  async #place(outcome: PlaceOutcome, maxAttempts: number): Promise<void> {
    const partner = this.distribution[outcome.partnerIndex]!;
    try {
      const placed = await placeOrder(partner.client, {
        body: outcome.body,
        endUserId: outcome.endUserId,
        idempotencyKey: outcome.key,
        maxAttempts,
        maxDelayMs: 2_000,
      });
      outcome.result = 'ok';
      outcome.orderId = placed.order.orderId;
      outcome.answeredAt = Date.now();
      if (!outcome.reusedFrom) {
        this.#placed.push(outcome);
        if (this.#placed.length > MAX_REMEMBERED) this.#placed.shift();
      }
    } catch (error) {
      if (error instanceof PlatformProblem) {
        const retryable =
          error.status >= 500 ||
          error.status === 429 ||
          error.errorCode === 'IDEMPOTENCY_KEY_IN_PROGRESS';
        outcome.problem = `${error.status} ${error.errorCode ?? ''}`;
        if (!retryable) outcome.result = 'rejected';
      }
    }
  }

  /** A key placed long enough ago to be used again, taken out of the list (once each). */
  #reusable(random: Random): PlaceOutcome | undefined {
    if (this.reuseKeysAfterMs === undefined || random() >= 0.3) return undefined;
    const ripe = Date.now() - this.reuseKeysAfterMs;
    const index = this.#placed.findIndex((outcome) => (outcome.answeredAt ?? Infinity) < ripe);
    return index < 0 ? undefined : this.#placed.splice(index, 1)[0];
  }

  /** The store's moves: some orders stay pending, some are cancelled, most go on. */
  async #moveOrder(orderId: string, random: Random): Promise<void> {
    const roll = random();
    if (this.storeSilent) {
      this.phase.leftPending.push(orderId);
      return;
    }
    if (roll < 0.15) return;
    const cancels = roll < 0.15 + this.cancelShare;
    const steps: StatusChange[] = cancels
      ? [{ status: 'confirmed' }, { state: 'cancelled', cancelReason: 'fault suite' }]
      : [
          { status: 'confirmed' },
          { status: 'preparing' },
          { status: 'ready' },
          { state: 'completed' },
        ];
    const count = cancels ? steps.length : 1 + Math.floor(random() * steps.length);
    for (const body of steps.slice(0, count)) {
      if (!(await this.#changeStatus(orderId, body))) return;
    }
  }

  /** One status change, sent again on 5xx or no answer (the same change twice is a no-op). */
  async #changeStatus(orderId: string, body: StatusChange): Promise<boolean> {
    for (let attempt = 1; attempt <= 8; attempt++) {
      try {
        const { response } = await this.commerce.client.POST(
          '/v1/commerce/orders/{orderId}/status',
          {
            params: { path: { orderId } },
            body,
          },
        );
        if (response.ok) {
          this.phase.statusChanges += 1;
          return true;
        }
        if (response.status < 500 && response.status !== 429) return false;
      } catch {
        // No answer: send it again.
      }
      await sleep(250 * attempt);
    }
    return false;
  }
}

async function expectOk<T extends { data?: unknown; response: Response }>(
  call: Promise<T>,
  what: string,
): Promise<T & { data: NonNullable<T['data']> }> {
  const result = await call;
  if (result.data === undefined || !result.response.ok) {
    throw new Error(`could not ${what}: HTTP ${result.response.status}`);
  }
  return result as T & { data: NonNullable<T['data']> };
}
