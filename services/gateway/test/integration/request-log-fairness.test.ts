import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartner } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// The request log's limits per tenant (docs/guide/requests.md#retention): one tenant's flood
// drops its own rows only, and its log never outgrows its cap, on gateways alone.

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
const opened: GatewayService[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
});

afterAll(async () => {
  for (const gateway of opened) await gateway.stop();
  await db?.destroy();
  await env?.cleanup();
});

async function startGateway(config: Record<string, string>): Promise<GatewayService> {
  const gateway = createLoneGateway(env, db, config);
  opened.push(gateway);
  await gateway.start();
  return gateway;
}

/** A GET of the partner's; answers the request's id. */
async function call(gateway: GatewayService, path: string, apiKey: string): Promise<string> {
  const response = await fetch(`${gateway.url()}${path}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  await response.arrayBuffer();
  return response.headers.get('x-request-id')!;
}

const newPartner = () => createPartner(db, { kind: 'commerce', name: `Fair ${randomUUID()}` });

/** The tenant's logged request ids, in the order they were written. */
const loggedIds = async (tenantId: string) =>
  (
    await db
      .selectFrom('request_log')
      .select('request_id')
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .execute()
  ).map((row) => row.request_id);

/** The value of the dropped-rows counter with `reason`. */
async function dropped(gateway: GatewayService, reason: string): Promise<number> {
  const text = await (await fetch(`${gateway.opsUrl()}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (each) =>
        each.startsWith('pcp_gateway_request_log_dropped_total{') &&
        each.includes(`reason="${reason}"`),
    );
  return Number(line?.split(' ').at(-1) ?? 0);
}

describe('the request log buffer', () => {
  it('drops only the flooding tenant’s own oldest rows past its share, counted', async () => {
    const gateway = await startGateway({
      REQUEST_LOG_FLUSH_MS: '60000',
      REQUEST_LOG_BUFFER_MAX_ROWS: '20',
      REQUEST_LOG_BUFFER_MAX_ROWS_PER_PARTNER: '5',
    });
    const quiet = await newPartner();
    const flooder = await newPartner();
    const quietIds: string[] = [];
    for (let i = 0; i < 3; i++)
      quietIds.push(await call(gateway, '/v1/commerce/keys', quiet.apiKey));
    const floodIds: string[] = [];
    for (let i = 0; i < 30; i++) floodIds.push(await call(gateway, `/v1/zz${i}`, flooder.apiKey));

    expect(await dropped(gateway, 'tenant_buffer_full')).toBe(25);
    expect(await dropped(gateway, 'buffer_full')).toBe(0);
    // Closing writes what is held.
    opened.splice(opened.indexOf(gateway), 1);
    await gateway.stop();
    expect(await loggedIds(quiet.partnerId)).toEqual(quietIds);
    expect(await loggedIds(flooder.partnerId)).toEqual(floodIds.slice(-5));
  });
});

describe('the per-tenant cap', () => {
  it('holds at every write, across replicas, with no sweep', async () => {
    const cap = 5;
    const config = {
      REQUEST_LOG_FLUSH_MS: '10',
      REQUEST_LOG_MAX_PER_PARTNER: String(cap),
      REQUEST_LOG_SWEEP_INTERVAL_MS: '86400000',
    };
    const replicas = [await startGateway(config), await startGateway(config)];
    const flooder = await newPartner();
    const sent: string[] = [];
    const counts: number[] = [];
    for (let round = 0; round < 15; round++) {
      sent.push(
        ...(await Promise.all(
          replicas.map((gateway, i) => call(gateway, `/v1/zz${round}-${i}`, flooder.apiKey)),
        )),
      );
      counts.push((await loggedIds(flooder.partnerId)).length);
    }
    await expect
      .poll(() => loggedIds(flooder.partnerId))
      .toEqual(expect.arrayContaining(sent.slice(-2)));
    counts.push((await loggedIds(flooder.partnerId)).length);

    expect(Math.max(...counts)).toBeLessThanOrEqual(cap);
    const kept = await loggedIds(flooder.partnerId);
    expect(kept).toHaveLength(cap);
    // The newest are kept (the two replicas' last writes may interleave).
    expect(sent.slice(-cap - 2)).toEqual(expect.arrayContaining(kept));
    const counted = await db
      .selectFrom('request_log_tenant_rows')
      .select('row_count')
      .where('tenant_id', '=', flooder.partnerId)
      .executeTakeFirstOrThrow();
    expect(Number(counted.row_count)).toBe(cap);
  });
});
