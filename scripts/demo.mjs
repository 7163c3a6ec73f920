// `npm run demo`: the whole partner journey against the platform `npm start` runs, through the
// typed client `@pcp/client` as a partner would use it. A commerce and a distribution partner
// are created (the admin command), the commerce partner opens a store and publishes a
// CatalogSet hosted on this machine; the distribution partner registers a webhook receiver on
// this machine, discovers the store, reads its catalog, builds a cart, vaults a test card,
// validates and places an order; the store moves the order to completed and every status
// arrives at the receiver as a verified, signed webhook. Each HTTP exchange is printed as the
// partner sees it, and each answer is checked: it doubles as CI's smoke test (exit 1 with what
// was expected and what came when any step does not do what it should).
// DEMO_BASE_URL (default http://localhost:8080) points it at another gateway; partners are
// created with the admin command, so against the same database (DATABASE_URL, NATS_URL).
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { allWeek, sampleCatalogSet } from './demo/sample-catalog.mjs';
import { root } from './lib/setup.mjs';

const baseUrl = (process.env.DEMO_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
/** The whole run; a hung request or a missing webhook ends it as a failure. */
const DEMO_DEADLINE_MS = 60_000;
const WEBHOOK_WAIT_MS = 15_000;
const INGEST_TIMEOUT_MS = 30_000;
const TEST_CARD = '4242424242424242';
/** Where the end customer stands: Millennium Park, about a kilometre from the store. */
const customerLocation = { latitude: 41.8827, longitude: -87.6233 };
const endCustomer = { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (demo)' };

const tty = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code) => (text) => (tty ? `\x1b[${code}m${text}\x1b[0m` : String(text));
const bold = paint(1);
const dim = paint(90);
const green = paint(32);
const red = paint(31);
const cyan = paint(36);
const yellow = paint(33);

const out = (line = '') => process.stdout.write(`${line}\n`);

/** A step that did not do what it should: what was expected, and what came. */
class DemoFailure extends Error {
  constructor(expected, got, hint = '') {
    super(`expected ${expected}, got ${got}`);
    this.expected = expected;
    this.got = got;
    this.hint = hint;
  }
}

function check(condition, expected, got) {
  if (!condition) throw new DemoFailure(expected, typeof got === 'function' ? got() : got);
}

const money = (amount) => (typeof amount === 'number' ? amount.toFixed(2) : String(amount));
const short = (id) => (typeof id === 'string' ? `${id.slice(0, 8)}…` : String(id));
const json = (value) => JSON.stringify(value);

// ----------------------------------------------------------------------------------------
// Printing what a partner sees: every HTTP exchange the client makes is recorded by the fetch
// it is given, then printed by the step that caused it.

/** Every request the clients sent and what came back, in order. */
const exchanges = [];

/** A fetch that records each exchange (the helpers' retries and polls included). */
async function recordingFetch(input, init) {
  // openapi-fetch hands over a Request; a URL and init would do as well.
  const url = new URL(input.url ?? input);
  const exchange = {
    method: init?.method ?? input.method ?? 'GET',
    path: `${url.pathname}${url.search}`,
  };
  exchanges.push(exchange);
  try {
    const response = await fetch(input, init);
    exchange.status = response.status;
    exchange.headers = response.headers;
    if (/json/.test(response.headers.get('content-type') ?? '')) {
      exchange.body = await response
        .clone()
        .json()
        .catch(() => undefined);
    }
    return response;
  } catch (error) {
    exchange.error = error;
    throw error;
  }
}

function statusLine(exchange) {
  if (exchange.error) return red(`✗ ${exchange.error.cause?.code ?? exchange.error.message}`);
  const text = String(exchange.status);
  return exchange.status < 300 ? green(text) : exchange.status < 400 ? yellow(text) : red(text);
}

/** A ProblemDetail's gist: `errorCode: detail` and its first errors. */
function problemOf(body) {
  if (!body || typeof body !== 'object' || !('errorCode' in body)) return '';
  const errors = (body.errors ?? [])
    .slice(0, 3)
    .map((error) => `${error.code ?? ''}@${error.pointer ?? ''}`)
    .join(' ');
  return `${body.errorCode}: ${body.detail ?? ''}${errors ? ` [${errors}]` : ''}`;
}

/**
 * Run `send` (one typed call, or a helper making several), then print each exchange it made:
 * `→ METHOD /path` with `note` (the interesting request fields) and `← STATUS` with
 * `answer(exchange)` (the interesting part of the answer), or the ProblemDetail's gist.
 */
async function exchange(send, { note = '', answer = () => '' } = {}) {
  const first = exchanges.length;
  try {
    return await send();
  } finally {
    for (const sent of exchanges.slice(first)) {
      out(`   ${cyan('→')} ${sent.method} ${sent.path}${note ? `  ${dim(note)}` : ''}`);
      const gist =
        sent.status !== undefined && sent.status >= 400 ? problemOf(sent.body) : answer(sent);
      out(`   ${cyan('←')} ${statusLine(sent)}${gist ? `  ${gist}` : ''}`);
    }
  }
}

/** The data of an openapi-fetch result answered with `status`, or a failure saying what came. */
function expectStatus(result, status) {
  const got = result.response.status;
  check(
    got === status,
    `HTTP ${status}`,
    () => `HTTP ${got}${result.error ? ` ${problemOf(result.error) || json(result.error)}` : ''}`,
  );
  return result.data;
}

let stepNumber = 0;
function step(title) {
  stepNumber += 1;
  out();
  out(bold(`${stepNumber}. ${title}`));
}
const note = (text) => out(`   ${text}`);

// ----------------------------------------------------------------------------------------
// The partners' own servers on this machine: the commerce partner's catalog host and the
// distribution partner's webhook receiver.

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

function closeServer(server) {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** Serves one JSON document at `/catalog.json`. */
async function startCatalogHost(document) {
  const body = JSON.stringify(document);
  const server = createServer((request, response) => {
    if (request.url !== '/catalog.json') return response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  const base = await listen(server);
  return { server, url: `${base}/catalog.json` };
}

/**
 * Receives webhooks at `/webhooks`, verifying each with the client's verifier (given once the
 * endpoint's secret is known): 204 and recorded when it verifies (once per webhook-id: delivery
 * is at least once), 400 and recorded as a failure when it does not.
 */
async function startWebhookReceiver() {
  const receiver = { verifier: undefined, events: [], rejected: [] };
  const seen = new Set();
  receiver.server = createServer((request, response) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      // A delivery is a few hundred bytes; anything this large is not one.
      if (size > 1_000_000) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        if (request.url !== '/webhooks' || !receiver.verifier) throw new Error('not expected');
        const event = receiver.verifier.verify(raw, request.headers);
        const id = request.headers['webhook-id'];
        if (!seen.has(id)) {
          seen.add(id);
          receiver.events.push({ id, event });
        }
        response.writeHead(204).end();
      } catch (error) {
        receiver.rejected.push(`${request.url}: ${error.message}`);
        response.writeHead(400).end();
      }
    });
  });
  receiver.url = `${await listen(receiver.server)}/webhooks`;
  return receiver;
}

