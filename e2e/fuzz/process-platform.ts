import { serviceNames, type ServiceName } from '@pcp/contracts';
import { launchPlatform, memoryOf, type LaunchedPlatform } from '@pcp/platform';
import { createProcessorSimulator, type ProcessorSimulator } from '@pcp/processor-simulator';
import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import type { TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { waitUntilServing } from '@pcp/testing/service-process';

/** The services behind the gateway (the gateway runs in the test's process). */
const SERVICES = serviceNames;

/** Limits high enough that fuzzing reaches the handlers instead of the rate limiter. */
export const unthrottledGatewayEnv = {
  // A loaded CI machine answers slowly; a 504 would read as a failure the fuzzer found.
  NATS_REQUEST_TIMEOUT_MS: '10000',
  RATE_LIMIT_READS_PER_MIN: '1000000',
  RATE_LIMIT_WRITES_PER_MIN: '1000000',
  RATE_LIMIT_DISCOVERY_PER_MIN: '1000000',
  AUTH_FAILURES_PER_MIN_PER_IP: '1000000',
};

export interface ProcessPlatform {
  readonly platform: TestPlatform;
  readonly processes: ReadonlyMap<ServiceName, ChildProcess>;
  readonly simulator: ProcessorSimulator;
  /** The highest RSS sampled per service process so far, in MB. */
  peakRssMb(): Record<ServiceName, number>;
  /**
   * Every service process is the one started (same PID, never exited), answers its health
   * subject, and stayed under `maxRssMb`; prints the peaks.
   */
  expectHealthy(label: string, maxRssMb: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The platform with the four services as their own processes (the gateway in this process):
 * a crash or a restart is a real process's, and its memory is measurable. RSS is sampled
 * every `sampleMs` for the whole run.
 */
export async function startProcessPlatform(
  env: TestEnvironment,
  options: {
    gatewayEnv?: Record<string, string>;
    serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
    sampleMs?: number;
  } = {},
): Promise<ProcessPlatform> {
  const platform = await startPlatform(env, {
    gatewayEnv: { ...unthrottledGatewayEnv, ...options.gatewayEnv },
  });
  const simulator = createProcessorSimulator();
  const processorUrl = await simulator.listen();
  await Promise.all([
    platform.stores.stop(),
    platform.catalog.stop(),
    platform.ordering.stop(),
    platform.payments.stop(),
  ]);
  const defaults: Record<ServiceName, Record<string, string>> = {
    stores: {},
    catalog: { CATALOG_FETCH_ALLOW_HTTP: 'true', CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32' },
    ordering: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOWLIST: '127.0.0.1/32' },
    payments: { PAYMENT_PROCESSOR_URL: processorUrl, SANDBOX_PROCESSOR_URL: processorUrl },
  };
  let launched: LaunchedPlatform;
  try {
    // From their builds, on the test file's database and subject prefix; a process that exits
    // stays down (expectHealthy fails on it).
    launched = await launchPlatform({
      processes: SERVICES,
      ports: 'free',
      env: {
        DATABASE_URL: env.databaseUrl,
        NATS_SUBJECT_PREFIX: env.prefix,
        MIGRATE_ON_START: 'false',
        LOG_LEVEL: 'silent',
      },
      serviceEnv: Object.fromEntries(
        SERVICES.map((service) => [
          service,
          { ...defaults[service], ...options.serviceEnv?.[service] },
        ]),
      ),
      restart: false,
      logs: 'ignore',
      say: (message) => console.log(`[fuzz] ${message}`),
      readyTimeoutMs: 180_000,
    });
  } catch (error) {
    await simulator.close();
    await platform.stop();
    throw error;
  }
  const processes = new Map<ServiceName, ChildProcess>(
    SERVICES.map((service) => [service, launched.supervisor.child(service)!]),
  );
  const pids = new Map<ServiceName, number>(
    SERVICES.map((service) => [service, processes.get(service)!.pid!]),
  );
  await Promise.all(SERVICES.map((service) => waitUntilServing(service, env, 180_000)));

  const peaks = new Map<ServiceName, number>();
  const sample = () => {
    for (const [service, pid] of pids) {
      const bytes = memoryOf(pid)?.rssBytes ?? 0;
      peaks.set(service, Math.max(peaks.get(service) ?? 0, bytes));
    }
  };
  sample();
  const sampler = setInterval(sample, options.sampleMs ?? 100);
  sampler.unref();

  const peakRssMb = () =>
    Object.fromEntries(
      SERVICES.map((service) => [service, Math.round((peaks.get(service) ?? 0) / 1024 / 1024)]),
    ) as Record<ServiceName, number>;

  return {
    platform,
    processes,
    simulator,
    peakRssMb,
    async expectHealthy(label, maxRssMb) {
      sample();
      const peak = peakRssMb();
      console.log(`[fuzz] ${label}: peak RSS (MB) ${JSON.stringify(peak)}`);
      for (const service of SERVICES) {
        const child = processes.get(service)!;
        expect(child.exitCode, `${service} exited`).toBeNull();
        expect(child.signalCode, `${service} was killed`).toBeNull();
        expect(child.pid, `${service} is another process`).toBe(pids.get(service));
        expect(peak[service], `${service} peak RSS (MB)`).toBeLessThan(maxRssMb);
      }
      await Promise.all(SERVICES.map((service) => waitUntilServing(service, env, 20_000)));
    },
    async stop() {
      clearInterval(sampler);
      await launched.stop();
      await simulator.close();
      await platform.stop();
    },
  };
}
