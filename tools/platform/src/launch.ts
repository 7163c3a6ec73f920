import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { PlatformProcess, PlatformService } from '@pcp/contracts';
import { freePort, nodeArgsOf, repositoryRoot } from '@pcp/service-kit/local-processes';
import { childrenOf, memoryOf } from './proc.js';
import { platformProcesses, processDefinition, type ProcessDefinition } from './processes.js';
import {
  developerRestarts,
  Supervisor,
  type LogTarget,
  type ProcessSpec,
  type RestartPolicy,
} from './supervisor.js';

/** What `launchPlatform` starts and how. Every field is optional. */
export interface LaunchOptions {
  /** The processes to run, in the list's order whatever the order here. Default: all. */
  readonly processes?: readonly PlatformProcess[];
  /**
   * Processes of each service: one number for every service or a count per service (default 1;
   * the simulator always runs once). With one, a process is named as its service (`ordering`);
   * with more, `ordering#1`, `ordering#2`…
   */
  readonly replicas?: number | Partial<Record<PlatformService, number>>;
  /**
   * `default`: the list's ports (8080, 9100–9104, 4010) for the first replica of each process
   * and free ports for the others; `free`: free ports for every process (several platforms on
   * one machine). Default `default`.
   */
  readonly ports?: 'default' | 'free';
  /** The gateway's public port, whatever `ports` says. */
  readonly gatewayPort?: number;
  /** The simulator's port, whatever `ports` says. */
  readonly processorPort?: number;
  /**
   * Several gateways share one public port through node:cluster (one process, a worker per
   * replica, each with its own ops port), as behind a load balancer; otherwise each gateway
   * has a port of its own (`gatewayUrls`). Default false.
   */
  readonly gatewayCluster?: boolean;
  /** The environment every process starts from. Default `process.env`. */
  readonly baseEnv?: Readonly<Record<string, string | undefined>>;
  /** Variables for every process, over `baseEnv`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Variables for one process, over `env`, e.g. `{ ordering: { WEBHOOK_POLL_MS: '250' } }`. */
  readonly serviceEnv?: Partial<Record<PlatformProcess, Readonly<Record<string, string>>>>;
  /**
   * `on-start`: the first replica of each service migrates as it starts, the others start once
   * it is ready (two at once race on the migration tables). `before`: `node main.js migrate` of
   * each service and catalog's `jetstream-topology` first, then every process at once with
   * `MIGRATE_ON_START=false`, as the deployment's migration job does. Default `on-start`.
   */
  readonly migrate?: 'on-start' | 'before';
  /**
   * Start a process that exits again: true (default) with `npm start`'s back-off, or with some
   * of the policy changed; false leaves it down and reports it.
   */
  readonly restart?: boolean | Partial<RestartPolicy>;
  /** Where the processes' output goes. Default `stdout` (prefixed, readable lines). */
  readonly logs?: LogTarget;
  /** Preload the tracing instrumentation as the image does. Default true. */
  readonly instrument?: boolean;
  /** Node flags for every service, e.g. `['--cpu-prof', '--cpu-prof-dir=/tmp/p']`. */
  readonly nodeFlags?: readonly string[];
  /** Where the supervisor's own lines go (exits, restarts, crash loops). Default stdout. */
  readonly say?: (message: string) => void;
  /** How long the platform may take to be ready. Default 300 s. */
  readonly readyTimeoutMs?: number;
  /**
   * `throw` (default): a platform not ready in time is stopped and the launch rejects, naming
   * what is not ready. `report`: say so and resolve anyway, the supervisor still restarting
   * what exits (`npm start`, where the developer reads the logs).
   */
  readonly whenNotReady?: 'throw' | 'report';
  /** Aborting it stops the platform, also while it starts (the launch then rejects). */
  readonly signal?: AbortSignal;
}

