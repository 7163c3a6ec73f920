// `npm start`: all set-up, then every service and the gateway as supervised processes with
// readable, prefixed logs. Ctrl-C stops everything cleanly.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import {
  build,
  ensureDatabase,
  ensureDependencies,
  ensureServers,
  fail,
  log,
  root,
} from './lib/setup.mjs';
import { localServiceEnv, processorPort } from './lib/local-env.mjs';

const port = Number(process.env.PORT ?? 8080);
// Each serves /health/ready and /metrics on its own ops port, off the gateway's public port.
// The card processor simulator stands in for the real processor (PAYMENT_PROCESSOR_URL).
const services = [
  {
    name: 'processor-simulator',
    label: 'processor',
    color: 90,
    readyUrl: `http://127.0.0.1:${processorPort}/health`,
    env: { PORT: String(processorPort) },
  },
  { name: 'stores', color: 36, opsPort: 9101 },
  { name: 'catalog', color: 35, opsPort: 9102 },
  { name: 'ordering', color: 33, opsPort: 9103 },
  { name: 'payments', color: 34, opsPort: 9104 },
  { name: 'gateway', color: 32, opsPort: 9100 },
];
const STOP_GRACE_MS = 15_000;
/** A process that dies sooner than this after starting is crashing at start. */
const CRASH_AT_START_MS = 30_000;
/** Crashes at start in a row that make a crash loop, explained once. */
const CRASH_LOOP_AFTER = 2;
const KEPT_ERROR_LINES = 6;
const levels = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const color = process.stdout.isTTY
  ? (code, text) => `\x1b[${code}m${text}\x1b[0m`
  : (_code, text) => text;

try {
  ensureDependencies();
  await ensureServers();
  await ensureDatabase();
  build();
} catch (error) {
  fail(error);
}

let stopping = false;
const children = new Map();

/** One pino JSON line → `12:00:00.123 stores   INFO  message key=value`. */
function format(service, line) {
  let entry;
  try {
    entry = JSON.parse(line);
  } catch {
    return `${color(service.color, (service.label ?? service.name).padEnd(9))} ${line}`;
  }
  const { time, level, msg, service: _s, pid: _p, hostname: _h, err, ...rest } = entry;
  const clock = typeof time === 'string' ? time.slice(11, 23) : '';
  const label = (levels[level] ?? String(level)).padEnd(5);
  const extra = Object.entries(rest)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const error = err ? `\n${err.stack ?? err.message}` : '';
  return `${clock} ${color(service.color, (service.label ?? service.name).padEnd(9))} ${level >= 50 ? color(31, label) : label} ${msg ?? ''} ${color(90, extra)}${error}`;
}

/**
 * What an error line says in short: a pino line of level 50 and above as its message and
 * error; a line on stderr that is not JSON (an uncaught error) unless it is a stack frame.
 */
function errorSummary(line, fromStderr) {
  let entry;
  try {
    entry = JSON.parse(line);
  } catch {
    const frame = /^\s+at\s|^Node\.js v|^\s*$/.test(line);
    return fromStderr && !frame ? line.trimEnd() : undefined;
  }
  if (!(entry.level >= 50)) return undefined;
  return [entry.msg, entry.err?.message].filter(Boolean).join(': ');
}

/** `database failing (nats, subjects pass)` from a /health/ready answer. */
function describeReadiness(status, body) {
  let checks;
  try {
    checks = JSON.parse(body).checks;
  } catch {
    // Not the service kit's JSON: only the status says something.
  }
  if (!checks || typeof checks !== 'object') return `HTTP ${status}`;
  const failing = Object.keys(checks).filter((name) => checks[name] !== true);
  const passing = Object.keys(checks).filter((name) => checks[name] === true);
  if (failing.length === 0) return `every check passes (${passing.join(', ')})`;
  return `${failing.join(', ')} failing${passing.length ? ` (${passing.join(', ')} pass)` : ''}`;
}

/**
 * Polls the process's readiness until it is ready or gone, keeping the last answer: what a
 * crash loop's explanation shows about the run that died.
 */
