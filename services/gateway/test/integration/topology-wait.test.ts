import { applyJetStreamTopology, jetStreamTopology } from '@pcp/service-kit';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { Kysely } from 'kysely';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// A local run migrates each service as it starts, and a deployment's migration Job may still
// run as the gateways start: the gateway waits for the events stream its live streams read,
// instead of exiting on "stream not found".

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService | undefined;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  // The late prefix's streams start with the environment's prefix: its cleanup removes them.
  await env?.cleanup();
});

describe('a gateway starting before the JetStream topology exists', () => {
  it('waits for the events stream, then serves', async () => {
    const prefix = `${env.prefix}_late`;
    gateway = createLoneGateway(env, db, { NATS_SUBJECT_PREFIX: prefix });
    const started = gateway.start().then(() => 'started');
    // Still waiting, not failed, while the topology is missing.
    expect(await Promise.race([started, sleep(600, 'waiting')])).toBe('waiting');
    await applyJetStreamTopology(await env.nc.jetstreamManager(), jetStreamTopology(prefix));
    expect(await started).toBe('started');
    expect((await fetch(`${gateway.opsUrl()}/health/ready`)).status).toBe(200);
  });
});
