import { order } from '@pcp/contracts';
import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, orderingMigrations, type OrderingDatabase } from '../../src/app.js';
import { findOrder, toOrder } from '../../src/lifecycle/order.repository.js';

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

/** The last migration before delivery addresses were kept flat. */
const BEFORE_FLAT_ADDRESS = '2026-11-29T0100-delivery-origin';

const postal = {
  address1: '100 S Wacker Dr',
  address2: 'Suite 4',
  city: 'Chicago',
  state: 'IL',
  postalCode: '60606',
  country: 'US',
};
const point = { latitude: 41.8789, longitude: -87.6359 };
/** The address as orders carried it before: the postal fields one level down. */
const nestedAddress = { ...point, address: postal };
const flatAddress = { ...postal, ...point };

/** An order's details as place recorded them, with the delivery address given. */
function details(address: unknown) {
  return {
    amounts: {
      currency: 'USD',
      subTotal: 19.9,
      fees: 2.99,
      feesBreakdown: [{ type: 'DELIVERY', amount: 2.99 }],
      promotions: 0,
      taxes: 1.74,
      taxesBreakdown: [{ type: 'SALES_TAX', rate: 0.0875, amount: 1.74 }],
      adjustments: 0,
      tip: 2,
      total: 26.63,
    },
    cart: {
      catalogSetId: randomUUID(),
      storeId: randomUUID(),
      currency: 'USD',
      lineItems: [
        {
          itemId: randomUUID(),
          lineItemId: randomUUID(),
          quantity: 10,
          name: 'Soda',
          unitPrice: 1.99,
          totalPrice: 19.9,
          modifierGroups: [],
        },
      ],
      subTotal: 19.9,
      itemCount: 10,
      errors: [],
    },
    fulfillment: {
      mode: address === null ? 'PICKUP' : 'DELIVERY_BY_MERCHANT',
      scheduleType: 'ASAP',
      scheduledTime: null,
      address,
      deliveryType: address === null ? null : 'DOOR_TO_DOOR',
      instructions: null,
    },
    client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
    customer: null,
    paymentType: 'PAY_AT_STORE',
    payment: null,
    specialInstructions: null,
  };
}

async function insertOrder(address: unknown): Promise<string> {
  const orderId = randomUUID();
  const now = new Date();
  await db
    .insertInto('orders')
    .values({
      order_id: orderId,
      partner_id: randomUUID(),
      end_user_id: 'diner-1',
      store_id: randomUUID(),
      store_partner_id: randomUUID(),
      fulfillment_mode: address === null ? 'PICKUP' : 'DELIVERY_BY_MERCHANT',
      state: 'open',
      status: 'pending',
      version: 1,
      details: JSON.stringify(details(address)),
      charge_id: null,
      total_minor: 2_663,
      currency: 'USD',
      estimated_ready_at: null,
      cancel_reason: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return orderId;
}

/** A place attempt past validation; `answer` makes it finished, with its recorded reply. */
async function insertAttempt(address: unknown, answer?: string): Promise<string> {
  const key = randomUUID();
  await db
    .insertInto('place_attempts')
    .values({
      idempotency_key: key,
      partner_id: randomUUID(),
      end_user_id: 'diner-1',
      fingerprint: 'f'.repeat(64),
      order_id: randomUUID(),
      step: answer === undefined ? 'validated' : 'recorded',
      snapshot: JSON.stringify({ storeId: randomUUID(), details: details(address) }),
      charge_id: null,
      store_rejection: null,
      lease_owner: null,
      lease_expires_at: null,
      response_status: answer === undefined ? null : 201,
      response_body: answer ?? null,
      expires_at: new Date(Date.now() + 86_400_000),
    })
    .execute();
  return key;
}

const readOrder = async (orderId: string) => toOrder((await findOrder(db, orderId))!);

/** A place attempt's snapshot address and its recorded answer. */
async function attemptOf(key: string) {
  const row = await db
    .selectFrom('place_attempts')
    .select(['snapshot', 'response_body'])
    .where('idempotency_key', '=', key)
    .executeTakeFirstOrThrow();
  return { address: row.snapshot?.details.fulfillment.address, responseBody: row.response_body };
}

function migrator() {
  return new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: ORDERING_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(orderingMigrations) },
  });
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

describe('the flat order address migration', () => {
  it('rewrites stored orders and unfinished place attempts; recorded answers stay as sent', async () => {
    // The template database is migrated: step back to before the flat address.
    expect((await migrator().migrateTo(BEFORE_FLAT_ADDRESS)).error).toBeUndefined();
    const delivery = await insertOrder(nestedAddress);
    const pickup = await insertOrder(null);
    const unfinished = await insertAttempt(nestedAddress);
    const recordedBody = JSON.stringify({ fulfillment: { address: nestedAddress } });
    const finished = await insertAttempt(nestedAddress, recordedBody);

    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);

    const migrated = await readOrder(delivery);
    expect(migrated.fulfillment.address).toEqual(flatAddress);
    // What GET /v1/marketfront/orders/{orderId} serves is the contract's Order.
    expect(order.safeParse(migrated).success).toBe(true);
    expect((await readOrder(pickup)).fulfillment.address).toBeNull();
    expect(await attemptOf(unfinished)).toEqual({ address: flatAddress, responseBody: null });
    // A finished attempt is never resumed: its answer is replayed byte for byte.
    expect(await attemptOf(finished)).toEqual({
      address: nestedAddress,
      responseBody: recordedBody,
    });
  });

  it('nests the address again when rolled back', async () => {
    const delivery = await insertOrder(flatAddress);
    const unfinished = await insertAttempt(flatAddress);
    expect((await migrator().migrateTo(BEFORE_FLAT_ADDRESS)).error).toBeUndefined();
    expect((await readOrder(delivery)).fulfillment.address).toEqual(nestedAddress);
    expect((await attemptOf(unfinished)).address).toEqual(nestedAddress);
    await migrateToLatest(db, ORDERING_SCHEMA, orderingMigrations);
    expect((await readOrder(delivery)).fulfillment.address).toEqual(flatAddress);
    expect((await attemptOf(unfinished)).address).toEqual(flatAddress);
  });
});
