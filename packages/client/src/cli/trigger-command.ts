import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createPlatformClient, type PlatformClient } from '../client.js';
import type { paths } from '../generated/openapi.js';
import { placeOrder, type Order, type PlaceOrderRequest } from '../place.js';
import { PlatformProblem } from '../problem.js';
import { fixtureStoreIds } from '../sandbox.js';
import type { CommandIo } from './dry-run-command.js';

/** What each event does: place a test order, then advance it (or not). */
const TRIGGERS = {
  'order.created': undefined,
  'order.status_changed': 'confirmed',
  'order.cancelled': 'cancelled',
} as const;
type TriggerEvent = keyof typeof TRIGGERS;
const EVENTS = Object.keys(TRIGGERS) as TriggerEvent[];

export const TRIGGER_USAGE = `Usage: pcp trigger <event> [--api-key KEY] [--base-url URL]

Makes your test tenant's webhook <event> happen, with a test order at one of the
platform's fixture stores (the first one open that takes it): a pickup order paid at the
store, of one item of its catalog, placed by end user "pcp-cli". Prints each step.

  order.created         places the order
  order.status_changed  places it, then advances it to confirmed (POST /v1/test/orders/{id}/advance)
  order.cancelled       places it, then cancels it as its store would

  --api-key KEY     a distribution partner's test key (pcp_test_…); default: PCP_API_KEY
  --base-url URL    the platform's API; default: PCP_BASE_URL, else http://localhost:8080
  -h, --help        print this help

Run "pcp listen" alongside to get the webhooks on your machine.
Exit status: 0 done, 1 refused or failed (a live key: 403 FORBIDDEN), 2 usage.
`;

/** The end user the CLI's orders are placed for (`X-End-User-Id`). */
export const TRIGGER_END_USER_ID = 'pcp-cli';
/** Items of a catalog offered to validate at once, the first it lets through is ordered. */
const CANDIDATES = 25;

type CatalogSet =
  paths['/v1/marketfront/stores/{storeId}/catalogset']['get']['responses'][200]['content']['application/json'];

/**
 * Up to `limit` items a customer could put in a cart as they are: reached from a catalog
 * through its sections, not marked unavailable, with no modifier group that requires a choice.
 * Whether one can be ordered now (hours, windows, overrides) is validate's to say.
 */
function orderableCandidates(document: CatalogSet, limit: number): string[] {
  const found: string[] = [];
  const seenSections = new Set<string>();
  const seenItems = new Set<string>();
  const visit = (sectionId: string): void => {
    if (found.length >= limit || seenSections.has(sectionId)) return;
    seenSections.add(sectionId);
    const section = document.sections[sectionId];
    if (!section) return;
    for (const itemId of section.itemIds ?? []) {
      if (found.length >= limit) return;
      if (seenItems.has(itemId)) continue;
      seenItems.add(itemId);
      const item = document.items[itemId];
      if (!item || item.isAvailable === false) continue;
      const requiresChoice = (item.modifierGroupIds ?? []).some(
        (groupId) => (document.modifierGroups[groupId]?.minimumAllowed ?? 0) > 0,
      );
      if (!requiresChoice) found.push(itemId);
    }
    for (const child of section.sectionIds ?? []) visit(child);
  };
  for (const catalog of Object.values(document.catalogs)) {
    for (const sectionId of catalog.sectionIds) visit(sectionId);
  }
  return found;
}

/** A request's answer: its data, or its ProblemDetail thrown as a PlatformProblem. */
async function answered<T>(
  request: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await request;
  if (data === undefined) throw PlatformProblem.fromResponse(response, error);
  return data;
}

/** Why no fixture store took the order (each store's reason). */
class NoStore extends Error {}

/** A pickup order paid at the store, of the first item validate lets through, at `storeId`. */
async function orderAt(client: PlatformClient, storeId: string): Promise<PlaceOrderRequest> {
  const store = await answered(
    client.GET('/v1/marketfront/stores/{storeId}', { params: { path: { storeId } } }),
  );
  if (!store.isOpenNow || store.status === 'paused') {
    throw new NoStore(`${store.name}: ${store.isOpenNow ? 'paused' : 'closed now'}`);
  }
  const document = await answered(
    client.GET('/v1/marketfront/stores/{storeId}/catalogset', { params: { path: { storeId } } }),
  );
  const candidates = orderableCandidates(document, CANDIDATES);
  const header = { 'X-End-User-Id': TRIGGER_END_USER_ID };
  const base = {
    fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
    client: { ip: '8.8.4.4', userAgent: 'pcp-cli/1' },
    paymentType: 'PAY_AT_STORE',
  } as const;
  const cartOf = (itemIds: readonly string[]) => ({
    catalogSetId: document.catalogSetId,
    storeId,
    lineItems: itemIds.map((itemId) => ({ itemId, lineItemId: randomUUID(), quantity: 1 })),
  });
  if (candidates.length === 0) throw new NoStore(`${store.name}: no item to order as it is`);
  // One validate finds the candidates that cannot be ordered now (their line's pointer).
  const probe = await answered(
    client.POST('/v1/marketfront/orders/validate', {
      params: { header },
      body: { ...base, cart: cartOf(candidates) },
    }),
  );
  const refused = new Set(
    probe.errors.flatMap((error) => {
      const line = /^\/cart\/lineItems\/(\d+)/.exec(error.pointer ?? '');
      return line ? [Number(line[1])] : [];
    }),
  );
  const chosen = candidates.find((_, index) => !refused.has(index));
  if (chosen === undefined) throw new NoStore(`${store.name}: nothing can be ordered now`);
  const cart = cartOf([chosen]);
  const priced = await answered(
    client.POST('/v1/marketfront/orders/validate', {
      params: { header },
      body: { ...base, cart },
    }),
  );
  if (!priced.isValid || !priced.amounts) {
    const why = priced.errors.map((error) => `${error.code} ${error.message}`).join('; ');
    throw new NoStore(`${store.name}: the order is not valid (${why})`);
  }
  return { ...base, cart, amounts: { total: priced.amounts.total } };
}

