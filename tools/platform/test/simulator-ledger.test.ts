/**
 * The run, with the simulator alone: `npm start`, a charge captured, the simulator
 * killed (the supervisor restarts it), then the platform stopped and started again; the charge
 * is still refundable. A temporary folder stands in for npm start's .data/processor-simulator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repositoryRoot } from '@pcp/service-kit/local-processes';
import { afterEach, expect, it } from 'vitest';
import { launchPlatform, type LaunchedPlatform } from '../src/launch.js';
import { localEnv } from '../src/processes.js';

let dataDir: string | undefined;
let platform: LaunchedPlatform | undefined;
afterEach(async () => {
  await platform?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const start = () =>
  launchPlatform({
    processes: ['processor-simulator'],
    ports: 'free',
    baseEnv: { PATH: process.env.PATH ?? '' },
    env: { ...localEnv(), PROCESSOR_DATA_DIR: dataDir! },
    restart: { firstDelayMs: 50 },
    logs: 'ignore',
    instrument: false,
    say: () => undefined,
    readyTimeoutMs: 20_000,
  });

async function post(path: string, body: unknown, key: string) {
  const response = await fetch(`${platform!.processorUrl}${path}`, {
    method: 'POST',
    headers: {
      authorization: 'Bearer sk_test_simulator',
      'idempotency-key': key,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  return { status: response.status, body: (await response.json()) as any };
}

it("npm start keeps the simulator's ledger across a crash and a stop and start", async () => {
  expect(localEnv().PROCESSOR_DATA_DIR).toBe(join(repositoryRoot, '.data', 'processor-simulator'));
  dataDir = mkdtempSync(join(tmpdir(), 'pcp-simulator-'));
  platform = await start();
  const card = { number: '4242424242424242', expMonth: 12, expYear: 2030, cvc: '123' };
  const { token } = (await post('/v1/tokens', card, 'token')).body;
  const { id } = (await post('/v1/authorizations', { token, amount: 900, currency: 'EUR' }, 'a'))
    .body;
  expect((await post(`/v1/authorizations/${id}/capture`, {}, 'capture')).status).toBe(200);

  platform.supervisor.kill('processor-simulator');
  expect(await platform.supervisor.waitAllReady(20_000)).toBe(true);
  expect((await post('/v1/refunds', { authorization: id, amount: 400 }, 'refund-1')).status).toBe(
    201,
  );

  await platform.stop();
  platform = await start();
  const refund = await post('/v1/refunds', { authorization: id, amount: 500 }, 'refund-2');
  expect(refund).toMatchObject({ status: 201, body: { authorization: id, amount: 500 } });
});