/** The next webhook after the `index` first ones, once it arrived (a failure after a while). */
async function nextWebhook(receiver, index, expected) {
  const deadline = Date.now() + WEBHOOK_WAIT_MS;
  while (receiver.events.length <= index) {
    check(receiver.rejected.length === 0, 'every webhook verified', receiver.rejected[0]);
    check(
      Date.now() < deadline,
      `a webhook for ${expected} within ${WEBHOOK_WAIT_MS / 1000} s`,
      `none (${receiver.events.length} webhooks so far)`,
    );
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return receiver.events[index];
}

// ----------------------------------------------------------------------------------------
// The journey.

/** `npm run admin -- …`: its last stdout line is JSON. */
function admin(...args) {
  const quoted = args.map((arg) => (/\s/.test(arg) ? `"${arg}"` : arg)).join(' ');
  out(`   ${dim('$')} npm run admin -- ${quoted}`);
  const cli = join(root, 'services/gateway/dist/admin/cli.js');
  check(existsSync(cli), 'the built admin command (npm start builds it)', `no ${cli}`);
  const run = spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8' });
  check(run.status === 0, 'the admin command to succeed', () => run.stderr.trim() || run.status);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1));
  const keyHint = `${result.apiKey.split('_').slice(0, 2).join('_')}_…`;
  out(`   ${dim('⇒')} partnerId ${short(result.partnerId)}, API key ${keyHint} (shown once)`);
  return result;
}