/** A running platform: where it answers, its processes, and its stop. */
export interface LaunchedPlatform {
  /** Starts, kills and restarts its processes; records their downtimes. */
  readonly supervisor: Supervisor;
  /** The first gateway's public URL, e.g. `http://127.0.0.1:8080`. */
  readonly gatewayUrl: string;
  /** Every gateway's public URL (one with `gatewayCluster`). */
  readonly gatewayUrls: readonly string[];
  /** Where the processor simulator answers (payments' `PAYMENT_PROCESSOR_URL`). */
  readonly processorUrl: string;
  /** Every replica's ops URL of a process (`http://127.0.0.1:9103`), replica 1's first. */
  opsUrls(process: PlatformProcess): string[];
  /**
   * The pids of a process name's processes (`ordering` → `ordering`, `ordering#2`…, or a name
   * as `ordering#2` alone) and of their children (a gateway cluster's workers): what a CPU or
   * memory figure of that name sums over.
   */
  pidsOf(name: string): number[];
  /**
   * Peak and current resident memory of every process still running (a gateway cluster's
   * workers named as replicas, then its primary). Ask before `stop`: a peak goes with its
   * process.
   */
  memory(): { name: string; pid: number; peakRssBytes: number; rssBytes: number }[];
  /** SIGTERM every process (SIGKILL after 15 s) and wait until all have exited. */
  stop(): Promise<void>;
}

/**
 * The gateway cluster's primary, from its build as the services run from theirs (through tsx
 * its loader would be one more child process, counted as a gateway).
 */
const clusterScript = join(repositoryRoot, 'tools', 'platform', 'dist', 'gateway-cluster.js');

const url = (port: number, path = '') => `http://127.0.0.1:${port}${path}`;

/**
 * Run the platform as processes from its builds (`npx tsc -b` first) on the servers the
 * environment names, and resolve once every process is ready. For `npm start`, the benches,
 * the fault and fuzz suites; what each needs is an option.
 *
 * @example
 * const platform = await launchPlatform({ ports: 'free', replicas: 2, logs: 'inherit' });
 * try {
 *   await fetch(`${platform.gatewayUrl}/health/live`);
 * } finally {
 *   await platform.stop();
 * }
 */
