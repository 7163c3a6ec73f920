import { parseArgs } from 'node:util';
import { createPlatformClient, type PlatformClient } from '../client.js';
import { placeOrder, type Order } from '../place.js';
import { PlatformProblem } from '../problem.js';
import { fixtureStoreOrder, NoFixtureStoreError } from '../sandbox.js';
import { unsafeBaseUrl } from './base-url.js';
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
                    (https, or plain http only to localhost, 127.0.0.1 or ::1)
  -h, --help        print this help

Run "pcp listen" alongside to get the webhooks on your machine.
Exit status: 0 done, 1 refused or failed (a live key: 403 FORBIDDEN), 2 usage (a plain http
base URL to another host included).
`;

/** The end user the CLI's orders are placed for (`X-End-User-Id`). */
export const TRIGGER_END_USER_ID = 'pcp-cli';
/** Place the test order at the first fixture store that takes it. */
async function placeTestOrder(client: PlatformClient, io: CommandIo): Promise<Order> {
  const { storeId, body } = await fixtureStoreOrder(client, { endUserId: TRIGGER_END_USER_ID });
  const { order } = await placeOrder(client, { body, endUserId: TRIGGER_END_USER_ID });
  io.stdout(
    `Placed order ${order.orderId} at fixture store ${storeId}: ${order.status}, ` +
      `total ${order.amounts?.total} ${order.amounts?.currency}  (order.created)\n`,
  );
  return order;
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
    const { data: current } = await client.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId } },
    });
    if (!current || current.status === 'pending' || current.state === 'cancelled') throw problem;
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
  // Checked before anything is sent: the key must not cross a network in the clear.
  const unsafe = unsafeBaseUrl(baseUrl);
  if (unsafe !== undefined) {
    io.stderr(`${unsafe}\n`);
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
    if (error instanceof NoFixtureStoreError) {
      io.stderr(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