/** Place the test order at the first fixture store that takes it. */
async function placeTestOrder(client: PlatformClient, io: CommandIo): Promise<Order> {
  const reasons: string[] = [];
  for (const storeId of fixtureStoreIds) {
    let body;
    try {
      body = await orderAt(client, storeId);
    } catch (error) {
      if (!(error instanceof NoStore)) throw error;
      reasons.push(error.message);
      continue;
    }
    const { order } = await placeOrder(client, { body, endUserId: TRIGGER_END_USER_ID });
    io.stdout(
      `Placed order ${order.orderId} at fixture store ${storeId}: ${order.status}, ` +
        `total ${order.amounts?.total} ${order.amounts?.currency}  (order.created)\n`,
    );
    return order;
  }
  throw new NoStore(`No fixture store takes an order now: ${reasons.join('; ')}`);
}

/** An order id no order has: advancing it asks the platform whether the key is a test key. */
const NO_ORDER = '00000000-0000-4000-8000-000000000000';

/**
 * The platform's answer to a key that is not a test key (a live key: 403 FORBIDDEN, a wrong
 * one: 401), thrown before anything is ordered. The fixture stores are test stores a live
 * key would not find; the test helpers say why.
 */
async function requireTestKey(client: PlatformClient): Promise<void> {
  const { error, response } = await client.POST('/v1/test/orders/{orderId}/advance', {
    params: { path: { orderId: NO_ORDER } },
    body: { to: 'confirmed' },
  });
  const problem = PlatformProblem.fromResponse(response, error);
  if (problem.errorCode !== 'ORDER_NOT_FOUND') throw problem;
}

/** Trigger `event` for the key's test tenant; the orders it made, the last as it ended. */
export async function trigger(options: {
  baseUrl: string;
  apiKey: string;
  event: TriggerEvent;
  io: CommandIo;
}): Promise<Order> {
  const { io } = options;
  const client = createPlatformClient({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    userAgent: 'pcp-cli/1',
  });
  await requireTestKey(client);
  const order = await placeTestOrder(client, io);
  const to = TRIGGERS[options.event];
  if (to === undefined) return order;
  const { orderId } = order;
  const { data, error, response } = await client.POST('/v1/test/orders/{orderId}/advance', {
    params: { path: { orderId } },
    body: { to },
  });
  if (data === undefined) {
    const problem = PlatformProblem.fromResponse(response, error);
    // The fixture kitchen confirms an order two seconds after it was placed: it may have
    // been first, and the event happened all the same.
    if (to !== 'confirmed' || problem.errorCode !== 'ORDER_STATUS_TRANSITION_INVALID') {
      throw problem;
    }
    const current = await answered(
      client.GET('/v1/marketfront/orders/{orderId}', { params: { path: { orderId } } }),
    );
    if (current.status === 'pending' || current.state === 'cancelled') throw problem;
    io.stdout(
      `The fixture kitchen had already advanced order ${orderId} to ${current.status}  ` +
        `(order.status_changed)\n`,
    );
    return current;
  }
  const advanced = data;
  io.stdout(
    `Advanced order ${advanced.orderId} to ${advanced.status} (version ${advanced.version})  ` +
      `(order.${to === 'cancelled' ? 'cancelled' : 'status_changed'})\n`,
  );
  return advanced;
}

/** `pcp trigger <event>`: parse the arguments, then trigger it; the exit code. */
export async function triggerCommand(
  args: string[],
  io: CommandIo,
  env: Record<string, string | undefined>,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    io.stderr(`${error instanceof Error ? error.message : String(error)}\n\n${TRIGGER_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout(TRIGGER_USAGE);
    return 0;
  }
  const [event, ...extra] = positionals;
  if (event === undefined || extra.length > 0 || !EVENTS.includes(event as TriggerEvent)) {
    const what =
      event === undefined ? 'An event is needed' : `Unknown event ${positionals.join(' ')}`;
    io.stderr(`${what}: pcp trigger supports ${EVENTS.join(', ')}\n\n${TRIGGER_USAGE}`);
    return 2;
  }
  const apiKey = values['api-key'] ?? env.PCP_API_KEY;
  const baseUrl = values['base-url'] ?? env.PCP_BASE_URL ?? 'http://localhost:8080';
  if (!apiKey || !URL.canParse(baseUrl)) {
    io.stderr(`An API key (--api-key or PCP_API_KEY) is needed\n\n${TRIGGER_USAGE}`);
    return 2;
  }
  try {
    await trigger({ baseUrl, apiKey, event: event as TriggerEvent, io });
    return 0;
  } catch (error) {
    if (error instanceof PlatformProblem) {
      const { status, errorCode, problem } = error;
      io.stderr(`The platform refused it (HTTP ${status}) ${errorCode}: ${problem.detail}\n`);
      return 1;
    }
    if (error instanceof NoStore) {
      io.stderr(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
