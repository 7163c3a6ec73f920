/**
 * The simulator as the platform runs it (`node dist/main.js` with PROCESSOR_DATA_DIR), killed
 * without warning: the charge it authorized and captured is refundable by the next process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { testCards } from '../src/simulator.js';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const API_KEY = 'sk_test_simulator';

let dataDir: string;
const children: ChildProcess[] = [];

/** Start the simulator's process; resolves with its URL once it listens. */
async function startProcess(): Promise<{ child: ChildProcess; url: string; charges: number }> {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', PROCESSOR_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  for await (const line of createInterface({ input: child.stdout })) {
    const { msg, url, charges } = JSON.parse(line) as { msg: string; url: string; charges: number };
    if (msg === 'processor simulator listening') return { child, url, charges };
  }
  throw new Error('the simulator exited before it listened');
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });

async function post(url: string, path: string, body: unknown, key: string) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${API_KEY}`,
      'idempotency-key': key,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
    body: (await response.json()) as any,
  };
}

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'pcp-simulator-'));
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    child.kill('SIGKILL');
    await exited(child);
  }
  rmSync(dataDir, { recursive: true, force: true });
});

it('refunds after a SIGKILL what it captured before it', async () => {
  const first = await startProcess();
  expect(first.charges).toBe(0);
  const card = { number: testCards.success, expMonth: 12, expYear: 2030, cvc: '123' };
  const { token } = (await post(first.url, '/v1/tokens', card, 'token-1')).body;
  const auth = await post(
    first.url,
    '/v1/authorizations',
    { token, amount: 2_500, currency: 'EUR' },
    'auth-1',
  );
  expect(auth.status).toBe(201);
  const capture = await post(
    first.url,
    `/v1/authorizations/${auth.body.id}/capture`,
    {},
    'capture-1',
  );
  expect(capture.status).toBe(200);
  first.child.kill('SIGKILL');
  await exited(first.child);

  const second = await startProcess();
  expect(second.charges).toBe(1);
  const refund = await post(
    second.url,
    '/v1/refunds',
    { authorization: auth.body.id, amount: 1_000 },
    'refund-1',
  );
  expect(refund).toMatchObject({
    status: 201,
    body: { authorization: auth.body.id, amount: 1_000 },
  });
  const retried = await post(
    second.url,
    `/v1/authorizations/${auth.body.id}/capture`,
    {},
    'capture-1',
  );
  expect(retried).toMatchObject({ status: 200, replayed: true, body: capture.body });
  const retrieved = await fetch(`${second.url}/v1/authorizations/${auth.body.id}`, {
    headers: { authorization: `Bearer ${API_KEY}` },
  });
  expect(await retrieved.json()).toMatchObject({
    status: 'partially_refunded',
    capturedAmount: 2_500,
    refundedAmount: 1_000,
  });
  second.child.kill('SIGTERM');
  expect(await exited(second.child)).toBe(0);
});
