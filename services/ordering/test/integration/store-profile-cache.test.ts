import {
  dayOfWeek,
  decodePlaceReply,
  events,
  orderContextAt,
  recordedPlaceProblem,
  subjects,
  type OrderProfile,
  type OrderRequest,
  type PartnerMode,
} from '@pcp/contracts';
import {
  AppError,
  createBusClient,
  createDatabase,
  handle,
  handleBytes,
  loadConfig,
  serveSubjects,
  type BusClient,
  type ServedService,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '../../src/app.js';

// Stores and catalog stand in as responders on real NATS: here the store's changes, and whether
// their events arrive, are the test's to choose.
const storeId = randomUUID();
const { document, ids } = cartTestCatalog(storeId);
const documentBytes = Buffer.from(JSON.stringify(document));
const versionId = randomUUID();
const now = new Date('2026-11-27T15:00:00.000Z');

/** The stand-in store: a live one, open around the clock unless paused. */
let paused = false;
const asked = { profiles: 0, contexts: 0 };

const profileOf = (id: string): OrderProfile => ({
  store: {
    storeId: id,
    name: 'Profile Test Kitchen',
    phone: '+15551234567',
    timezone: 'America/Chicago',
    currency: 'USD',
    address: {
      address1: '1 Main St',
      address2: null,
      city: 'Chicago',
      state: 'IL',
      postalCode: '60601',
      country: 'US',
      latitude: 41.88,
      longitude: -87.63,
    },
    fulfillmentTypes: ['PICKUP'],
    availability: dayOfWeek.options.map((day) => ({
      dayOfWeek: day,
      start: '00:00:00',
      end: '00:00:00',
    })),
    delivery: null,
    pickup: { etaMinutes: 15 },
    taxRate: 0,
    minimumOrder: 0,
    acceptanceWindowSeconds: 600,
    catalogSetId: document.catalogSetId,
  },
  status: paused
    ? { status: 'paused', resumeAt: null, extraPrepMinutes: null }
    : { status: 'online', resumeAt: null, extraPrepMinutes: null },
  specialDays: [],
  ownerPartnerId: randomUUID(),
  itemAvailabilityVersion: 0,
  submission: null,
});

/** Stores answers a request of another mode as if the store did not exist. */
function visible(mode: PartnerMode | undefined) {
  if (mode === 'test') throw new AppError('STORE_NOT_FOUND', 'No store with that id exists');
}

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
const served: ServedService[] = [];
let ordering: ReturnType<typeof createOrderingService> | undefined;
const partner = {
  partnerId: randomUUID(),
  partnerKind: 'distribution' as const,
  paymentTypes: ['CARD' as const, 'PAY_AT_STORE' as const],
};
const ctx = (mode: PartnerMode = 'live') => ({ requestId: randomUUID(), ...partner, mode });

const order: OrderRequest = {
  cart: {
    catalogSetId: document.catalogSetId,
    storeId,
    lineItems: [{ itemId: ids.soda, lineItemId: randomUUID(), quantity: 1 }],
  },
  fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
  client: { ip: '8.8.4.4', userAgent: 'test' },
  paymentType: 'PAY_AT_STORE',
  tip: 0,
};

/** The codes validate finds. */
const validate = async (mode?: PartnerMode) =>
  (await bus.request(subjects.ordering.validate, order, ctx(mode))).errors.map((e) => e.code);

/** Publish a store event of the stand-in store, as stores' outbox would. */
async function announce(subject: string, type: string, data: unknown) {
  const event = {
    id: randomUUID(),
    type,
    occurredAt: new Date().toISOString(),
    version: 1,
    data,
  };
  env.nc.publish(`${env.prefix}.${subject}`, JSON.stringify(event));
  await env.nc.flush();
}

beforeAll(async () => {
  env = await createTestEnvironment();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 10_000, logger: env.logger });
  const options = { version: '0.0.1', prefix: env.prefix, timeoutMs: 5_000, logger: env.logger };
  const active = (id: string) => ({
    storeId: id,
    catalogSetId: document.catalogSetId,
    currency: 'USD',
    etag: `"${versionId}"`,
    versionId,
    activatedAt: '2026-01-01T00:00:00.000Z',
  });
  served.push(
    await serveSubjects(env.nc, { ...options, service: 'catalog' }, [
      handle(subjects.catalog.active, async ({ storeId: id }) => active(id)),
      handle(subjects.catalog.document, async ({ storeId: id }) => ({
        ...active(id),
        notModified: false,
        totalBytes: documentBytes.length,
        chunks: 1,
      })),
      handleBytes(subjects.catalog.documentChunk, async () => documentBytes),
    ]),
    await serveSubjects(env.nc, { ...options, service: 'stores' }, [
      handle(subjects.stores.lookup, async ({ storeId: id }, context) => {
        visible(context.mode);
        return orderContextAt(profileOf(id), now, now).store;
      }),
      handle(subjects.stores.orderProfile, async ({ storeId: id }, context) => {
        visible(context.mode);
        asked.profiles += 1;
        return profileOf(id);
      }),
      handle(subjects.stores.orderContext, async ({ storeId: id, at }, context) => {
        visible(context.mode);
        asked.contexts += 1;
        return orderContextAt(profileOf(id), now, at ? new Date(at) : now);
      }),
    ]),
  );
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-store-profile-cache',
  });
  ordering = createOrderingService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('ordering'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: 10_000,
    db,
    config: loadConfig(orderingEnvSchema, {}),
    clock: () => now,
  });
  await ordering.start();
});

