// The platform's services as separate processes (as in production), with BENCH_REPLICAS of
// each: the benches' launcher. Replica 1 keeps the names and ops ports a single-replica run
// has; replica k > 1 is `<service>#k`. The gateways share the HTTP port through node:cluster
// (gateway-cluster.ts), as Node 20 has no reusePort.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { join } from 'node:path';
import { root, sleep } from '../setup.js';
import { tsEntry } from '../ts-modules.js';
import { parentPids } from './proc.js';

// Every service, even where a bench touches fewer: the platform is ready once all are.
export const SERVICES = ['stores', 'catalog', 'ordering', 'payments', 'gateway'] as const;
export type Service = (typeof SERVICES)[number];

export type Env = Record<string, string | undefined>;

export interface LaunchOptions {
  /** The environment every service shares (database, prefixes, PORT). */
  env: Env;
  /** A service's own environment on top. */
  envOf: (service: Service) => Env;
  processorUrl: string;
  processorLatencyMs: number;
}

/** Poll every URL until all answer 2xx; throws after 90 s (a loaded machine starts slowly). */
async function waitReady(urls: string[]): Promise<void> {
  const readyAt = (url: string) =>
    fetch(url).then(
      (r) => r.ok,
      () => false,
    );
  for (let i = 0; i < 180; i++) {
    await sleep(500);
    if ((await Promise.all(urls.map(readyAt))).every(Boolean)) return;
  }
  const waiting = [];
  for (const url of urls) if (!(await readyAt(url))) waiting.push(url);
  throw new Error(`platform did not become ready: ${waiting.join(', ')}`);
}

export class Launcher {
  /** Every child process (the services and any a bench adds), by name. */
  readonly children = new Map<string, ChildProcess>();
  #stopping = false;

  constructor(
    readonly port: number,
    readonly replicas: number,
  ) {}

  /**
   * Replica 1 of the service at `index` on port + 1 + index (as with one replica); the
   * processor simulator next; then replica 2's block of ports, replica 3's, and so on.
   */
  opsPort(index: number, replica: number): number {
    return replica === 1
      ? this.port + 1 + index
      : this.port + 2 + SERVICES.length * (replica - 1) + index;
  }

  /** Every replica's ops URL of a service, replica 1's first. */
  opsUrls(service: Service, path: string): string[] {
    const index = SERVICES.indexOf(service);
    return Array.from(
      { length: this.replicas },
      (_, replica) => `http://127.0.0.1:${this.opsPort(index, replica + 1)}${path}`,
    );
  }

  /** Spawn a Node process that `stop` terminates; reports it if it exits before then. */
  startChild(name: string, args: string[], options: SpawnOptions): ChildProcess {
    const child = spawn(process.execPath, args, options);
    child.once('exit', (code, signal) => {
      if (!this.#stopping) {
        process.stderr.write(`[bench] ${name} exited early (code ${code}, signal ${signal})\n`);
      }
    });
    this.children.set(name, child);
    return child;
  }

  /**
   * The pids of a child and its replicas (`name`, `name#2`, …) and of their own children
   * (the gateway cluster's workers): what a CPU or memory figure of `name` sums over.
   */
  pidsOf(name: string): number[] {
    const own = [...this.children]
      .filter(([childName]) => childName === name || childName.startsWith(`${name}#`))
      .flatMap(([, child]) => (child.pid ? [child.pid] : []));
    // Only the gateway's cluster (BENCH_REPLICAS > 1) has children: skip the /proc scan
    // otherwise, as some benches ask on every poll.
    if (own.length === 0 || this.replicas === 1) return own;
    const parents = parentPids();
    const all = [...own];
    for (let i = 0; i < all.length; i++) {
      for (const [pid, parent] of parents) if (parent === all[i]) all.push(pid);
    }
    return all;
  }

  /** The processor simulator and every service (replica 1 first: it migrates), until ready. */
  async start({ env, envOf, processorUrl, processorLatencyMs }: LaunchOptions): Promise<void> {
    // BENCH_NODE_ARGS: Node flags for every service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"
    // (a CPU profile per service, written as it exits) or "--trace-gc".
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
    const mainOf = (service: string) => join(root, 'services', service, 'dist', 'main.js');
    this.startChild('processor-simulator', [mainOf('processor-simulator')], {
      env: {
        ...env,
        PORT: new URL(processorUrl).port,
        PROCESSOR_LATENCY_MS: String(processorLatencyMs),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const readiness = [`${processorUrl}/health`];
    const ready = (port: number) => `http://127.0.0.1:${port}/health/ready`;
    // The gateway's cluster starts its own later workers once its first listens.
    SERVICES.forEach((service, index) => {
      if (service === 'gateway' && this.replicas > 1) {
        const opsPorts = Array.from({ length: this.replicas }, (_, r) =>
          this.opsPort(index, r + 1),
        );
        this.startChild(
          service,
          [...tsEntry('platform/gateway-cluster.ts'), mainOf(service), ...nodeArgs],
          {
            env: { ...envOf(service), GATEWAY_OPS_PORTS: opsPorts.join(',') },
            stdio: ['ignore', 'inherit', 'inherit'],
          },
        );
        readiness.push(...opsPorts.map(ready));
        return;
      }
      this.startChild(service, [...nodeArgs, mainOf(service)], {
        env: { ...envOf(service), OPS_PORT: String(this.opsPort(index, 1)) },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      readiness.push(ready(this.opsPort(index, 1)));
    });
    await waitReady(readiness);
    if (this.replicas === 1) return;
    // The later replicas skip migrations: the first ran them, and two at once race on
    // creating the migration tables.
    const later: string[] = [];
    SERVICES.forEach((service, index) => {
      if (service === 'gateway') return;
      for (let replica = 2; replica <= this.replicas; replica++) {
        const opsPort = this.opsPort(index, replica);
        this.startChild(`${service}#${replica}`, [...nodeArgs, mainOf(service)], {
          env: { ...envOf(service), OPS_PORT: String(opsPort), MIGRATE_ON_START: 'false' },
          stdio: ['ignore', 'inherit', 'inherit'],
        });
        later.push(ready(opsPort));
      }
    });
    await waitReady(later);
  }

  /** SIGTERM every child; resolves once all have exited. */
  async stop(): Promise<void> {
    this.#stopping = true;
    const running = [...this.children.values()];
    for (const child of running) child.kill('SIGTERM');
    await Promise.all(
      running.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else child.once('exit', () => resolve());
          }),
      ),
    );
  }
}
