// `npm start` (scripts/start.mjs runs the set-up first, then this): every service, the gateway
// and the card processor simulator as supervised processes with readable, prefixed logs.
// Ctrl-C stops everything cleanly. PORT moves the gateway, PROCESSOR_SIMULATOR_PORT the simulator.
import {
  gatewayDefaultPort,
  platformOpsPorts,
  processorSimulatorDefaultPort,
} from '@pcp/contracts';
import { launchPlatform } from './launch.js';
import { paint } from './log-lines.js';
import { localEnv } from './processes.js';

const port = Number(process.env.PORT ?? gatewayDefaultPort);
const processorPort = Number(process.env.PROCESSOR_SIMULATOR_PORT ?? processorSimulatorDefaultPort);
const say = (message: string) => process.stdout.write(`${paint(90, '[platform]')} ${message}\n`);

const stopping = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping.signal.aborted) return;
    say(`${signal}: stopping the platform`);
    stopping.abort();
  });
}

try {
  const platform = await launchPlatform({
    // A variable already set wins over the local defaults.
    env: { ...localEnv(processorPort), ...definedVariables() },
    gatewayPort: port,
    processorPort,
    readyTimeoutMs: 60_000,
    whenNotReady: 'report',
    say,
    signal: stopping.signal,
  });
  if (!stopping.signal.aborted && platform.supervisor.notReady().length === 0) banner();
  await new Promise((resolve) => stopping.signal.addEventListener('abort', resolve));
  await platform.stop();
} catch (error) {
  if (!stopping.signal.aborted) throw error;
}
say('stopped');
process.exit(0);

function definedVariables(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
}

function banner(): void {
  const base = `http://localhost:${port}`;
  const opsPorts = Object.values(platformOpsPorts).sort((a, b) => a - b);
  process.stdout.write(`
  Partner Commerce Platform is running
    Gateway    ${base}
    API docs   ${base}/docs
    OpenAPI    ${base}/openapi.json
    Health     ${base}/health/live
    Ops        readiness and metrics on 127.0.0.1:${opsPorts[0]} (gateway) to ${opsPorts.at(-1)}, /health/ready and /metrics
    Processor  the card processor simulator on http://127.0.0.1:${processorPort} (test cards: docs/guide/payments.md#test-cards)

  Create partners and their API keys (the key is shown once):
    npm run admin -- create-partner --kind commerce --name "My Restaurant"
    npm run admin -- create-partner --kind distribution --name "My Marketplace"

  Press Ctrl-C to stop.

`);
}