afterAll(async () => {
  await ordering?.stop(5_000);
  for (const service of served) await service.stop();
  await db?.destroy();
  await env?.cleanup();
});

beforeEach(async () => {
  // Every test starts from an open store whose profile this replica has dropped.
  paused = false;
  await announce(events.storeProfileChanged.subject, 'stores.v1.profile-changed', {
    storeId,
    mode: 'live',
  });
  await expect.poll(validate).toEqual([]);
  asked.profiles = asked.contexts = 0;
});

describe("validate reads the store's cached profile; place reads it live", () => {
  it('validates from the profile it holds, asking stores nothing', async () => {
    expect(await Promise.all([validate(), validate(), validate()])).toEqual([[], [], []]);
    expect(asked).toEqual({ profiles: 0, contexts: 0 });
  });

  it('place refuses a store closed after its profile was cached, which validate still takes', async () => {
    paused = true;
    // No event arrived: validate, a preview, may answer from its profile within the TTL.
    expect(await validate()).toEqual([]);
    const { head, recorded } = decodePlaceReply(
      await bus.requestRaw(
        subjects.ordering.place,
        { ...order, amounts: { total: 0 } },
        { ...ctx(), endUserId: 'end-user-1', idempotencyKey: randomUUID() },
      ),
    );
    const problem = recordedPlaceProblem.parse(JSON.parse(recorded.toString()));
    expect(head.status).toBe(400);
    expect(problem.errorCode).toBe('ORDER_INVALID');
    expect(problem.errors?.map((e) => e.code)).toContain('STORE_CLOSED');
    expect(asked.contexts).toBe(1);
  });

  it('drops the profile within a second of a store event or a profile-changed event', async () => {
    paused = true;
    expect(await validate()).toEqual([]);
    await announce(events.storeChanged.subject, 'stores.v1.store-changed', {
      event: 'store.status_changed',
      storeId,
      status: 'paused',
      reason: 'too_busy',
      pausedAt: now.toISOString(),
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: 'partner',
      mode: 'live',
    });
    await expect.poll(validate, { timeout: 1_000 }).toEqual(['STORE_CLOSED']);

    paused = false;
    await announce(events.storeProfileChanged.subject, 'stores.v1.profile-changed', {
      storeId,
      mode: 'live',
    });
    await expect.poll(validate, { timeout: 1_000 }).toEqual([]);
  });

  it('reads the store again within its TTL (5 s) when the event is lost', async () => {
    paused = true;
    const changed = Date.now();
    expect(await validate()).toEqual([]);
    await expect.poll(validate, { timeout: 6_000, interval: 250 }).toEqual(['STORE_CLOSED']);
    expect(Date.now() - changed).toBeLessThan(6_000);
    expect(asked.profiles).toBe(1);
  });

  it("never answers a test request with a live store's profile", async () => {
    expect(await validate('live')).toEqual([]);
    await expectAppError(validate('test'), 'STORE_NOT_FOUND');
    expect(await validate('live')).toEqual([]);
  });
});