async function platformAnswers() {
  step(`The platform answers at ${baseUrl}`);
  out(`   ${cyan('→')} GET /health/live`);
  let status;
  try {
    const response = await fetch(`${baseUrl}/health/live`, { signal: AbortSignal.timeout(5_000) });
    status = response.status;
  } catch (error) {
    out(`   ${cyan('←')} ${red(error.cause?.code ?? error.name)}`);
    throw new DemoFailure(
      `the platform to answer at ${baseUrl}`,
      error.cause?.code ?? error.message,
      'Run npm start first (or point DEMO_BASE_URL at a running gateway).',
    );
  }
  out(`   ${cyan('←')} ${status === 200 ? green(status) : red(status)}`);
  check(status === 200, 'GET /health/live to answer 200', status);
}

/** Loads the client from its build, as a partner's code would import the package. */
async function loadClient() {
  try {
    return await import('@pcp/client');
  } catch (error) {
    throw new DemoFailure(
      'the built @pcp/client',
      error.message,
      'Run npm start first: it builds.',
    );
  }
}

async function runDemo(servers) {
  await platformAnswers();
  const { createPlatformClient, createWebhookVerifier, ingestCatalog, placeOrder } =
    await loadClient();
  const tag = randomUUID().slice(0, 4);
  const storeName = `Demo Diner ${tag}`;

  step('An operator creates the two partners and their API keys');
  const commercePartner = admin('create-partner', '--kind', 'commerce', '--name', storeName);
  const distributionPartner = admin(
    'create-partner',
    '--kind',
    'distribution',
    '--name',
    `Demo Market ${tag}`,
    '--payment-types',
    'CARD',
  );
  const clientOptions = { baseUrl, fetch: recordingFetch, userAgent: 'pcp-demo' };
  const commerce = createPlatformClient({ ...clientOptions, apiKey: commercePartner.apiKey });
  const market = createPlatformClient({ ...clientOptions, apiKey: distributionPartner.apiKey });

  step('The commerce partner creates its store');
  const storeId = randomUUID();
  const profile = {
    name: storeName,
    phone: '+13125550100',
    timezone: 'America/Chicago',
    currency: 'USD',
    address: {
      address1: '233 S Wacker Dr',
      address2: null,
      city: 'Chicago',
      state: 'IL',
      postalCode: '60606',
      country: 'US',
      latitude: 41.8789,
      longitude: -87.6359,
    },
    fulfillmentTypes: ['PICKUP'],
    // Every day, all day: open now whatever the time in Chicago.
    availability: allWeek,
    pickup: { etaMinutes: 15 },
    taxRate: 0.0875,
    minimumOrder: 0,
  };
  const store = expectStatus(
    await exchange(
      () =>
        commerce.PUT('/v1/commerce/stores/{storeId}', {
          params: { path: { storeId } },
          body: profile,
        }),
      {
        note: `"${storeName}", America/Chicago, open every day all day, pickup in 15 min, tax 8.75%`,
        answer: ({ body }) => `storeId ${short(body.storeId)}, status ${body.status}`,
      },
    ),
    201,
  );
  check(store.storeId === storeId, `the store ${storeId}`, store.storeId);

  step('… and sets it online');
  const online = expectStatus(
    await exchange(
      () =>
        commerce.POST('/v1/commerce/stores/{storeId}/status', {
          params: { path: { storeId } },
          body: { status: 'online' },
        }),
      { note: 'status=online', answer: ({ body }) => `status ${body.status}` },
    ),
    200,
  );
  check(online.status === 'online', 'status online', online.status);

  step('… hosts its CatalogSet on this machine and has the platform ingest it');
  const catalogDocument = sampleCatalogSet(storeId);
  const catalogHost = await startCatalogHost(catalogDocument);
  servers.push(catalogHost.server);
  note(dim(`CatalogSet ${short(catalogDocument.catalogSetId)} served at ${catalogHost.url}`));
  const ingest = await exchange(
    () =>
      ingestCatalog(commerce, {
        storeId,
        callbackUrl: catalogHost.url,
        timeoutMs: INGEST_TIMEOUT_MS,
      }),
    {
      answer: ({ body, headers }) =>
        body?.statusUrl
          ? `catalogIngestId ${short(body.catalogIngestId)}, Retry-After ${headers.get('retry-after')}`
          : (body?.status ?? ''),
    },
  );
  check(ingest.status === 'succeeded', 'the ingest to succeed', () => json(ingest.errors));
  const { summary } = ingest;
  note(
    `${green('✓')} succeeded: ${summary.items} items, ${summary.sections} sections, ` +
      `${summary.modifierGroups} modifier groups (${summary.added} added)`,
  );

  step('The distribution partner registers its webhook endpoint (a receiver on this machine)');
  const receiver = await startWebhookReceiver();
  servers.push(receiver.server);
  const endpoint = expectStatus(
    await exchange(
      () =>
        market.PUT('/v1/marketfront/webhooks', {
          body: {
            url: receiver.url,
            events: ['order.created', 'order.status_changed', 'order.cancelled'],
          },
        }),
      {
        note: `url=${receiver.url} events=order.created,order.status_changed,order.cancelled`,
        answer: ({ body }) => `status ${body.status}, secret ${body.secret?.slice(0, 10)}… (kept)`,
      },
    ),
    201,
  );
  check(/^whsec_/.test(endpoint.secret ?? ''), 'a whsec_ signing secret', endpoint.secret);
  receiver.verifier = createWebhookVerifier(endpoint.secret);

  step('… discovers the store near its customer');
  const found = expectStatus(
    await exchange(
      () =>
        market.POST('/v1/marketfront/stores/discover', {
          body: { location: customerLocation, fulfillmentType: 'PICKUP', query: storeName },
        }),
      {
        note: `location=${customerLocation.latitude},${customerLocation.longitude} PICKUP query="${storeName}"`,
        answer: ({ body }) =>
          body.stores
            .map(
              (s) => `${s.name} ${s.distanceMeters} m away, ${s.isOpenNow ? 'open now' : 'closed'}`,
            )
            .join('; ') || 'no stores',
      },
    ),
    200,
  );
  const discovered = found.stores.find((candidate) => candidate.storeId === storeId);
  check(discovered, `the store ${storeId} among the results`, () => json(found.stores));
  check(discovered.isOpenNow, 'the store open now', json(discovered));
  check(
    discovered.catalogSetId === catalogDocument.catalogSetId,
    `its catalogSetId ${catalogDocument.catalogSetId}`,
    discovered.catalogSetId,
  );

  step('… reads its catalog');
  const catalog = expectStatus(
    await exchange(
      () =>
        market.GET('/v1/marketfront/stores/{storeId}/catalogset', {
          params: { path: { storeId } },
        }),
      {
        answer: ({ body, headers }) =>
          `ETag ${headers.get('etag')}, ${Object.values(body.items)
            .map((item) => `${item.name} ${money(item.basePrice)}`)
            .join(', ')}`,
      },
    ),
    200,
  );
  check(
    catalog.catalogSetId === catalogDocument.catalogSetId,
    `CatalogSet ${catalogDocument.catalogSetId}`,
    catalog.catalogSetId,
  );
  // Pick by name from what was read, as a partner's menu screen would.
  const byName = (name) => {
    const found = Object.values(catalog.items).find((item) => item.name === name);
    check(found, `an item named ${name}`, 'none');
    return found;
  };
  const groupNamed = (item, name) => {
    const group = (item.modifierGroupIds ?? [])
      .map((id) => catalog.modifierGroups[id])
      .find((candidate) => candidate?.name === name);
    check(group, `a modifier group ${name} on ${item.name}`, 'none');
    return group;
  };
  const burger = byName('Classic burger');
  const soda = byName('Soda');
  const fries = byName('Fries');
  const cheddar = byName('Cheddar');

  step('… builds a cart with the cart helpers');
  const line = (item, quantity, modifierGroups) => ({
    itemId: item.itemId,
    lineItemId: randomUUID(),
    quantity,
    ...(modifierGroups ? { modifierGroups } : {}),
  });
  const burgerLine = line(burger, 1, [
    { modifierGroupId: groupNamed(burger, 'Side').modifierGroupId, lineItems: [line(fries, 1)] },
    {
      modifierGroupId: groupNamed(burger, 'Extras').modifierGroupId,
      lineItems: [line(cheddar, 1)],
    },
  ]);
  const cartAnswer = ({ body }) =>
    `subTotal ${money(body.subTotal)}, ${body.itemCount} items: ${body.lineItems
      .map((priced) => `${priced.quantity}× ${priced.name} ${money(priced.totalPrice)}`)
      .join(', ')}`;
  let cart = expectStatus(
    await exchange(
      () =>
        market.POST('/v1/marketfront/carts/add', {
          body: { item: burgerLine, cart: null, catalogSetId: catalog.catalogSetId, storeId },
        }),
      { note: '1× Classic burger with Fries and Cheddar, a new cart', answer: cartAnswer },
    ),
    200,
  );
  // A partner sends back the cart it was given (its computed fields are ignored).
  cart = expectStatus(
    await exchange(
      () => market.POST('/v1/marketfront/carts/add', { body: { item: line(soda, 2), cart } }),
      { note: '2× Soda', answer: cartAnswer },
    ),
    200,
  );
  // 9.50 + 1.25 + 0.80 for the burger, 2 × 1.99 for the sodas.
  check(cart.subTotal === 15.53 && cart.itemCount === 3, 'subTotal 15.53 for 3 items', () =>
    json({ subTotal: cart.subTotal, itemCount: cart.itemCount, errors: cart.errors }),
  );

  step('… vaults the end customer’s test card');
  const endUserId = `demo-customer-${tag}`;
  const card = expectStatus(
    await exchange(
      () =>
        market.POST('/v1/marketfront/payments/cards', {
          headers: { 'x-end-user-id': endUserId },
          body: {
            cardNumber: TEST_CARD,
            expMonth: 12,
            expYear: new Date().getFullYear() + 3,
            cvc: '123',
            cardholderName: 'Pat Demo',
          },
        }),
      {
        note: `X-End-User-Id=${endUserId} card ${TEST_CARD.replace(/(\d{4})(?=\d)/g, '$1 ')}`,
        answer: ({ body }) =>
          `paymentId ${short(body.paymentId)}, ${body.brand} •••• ${body.last4}`,
      },
    ),
    201,
  );

  step('… validates the order');
  const order = {
    cart,
    fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
    client: endCustomer,
    paymentType: 'CARD',
    paymentId: card.paymentId,
    tip: 2,
  };
  const validated = expectStatus(
    await exchange(
      () =>
        market.POST('/v1/marketfront/orders/validate', {
          headers: { 'x-end-user-id': endUserId },
          body: order,
        }),
      {
        note: 'pickup ASAP, CARD, tip 2.00',
        answer: ({ body }) =>
          body.isValid
            ? `valid: subTotal ${money(body.amounts.subTotal)} + taxes ${money(body.amounts.taxes)} + tip ${money(body.amounts.tip)} = total ${money(body.amounts.total)} ${body.amounts.currency}`
            : `not valid: ${json(body.errors)}`,
      },
    ),
    200,
  );
  check(validated.isValid, 'a valid order', () => json(validated.errors));
  // 8.75% of 15.53 is 1.358875: 1.36, half up once on the subTotal.
  check(validated.amounts.total === 18.89, 'total 18.89 (15.53 + 1.36 tax + 2.00 tip)', () =>
    json(validated.amounts),
  );

  step('… places it with the total the customer saw, and retries with the same key');
  const body = { ...order, amounts: { total: validated.amounts.total } };
  const orderAnswer = ({ body: placed, headers }) =>
    placed?.orderId
      ? `orderId ${short(placed.orderId)}, ${placed.state}/${placed.status} v${placed.version}, ` +
        `total ${money(placed.amounts.total)}, ${placed.payment?.brand} •••• ${placed.payment?.last4}` +
        (headers.get('idempotent-replayed')
          ? `, Idempotent-Replayed: ${headers.get('idempotent-replayed')}`
          : '')
      : '';
  const placed = await exchange(() => placeOrder(market, { body, endUserId }), {
    note: `X-End-User-Id=${endUserId} amounts.total=${money(body.amounts.total)}`,
    answer: orderAnswer,
  });
  note(dim(`Idempotency-Key ${placed.idempotencyKey}`));
  check(!placed.replayed, 'a new order (not a replay)', 'a replay');
  check(
    placed.order.status === 'pending' && placed.order.version === 1,
    'status pending, version 1',
    `${placed.order.status}, version ${placed.order.version}`,
  );
  check(placed.order.amounts.total === 18.89, 'total 18.89', placed.order.amounts.total);
  const replay = await exchange(
    () => placeOrder(market, { body, endUserId, idempotencyKey: placed.idempotencyKey }),
    { note: 'the same Idempotency-Key and body', answer: orderAnswer },
  );
  check(replay.replayed, 'Idempotent-Replayed: true', 'a fresh answer');
  check(
    replay.order.orderId === placed.order.orderId,
    `the same order ${placed.order.orderId}`,
    replay.order.orderId,
  );
  const { orderId } = placed.order;

  // The store's moves, each followed by the webhook it sends to the distribution partner.
  const expectedWebhooks = [
    { type: 'order.created', status: 'pending', previousStatus: null },
    { type: 'order.status_changed', status: 'confirmed', previousStatus: 'pending' },
    { type: 'order.status_changed', status: 'preparing', previousStatus: 'confirmed' },
    { type: 'order.status_changed', status: 'ready', previousStatus: 'preparing' },
    { type: 'order.status_changed', status: 'completed', previousStatus: 'ready' },
  ];
  let received = 0;
  async function receiveWebhook() {
    const expected = { ...expectedWebhooks[received], version: received + 1 };
    const { id, event } = await nextWebhook(receiver, received, expected.status);
    received += 1;
    const { data } = event;
    out(
      `   ${yellow('⇐')} webhook ${event.type}  ${data.previousStatus ?? '∅'} → ${data.status}, ` +
        `v${data.version}  ${dim(`webhook-id ${short(id)}, signature verified`)}`,
    );
    const got = { type: event.type, ...data };
    check(
      got.type === expected.type &&
        got.orderId === orderId &&
        got.storeId === storeId &&
        got.status === expected.status &&
        got.previousStatus === expected.previousStatus &&
        got.version === expected.version,
      `webhook ${json({ ...expected, orderId })}`,
      json(got),
    );
  }
  await receiveWebhook();

  step('The commerce partner moves the order as its kitchen works; each change is a webhook');
  const readyAt = new Date(Date.now() + 15 * 60_000).toISOString();
  const moves = [
    { status: 'confirmed', estimatedReadyAt: readyAt },
    { status: 'preparing' },
    { status: 'ready' },
    { state: 'completed' },
  ];
  for (const [index, move] of moves.entries()) {
    const moved = expectStatus(
      await exchange(
        () =>
          commerce.POST('/v1/commerce/orders/{orderId}/status', {
            params: { path: { orderId } },
            body: move,
          }),
        {
          note: Object.entries(move)
            .map(([key, value]) => `${key}=${value}`)
            .join(' '),
          answer: ({ body: order }) => `${order.state}/${order.status} v${order.version}`,
        },
      ),
      200,
    );
    const expected = expectedWebhooks[index + 1];
    check(
      moved.status === expected.status && moved.version === index + 2,
      `${expected.status}, version ${index + 2}`,
      `${moved.status}, version ${moved.version}`,
    );
    await receiveWebhook();
  }

  step('The distribution partner reads the finished order');
  const finished = expectStatus(
    await exchange(
      () => market.GET('/v1/marketfront/orders/{orderId}', { params: { path: { orderId } } }),
      { answer: orderAnswer },
    ),
    200,
  );
  check(
    finished.state === 'completed' && finished.version === 5,
    'completed, version 5',
    `${finished.state}, version ${finished.version}`,
  );
  check(receiver.rejected.length === 0, 'every webhook verified', receiver.rejected[0]);
}

const started = Date.now();
const servers = [];
const deadline = setTimeout(() => {
  out();
  out(red(`✗ step ${stepNumber}: expected the demo to finish within ${DEMO_DEADLINE_MS / 1000} s`));
  process.exit(1);
}, DEMO_DEADLINE_MS);
deadline.unref();

let failed = false;
try {
  await runDemo(servers);
  out();
  out(
    green(
      bold(
        `✓ All ${stepNumber} steps did what they should, in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
      ),
    ),
  );
} catch (error) {
  failed = true;
  out();
  if (error instanceof DemoFailure) {
    out(red(`✗ step ${stepNumber}: expected ${error.expected}`));
    out(red(`  got ${error.got}`));
    if (error.hint) out(error.hint);
  } else {
    // A client helper's error (a PlatformProblem, a network error) is what came instead.
    out(red(`✗ step ${stepNumber}: expected the step to succeed`));
    out(
      red(`  got ${error.name}: ${error.message}${error.problem ? ` ${json(error.problem)}` : ''}`),
    );
  }
} finally {
  clearTimeout(deadline);
  await Promise.all(servers.map(closeServer));
}
process.exitCode = failed ? 1 : 0;
