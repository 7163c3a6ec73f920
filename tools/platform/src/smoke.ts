// Smoke test (CI runs it after `npm test`; `node scripts/smoke.mjs` locally): `npm start` in the
// background, logging to .data/smoke-start.log; once every process is ready, `npm run demo`
// against it and `npm run demo -- --sandbox`, then `pcp listen` (its connection dropped once)
// and `pcp trigger` with a test key (smoke-sandbox.ts); then Ctrl-C (SIGINT) to `npm start`
// and wait until it stopped. Exit 0 only when both demos and the sandbox part passed and the
// platform stopped cleanly; on failure the log's tail is printed.
// PORT and PROCESSOR_SIMULATOR_PORT move the gateway and the simulator as for `npm start`; the
// services' ops ports (platformProcesses) are fixed, so they must be free.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { gatewayDefaultPort, processorSimulatorDefaultPort } from '@pcp/contracts';
import { repositoryRoot as root } from '@pcp/service-kit/local-processes';
import { platformProcesses } from './processes.js';
import { smokeSandboxStream } from './smoke-sandbox.js';

const dataDir = join(root, '.data');
const port = Number(process.env.PORT ?? gatewayDefaultPort);
const processorPort = Number(process.env.PROCESSOR_SIMULATOR_PORT ?? processorSimulatorDefaultPort);
const services = platformProcesses.filter(({ name }) => name !== 'processor-simulator');
const OPS_PORTS = services.map(({ opsPort }) => opsPort);
/** Set-up on a fresh machine (npm ci, build, migrations) comes first. */
const READY_TIMEOUT_MS = 120_000;
/** npm start gives its processes 15 s to stop before killing them (Supervisor.stop). */
const STOP_TIMEOUT_MS = 30_000;
const LOG_TAIL_LINES = 80;
const logFile = join(dataDir, 'smoke-start.log');

const say = (message: string) => process.stdout.write(`[smoke] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function portInUse(candidate: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: candidate });
    const done = (used: boolean) => {
      socket.destroy();
      resolve(used);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function printLogTail() {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return;
  }
  const lines = text.trimEnd().split('\n');
  say(`the last ${Math.min(LOG_TAIL_LINES, lines.length)} lines of ${logFile}:`);
  process.stdout.write(`${lines.slice(-LOG_TAIL_LINES).join('\n')}\n`);
}

/** Resolves with the child's exit code (or its signal's name). */
const exited = (child: ChildProcess) =>
  new Promise<number | string | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(child.exitCode ?? child.signalCode);
    } else child.once('exit', (code, signal) => resolve(code ?? signal));
  });

const readyUrls = [
  ...services.map(({ opsPort, readyPath }) => `http://127.0.0.1:${opsPort}${readyPath}`),
  `http://127.0.0.1:${processorPort}/health`,
];
const allReady = async () =>
  (
    await Promise.all(
      readyUrls.map((url) =>
        fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
          (response) => response.ok,
          () => false,
        ),
      ),
    )
  ).every(Boolean);

async function main(): Promise<number> {
  const busy: number[] = [];
  for (const candidate of [port, processorPort, ...OPS_PORTS]) {
    if (await portInUse(candidate)) busy.push(candidate);
  }
  if (busy.length > 0) {
    say(`in use: port ${busy.join(', ')}. Stop what listens there and run again`);
    say('(PORT and PROCESSOR_SIMULATOR_PORT move the gateway and the simulator).');
    return 1;
  }

  mkdirSync(dataDir, { recursive: true });
  const log = openSync(logFile, 'w');
  say(`npm start (log: ${logFile})`);
  // `npm start` is `node scripts/start.mjs`; run it directly so SIGINT reaches it, not npm.
  const platform = spawn(process.execPath, [join(root, 'scripts/start.mjs')], {
    cwd: root,
    stdio: ['ignore', log, log],
  });
  const platformExit = exited(platform);
  const passed = await readyThenDemo(platform);
  const stopped = await stop(platform, platformExit);
  if (!passed || !stopped) printLogTail();
  return passed && stopped ? 0 : 1;
}

/** Wait until every process is ready, then run the demo and the sandbox part; true when they passed. */
async function readyThenDemo(platform: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let ready = false;
  while (!ready && Date.now() < deadline && platform.exitCode === null) {
    await sleep(500);
    ready = await allReady();
  }
  if (!ready) {
    say(
      platform.exitCode === null
        ? `the platform was not ready within ${READY_TIMEOUT_MS / 1000} s`
        : `npm start exited (${platform.exitCode}) before the platform was ready`,
    );
    return false;
  }
  // The demo runs from its TypeScript sources (a workspace's, through tsx), as npm run demo does:
  // with live keys, then with test keys.
  const demoArgs = ['--conditions=@pcp/source', '--import', 'tsx', 'tools/demo/src/main.ts'];
  say('the platform is ready');
  for (const flags of [[], ['--sandbox']]) {
    say(`npm run demo${flags.length > 0 ? ` -- ${flags.join(' ')}` : ''}`);
    const demo = spawn(process.execPath, [...demoArgs, ...flags], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, DEMO_BASE_URL: `http://localhost:${port}` },
    });
    const code = await exited(demo);
    if (code !== 0) {
      say(`the demo${flags.length > 0 ? ` ${flags.join(' ')}` : ''} failed (exit ${code})`);
      return false;
    }
  }
  return smokeSandboxStream(`http://127.0.0.1:${port}`);
}

/** Ctrl-C to npm start, as a developer would; true when it stopped cleanly in time. */
async function stop(
  platform: ChildProcess,
  platformExit: Promise<number | string | null>,
): Promise<boolean> {
  if (platform.exitCode !== null || platform.signalCode !== null) {
    say(`npm start had already exited (${platform.exitCode ?? platform.signalCode})`);
    return false;
  }
  say('stopping npm start (SIGINT)');
  platform.kill('SIGINT');
  const code = await Promise.race([platformExit, sleep(STOP_TIMEOUT_MS).then(() => 'timeout')]);
  if (code === 'timeout') {
    say(`npm start did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it`);
    platform.kill('SIGKILL');
    await platformExit;
    return false;
  }
  if (code !== 0) say(`npm start stopped with ${code}`);
  return code === 0;
}

process.exitCode = await main();