function watchReadiness(service, child) {
  const url = service.readyUrl ?? `http://127.0.0.1:${service.opsPort}/health/ready`;
  const seen = { url, answer: undefined };
  const timer = setInterval(() => {
    fetch(url, { signal: AbortSignal.timeout(1_000) })
      .then(async (response) => {
        seen.answer = describeReadiness(response.status, await response.text());
        if (response.ok) clearInterval(timer);
      })
      .catch(() => undefined);
  }, 1_000);
  timer.unref();
  child.once('exit', () => clearInterval(timer));
  return seen;
}

/** Once per crash loop: what the dead run's readiness said, and its last errors. */
function explainCrashLoop(service, readiness, errorLines) {
  const lines = [
    `${service.name} keeps crashing at start (${CRASH_LOOP_AFTER} times in a row, each within ${CRASH_AT_START_MS / 1000}s)`,
    `  readiness at ${readiness.url}: ${readiness.answer ?? 'never answered'}`,
    errorLines.length > 0 ? '  its last errors:' : '  it logged no error; see its lines above',
    ...errorLines.map((line) => `    ${line}`),
  ];
  process.stdout.write(`${color(31, '[setup]')} ${lines.join('\n')}\n`);
}

function launch(service, attempt = 0) {
  // The preload patches pg, redis, http and undici before the service loads them (tracing).
  const main = join(root, 'services', service.name, 'dist', 'main.js');
  const child = spawn(process.execPath, ['--import', '@pcp/service-kit/instrument', main], {
    cwd: root,
    env: {
      ...localServiceEnv(),
      ...process.env,
      PORT: String(port),
      ...(service.opsPort ? { OPS_PORT: String(service.opsPort) } : {}),
      ...service.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.set(service.name, child);
  const errorLines = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      process.stdout.write(`${format(service, line)}\n`);
      const summary = errorSummary(line, stream === child.stderr);
      if (summary) {
        errorLines.push(summary);
        if (errorLines.length > KEPT_ERROR_LINES) errorLines.shift();
      }
    });
  }
  const readiness = watchReadiness(service, child);
  const startedAt = Date.now();
  // 'close', not 'exit': the last lines (the fatal error) are read by then.
  child.on('close', (code, signal) => {
    children.delete(service.name);
    if (stopping) return;
    // A process that ran a while before dying starts over with a short delay.
    const next = Date.now() - startedAt > CRASH_AT_START_MS ? 0 : attempt + 1;
    const delay = Math.min(30_000, 1_000 * 2 ** next);
    if (next === CRASH_LOOP_AFTER) explainCrashLoop(service, readiness, errorLines);
    log(`${service.name} exited (${signal ?? code}); restarting in ${delay / 1000}s`);
    setTimeout(() => launch(service, next), delay).unref();
  });
}

/** Every process ready (its ops port's /health/ready), or false after a minute. */
async function waitForPlatform() {
  const ready = (service) =>
    fetch(service.readyUrl ?? `http://127.0.0.1:${service.opsPort}/health/ready`).then(
      (response) => response.ok,
      () => false,
    );
  for (let i = 0; i < 120; i++) {
    if ((await Promise.all(services.map(ready))).every(Boolean)) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

function stopAll(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping ${children.size} processes`);
  for (const child of children.values()) child.kill('SIGTERM');
  const force = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, STOP_GRACE_MS);
  const check = setInterval(() => {
    if (children.size === 0) {
      clearInterval(check);
      clearTimeout(force);
      log('stopped');
      process.exit(0);
    }
  }, 100);
}
process.on('SIGINT', () => stopAll('SIGINT'));
process.on('SIGTERM', () => stopAll('SIGTERM'));

for (const service of services) launch(service);

if (await waitForPlatform()) {
  const base = `http://localhost:${port}`;
  process.stdout.write(`
  Partner Commerce Platform is running
    Gateway    ${base}
    API docs   ${base}/docs
    OpenAPI    ${base}/openapi.json
    Health     ${base}/health/live
    Ops        readiness and metrics on 127.0.0.1:9100 (gateway) to 9104, /health/ready and /metrics
    Processor  the card processor simulator on http://127.0.0.1:${processorPort} (test cards in the README)

  Create partners and their API keys (the key is shown once):
    npm run admin -- create-partner --kind commerce --name "My Restaurant"
    npm run admin -- create-partner --kind distribution --name "My Marketplace"

  Press Ctrl-C to stop.

`);
} else if (!stopping) {
  log('the platform did not become ready; see the logs above');
}
