import { join } from 'node:path';
import {
  gatewayDefaultPort,
  platformOpsPorts,
  platformServices,
  processorSimulatorDefaultPort,
  type PlatformProcess,
} from '@pcp/contracts';
import { entryOf, repositoryRoot } from '@pcp/service-kit/local-processes';

/** How one process of the platform is started and how it says it is ready. */
export interface ProcessDefinition {
  readonly name: PlatformProcess;
  /** Its build's entry point (`node <entry>`; `node <entry> migrate` for the database owners). */
  readonly entry: string;
  /**
   * Where it answers `readyPath` by default: the ops port (`OPS_PORT`) of a service, the
   * simulator's only port (`PORT`).
   */
  readonly opsPort: number;
  /** The variable that moves `opsPort`. */
  readonly opsPortVariable: 'OPS_PORT' | 'PORT';
  /** Answers 2xx once the process serves. */
  readonly readyPath: '/health/ready' | '/health';
  /** The public HTTP port (`PORT`): the gateway's. */
  readonly publicPort?: number;
  /** Runs database migrations (`node <entry> migrate`). */
  readonly migrates: boolean;
}

/**
 * Every process of the platform in start order: the simulator first (payments calls it), the
 * gateway last (it calls the others). Services take their ops ports from `@pcp/contracts`.
 */
export const platformProcesses: readonly ProcessDefinition[] = [
  {
    name: 'processor-simulator',
    entry: entryOf('processor-simulator'),
    opsPort: processorSimulatorDefaultPort,
    opsPortVariable: 'PORT',
    readyPath: '/health',
    migrates: false,
  },
  ...platformServices.map((name): ProcessDefinition => ({
    name,
    entry: entryOf(name),
    opsPort: platformOpsPorts[name],
    opsPortVariable: 'OPS_PORT',
    readyPath: '/health/ready',
    migrates: true,
    ...(name === 'gateway' ? { publicPort: gatewayDefaultPort } : {}),
  })),
];

/** The definition of `name`; throws for a name the platform does not have. */
export function processDefinition(name: string): ProcessDefinition {
  const found = platformProcesses.find((definition) => definition.name === name);
  if (!found) throw new Error(`the platform has no process ${name}`);
  return found;
}

/**
 * The environment every process gets on a developer's machine (`npm start`, `npm run dev`):
 * loopback, plain http to this machine's test CatalogSets, store submission URLs and webhook
 * receivers (production keeps https and public hosts only), and the simulator's data folder.
 */
export function localEnv(processorPort = processorSimulatorDefaultPort): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    OPS_HOST: '127.0.0.1',
    CATALOG_FETCH_ALLOW_HTTP: 'true',
    CATALOG_FETCH_ALLOWLIST: '127.0.0.0/8,::1/128',
    ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
    ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.0/8,::1/128',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOWLIST: '127.0.0.0/8,::1/128',
    // The simulator is both processors: live mode's and the sandbox of test mode.
    PAYMENT_PROCESSOR_URL: `http://127.0.0.1:${processorPort}`,
    SANDBOX_PROCESSOR_URL: `http://127.0.0.1:${processorPort}`,
    // It keeps its ledger across a stop and start, as the orders that charged it do, in the
    // folder of the project's own servers (git-ignored).
    PROCESSOR_DATA_DIR: join(repositoryRoot, '.data', 'processor-simulator'),
  };
}
