import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeReadiness, errorSummary } from '../src/log-lines.js';
import { Supervisor, type ProcessSpec } from '../src/supervisor.js';

/** Serves its EXTRA variable on PORT at once, or exits 1 at once when CRASH is set. */
const SERVER = `
if (process.env.CRASH) { console.error('Error: cannot start'); process.exit(1); }
require('node:http').createServer((_, res) => res.end(JSON.stringify({ extra: process.env.EXTRA ?? null }))).listen(Number(process.env.PORT), '127.0.0.1');
`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function spec(name: string, env: Record<string, string> = {}): Promise<ProcessSpec> {
  const port = await freePort();
  return {
    name,
    service: name.split('#')[0]!,
    args: ['-e', SERVER],
    env: { PATH: process.env.PATH ?? '', PORT: String(port), ...env },
    readyUrls: [`http://127.0.0.1:${port}/`],
  };
}

const fast = { firstDelayMs: 50, maxDelayMs: 200, crashAtStartMs: 5_000, crashLoopAfter: 2 };
let supervisor: Supervisor | undefined;
afterEach(() => supervisor?.stop());

describe('Supervisor', () => {
  it('starts processes, restarts one that is killed and records its downtime', async () => {
    supervisor = new Supervisor({ restart: fast, logs: 'ignore', say: () => undefined });
    await supervisor.start([await spec('web#1'), await spec('web#2')], 20_000);
    expect(supervisor.replicas('web')).toEqual(['web#1', 'web#2']);
    const before = supervisor.child('web#1')!.pid;
    supervisor.kill('web#1');
    expect(supervisor.notReady()).toEqual(['web#1']);
    expect(await supervisor.waitAllReady(20_000)).toBe(true);
    expect(supervisor.child('web#1')!.pid).not.toBe(before);
    expect(supervisor.downtimes).toHaveLength(1);
    expect(supervisor.downtimes[0]!.to).toBeGreaterThanOrEqual(supervisor.downtimes[0]!.from);
  });

  it('leaves a process down without restarts, and says so', async () => {
    const said: string[] = [];
    supervisor = new Supervisor({ restart: false, logs: 'ignore', say: (line) => said.push(line) });
    await supervisor.start([await spec('web')], 20_000);
    supervisor.kill('web');
    await expect.poll(() => said).toEqual(['web exited early (SIGKILL)']);
    expect(await supervisor.waitAllReady(500)).toBe(false);
  });

  it('explains a crash loop once, with the errors the process printed', async () => {
    const said: string[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'supervisor-'));
    supervisor = new Supervisor({ restart: fast, logs: { dir }, say: (line) => said.push(line) });
    await expect(supervisor.start([await spec('web', { CRASH: '1' })], 2_000)).rejects.toThrow(
      /not ready after 2 s: web/,
    );
    const explanations = said.filter((line) => line.includes('keeps crashing at start'));
    expect(explanations).toHaveLength(1);
    expect(explanations[0]).toContain('readiness at http://127.0.0.1:');
    expect(explanations[0]).toContain('never answered');
    expect(explanations[0]).toContain('Error: cannot start');
    await supervisor.stop();
    rmSync(dir, { recursive: true });
  });

  it('restarts the replicas of a service one at a time with a changed environment', async () => {
    supervisor = new Supervisor({ restart: fast, logs: 'ignore', say: () => undefined });
    const specs = [await spec('web#1'), await spec('web#2')];
    await supervisor.start(specs, 20_000);
    await supervisor.restartWith('web', { EXTRA: 'yes' }, 20_000);
    for (const { readyUrls } of specs) {
      expect(await (await fetch(readyUrls[0]!)).json()).toEqual({ extra: 'yes' });
    }
  });
});

describe('log lines', () => {
  it('summarises error lines: pino errors and uncaught errors, not stack frames', () => {
    const pino = JSON.stringify({ level: 50, msg: 'failed to start', err: { message: 'boom' } });
    expect(errorSummary(pino, false)).toBe('failed to start: boom');
    expect(errorSummary(JSON.stringify({ level: 30, msg: 'fine' }), false)).toBeUndefined();
    expect(errorSummary('Error: boom', true)).toBe('Error: boom');
    expect(errorSummary('    at main (file.js:1:1)', true)).toBeUndefined();
    expect(errorSummary('plain output', false)).toBeUndefined();
  });

  it('says which readiness checks fail', () => {
    const body = JSON.stringify({ checks: { nats: true, database: false } });
    expect(describeReadiness(503, body)).toBe('database failing (nats pass)');
    expect(describeReadiness(503, 'nope')).toBe('HTTP 503');
  });
});
