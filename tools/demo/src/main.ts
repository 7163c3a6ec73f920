// `npm run demo`: the whole partner journey against the platform `npm start` runs, through the
// typed client `@pcp/client` as a partner would use it. A commerce and a distribution partner
// are created (the admin command), the commerce partner opens a store and publishes a
// CatalogSet hosted on this machine; the distribution partner registers a webhook receiver on
// this machine, discovers the store, reads its catalog, builds a cart, vaults a test card,
// validates and places an order; the store moves the order to completed and every status
// arrives at the receiver as a verified, signed webhook. Then the store denies a second order
// because the sodas ran out, and the cart helpers refuse sodas for the rest of the store's
// day. Each HTTP exchange is printed as the partner sees it, and each answer is checked: it
// doubles as CI's smoke test (exit 1 with what was expected and what came when any step does
// not do what it should).
// DEMO_BASE_URL (default http://localhost:8080) points it at another gateway; partners are
// created with the admin command, so against the same database (DATABASE_URL, NATS_URL).
// `npm run demo -- --sandbox` plays the same journey with test keys of both partners
// (docs/guide/sandbox.md#modes): test store, test card on the simulator, test webhooks; then
// the distribution partner also orders at a fixture store, whose kitchen confirms the order.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { parseArgs } from 'node:util';
import { bold, currentStep, DemoFailure, green, json, out, red } from './output.js';
import { closeServer } from './partner-servers.js';
import { fulfil } from './steps/fulfilment.js';
import { placeTheOrder } from './steps/order.js';
import { createPartners, platformAnswers } from './steps/partners.js';
import { buildCart } from './steps/cart.js';
import { denyForAnItem } from './steps/deny.js';
import { orderAtFixtureStore } from './steps/fixture-store.js';
import { discoverStore, readCatalog, registerWebhooks } from './steps/shopping.js';
import { openStore } from './steps/store.js';

const baseUrl = (process.env.DEMO_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
const { values: flags } = parseArgs({ options: { sandbox: { type: 'boolean' } }, strict: true });
const mode = flags.sandbox ? 'test' : 'live';
/** The whole run; a hung request or a missing webhook ends it as a failure. */
const DEMO_DEADLINE_MS = 60_000;

async function runDemo(servers: Server[]): Promise<void> {
  await platformAnswers(baseUrl);
  const tag = randomUUID().slice(0, 4);
  const storeName = `Demo Diner ${tag}`;
  const { commerce, market } = createPartners(baseUrl, storeName, tag, mode);
  const store = await openStore(commerce, storeName, servers);
  const receiver = await registerWebhooks(market, servers);
  await discoverStore(market, storeName, store);
  const catalog = await readCatalog(market, store);
  const cart = await buildCart(market, store, catalog);
  const { placed, request } = await placeTheOrder(market, cart, `demo-customer-${tag}`);
  await fulfil({
    commerce,
    market,
    receiver,
    storeId: store.storeId,
    orderId: placed.order.orderId,
  });
  const soda = Object.values(catalog.items).find((item) => item.name === 'Soda');
  if (!soda) throw new DemoFailure('an item named Soda in the catalog', 'none');
  // The first order's webhooks (created and four moves) came before.
  await denyForAnItem(
    { commerce, market, receiver, store, order: request, item: soda },
    receiver.events.length,
  );
  if (mode === 'test') {
    await orderAtFixtureStore(market, request.endUserId, request.body.paymentId ?? '');
  }
}

/** What came instead of a step's success, as the failure report prints it. */
function reportFailure(error: unknown): void {
  out();
  if (error instanceof DemoFailure) {
    out(red(`✗ step ${currentStep()}: expected ${error.expected}`));
    out(red(`  got ${error.got}`));
    if (error.hint) out(error.hint);
    return;
  }
  // A client helper's error (a PlatformProblem, a network error) is what came instead.
  const { name, message, problem } = error as Error & { problem?: unknown };
  out(red(`✗ step ${currentStep()}: expected the step to succeed`));
  out(red(`  got ${name}: ${message}${problem ? ` ${json(problem)}` : ''}`));
}

const started = Date.now();
const servers: Server[] = [];
const deadline = setTimeout(() => {
  out();
  out(
    red(`✗ step ${currentStep()}: expected the demo to finish within ${DEMO_DEADLINE_MS / 1000} s`),
  );
  process.exit(1);
}, DEMO_DEADLINE_MS);
deadline.unref();

let failed = false;
try {
  await runDemo(servers);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  out();
  out(green(bold(`✓ All ${currentStep()} steps did what they should, in ${seconds} s.`)));
} catch (error) {
  failed = true;
  reportFailure(error);
} finally {
  clearTimeout(deadline);
  await Promise.all(servers.map(closeServer));
}
process.exitCode = failed ? 1 : 0;
