import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startNestPeer } from '../src/floors/nest-peer/peer.js';

const children: ChildProcess[] = [];
const starter = {
  startChild(_name: string, args: string[], options: SpawnOptions) {
    const child = spawn(process.execPath, args, options);
    children.push(child);
    return child;
  },
};

let env: TestEnvironment;
let url: string;
let storeId: string;

beforeAll(async () => {
  env = await createTestEnvironment();
  ({ url, storeId } = await startNestPeer(starter, {
    databaseUrl: env.databaseUrl,
    natsUrl: inject('servers').natsUrl,
    prefix: env.prefix,
  }));
});

afterAll(async () => {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  await env?.cleanup();
});

describe('the NestJS peer', () => {
  it('answers a store by id through HTTP → NATS → Postgres', async () => {
    const response = await fetch(`${url}/stores/${storeId}`);
    expect(response.status).toBe(200);
    const store = (await response.json()) as Record<string, unknown>;
    expect(store).toMatchObject({
      id: storeId,
      timezone: 'America/Chicago',
      fulfillmentTypes: ['PICKUP', 'DELIVERY_BY_MERCHANT'],
      address: { city: 'Chicago' },
    });
    expect(store.name).toMatch(/^Peer Store \d+$/);
  });

  it('rejects a malformed id with 400 before any NATS request (class-validator)', async () => {
    const response = await fetch(`${url}/stores/not-a-uuid`);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ message: ['id must be a UUID'] });
  });

  it('answers 404 for a well-formed id of no store', async () => {
    const response = await fetch(`${url}/stores/00000000-0000-4000-8000-000000000000`);
    expect(response.status).toBe(404);
  });
});