export async function launchPlatform(options: LaunchOptions = {}): Promise<LaunchedPlatform> {
  const wanted = new Set(options.processes ?? platformProcesses.map(({ name }) => name));
  const definitions = platformProcesses.filter(({ name }) => wanted.has(name));
  const replicasOf = (name: PlatformProcess): number =>
    name === 'processor-simulator'
      ? 1
      : typeof options.replicas === 'number'
        ? options.replicas
        : (options.replicas?.[name] ?? 1);
  /** The list's port for a first replica (unless `ports: 'free'`), a free port otherwise. */
  const portFor = async (listed: number | undefined, replica: number, fixed?: number) =>
    fixed ?? (options.ports !== 'free' && replica === 1 && listed ? listed : await freePort());
  const gatewayPortFor = (definition: ProcessDefinition, replica: number) =>
    portFor(definition.publicPort, replica, replica === 1 ? options.gatewayPort : undefined);

  const processorPort = await portFor(
    processDefinition('processor-simulator').opsPort,
    1,
    options.processorPort,
  );
  const processorUrl = url(processorPort);
  const envOf = (name: PlatformProcess): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(options.baseEnv ?? process.env)) {
      if (value !== undefined) env[key] = value;
    }
    // The simulator is both processors: live mode's and the sandbox of test mode.
    if (wanted.has('processor-simulator')) {
      env.PAYMENT_PROCESSOR_URL = processorUrl;
      env.SANDBOX_PROCESSOR_URL = processorUrl;
    }
    return { ...env, ...options.env, ...options.serviceEnv?.[name] };
  };
  const args = (name: PlatformProcess) =>
    nodeArgsOf(name, { instrument: options.instrument, nodeFlags: options.nodeFlags });

  const first: ProcessSpec[] = [];
  const later: ProcessSpec[] = [];
  const opsPorts = new Map<PlatformProcess, number[]>();
  const gatewayUrls: string[] = [];
  for (const definition of definitions) {
    const { name } = definition;
    const count = replicasOf(name);
    const ports: number[] = [];
    for (let replica = 1; replica <= count; replica++) {
      ports.push(
        await portFor(
          definition.opsPort,
          replica,
          name === 'processor-simulator' ? processorPort : undefined,
        ),
      );
    }
    opsPorts.set(name, ports);
    const readyUrls = ports.map((port) => url(port, definition.readyPath));
    if (name === 'gateway' && options.gatewayCluster && count > 1) {
      const port = await gatewayPortFor(definition, 1);
      gatewayUrls.push(url(port));
      first.push({
        name,
        service: name,
        args: [clusterScript, definition.entry, ...args(name).slice(0, -1)],
        env: { ...envOf(name), PORT: String(port), GATEWAY_OPS_PORTS: ports.join(',') },
        readyUrls,
      });
      continue;
    }
    for (let replica = 1; replica <= count; replica++) {
      const env = { ...envOf(name), [definition.opsPortVariable]: String(ports[replica - 1]) };
      if (name === 'gateway') {
        const port = await gatewayPortFor(definition, replica);
        env.PORT = String(port);
        gatewayUrls.push(url(port));
      }
      if (options.migrate === 'before' || replica > 1) env.MIGRATE_ON_START = 'false';
      const spec: ProcessSpec = {
        name: count > 1 ? `${name}#${replica}` : name,
        service: name,
        args: args(name),
        env,
        readyUrls: [readyUrls[replica - 1]!],
      };
      (replica === 1 || options.migrate === 'before' ? first : later).push(spec);
    }
  }

  if (options.migrate === 'before') migrateFirst(definitions, envOf);
  const restart =
    options.restart === false
      ? false
      : { ...developerRestarts, ...(options.restart === true ? {} : options.restart) };
  const supervisor = new Supervisor({ restart, logs: options.logs, say: options.say });
  const timeoutMs = options.readyTimeoutMs ?? 300_000;
  options.signal?.addEventListener('abort', () => void supervisor.stop(), { once: true });
  const startAll = async (specs: readonly ProcessSpec[]) => {
    try {
      await supervisor.start(specs, timeoutMs);
    } catch (error) {
      if (options.whenNotReady !== 'report' || options.signal?.aborted) throw error;
      (options.say ?? console.log)(
        `the platform is ${(error as Error).message}; see the logs above`,
      );
    }
  };
  try {
    if (options.signal?.aborted) throw new Error('aborted before the start');
    await startAll(first);
    if (later.length > 0) await startAll(later);
  } catch (error) {
    await supervisor.stop();
    throw error;
  }

  const pidsOf = (name: string): number[] => {
    const own = supervisor
      .names()
      .filter((candidate) => candidate === name || candidate.startsWith(`${name}#`))
      .map((candidate) => supervisor.child(candidate)?.pid)
      .filter((pid): pid is number => pid !== undefined);
    // Only a gateway cluster has children: skip the /proc scan otherwise (benches ask often).
    if (!options.gatewayCluster || own.length === 0) return own;
    return [...own, ...[...childrenOf(own).values()].flat()];
  };

  return {
    supervisor,
    gatewayUrl: gatewayUrls[0] ?? '',
    gatewayUrls,
    processorUrl,
    opsUrls: (name) => (opsPorts.get(name) ?? []).map((port) => url(port)),
    pidsOf,
    memory() {
      const running = supervisor
        .names()
        .map((name) => ({ name, pid: supervisor.child(name)?.pid }))
        .filter((entry): entry is { name: string; pid: number } => entry.pid !== undefined);
      const children = options.gatewayCluster
        ? childrenOf(running.map(({ pid }) => pid))
        : new Map<number, number[]>();
      const rows: { name: string; pid: number; peakRssBytes: number; rssBytes: number }[] = [];
      const add = (name: string, pid: number) => {
        const memory = memoryOf(pid);
        if (memory) rows.push({ name, pid, ...memory });
      };
      for (const { name, pid } of running) {
        const workers = children.get(pid) ?? [];
        workers.forEach((worker, index) =>
          add(index === 0 ? name : `${name}#${index + 1}`, worker),
        );
        add(workers.length > 0 ? `${name} (cluster primary)` : name, pid);
      }
      return rows;
    },
    stop: () => supervisor.stop(),
  };
}

/** Each service's `migrate`, then catalog's `jetstream-topology` (services only check it). */
function migrateFirst(
  definitions: readonly ProcessDefinition[],
  envOf: (name: PlatformProcess) => Record<string, string>,
): void {
  const run = (name: PlatformProcess, command: string) => {
    const result = spawnSync(process.execPath, [processDefinition(name).entry, command], {
      env: envOf(name),
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`${name} ${command} failed: ${result.stderr}`);
  };
  for (const { name, migrates } of definitions) if (migrates) run(name, 'migrate');
  if (definitions.some(({ name }) => name === 'catalog')) run('catalog', 'jetstream-topology');
}
