import type { Faults } from '@pcp/processor-simulator';
import { mulberry32 } from '@pcp/testing/prng';
import {
  AttemptWatch,
  checkPhase,
  INVARIANTS,
  type Count,
  type Invariant,
  type Tally,
} from './invariants.js';
import {
  FaultPlatform,
  RECONCILE_INTERVAL_MS,
  RECONCILE_QUIET_MS,
  type ServiceEnv,
} from './platform.js';
import type { StoreMood } from './store-receiver.js';
import { CANCEL_SHARE, PhaseLog, Workload } from './workload.js';

type Random = () => number;

/** What a fault does to the running platform: inject, hold, recover. */
interface Fault {
  readonly name: string;
  inject(platform: FaultPlatform, workload: Workload, random: Random): Promise<string>;
  /** Undo the fault (nothing for a kill: the supervisor restarts the process). */
  recover?(platform: FaultPlatform, workload: Workload): Promise<void>;
}

/** Each replica of `service` in turn, at a random point, once the previous one is back. */
const kill = (service: string): Fault => ({
  name: `SIGKILL ${service}`,
  async inject(platform, _workload, random) {
    const killed: string[] = [];
    for (const victim of platform.supervisor.replicas(service)) {
      await platform.supervisor.waitAllReady(60_000);
      await sleep(random() * 2_000);
      platform.supervisor.kill(victim);
      killed.push(victim);
    }
    return `killed ${killed.join(', ')}`;
  },
});

const restart = (server: 'nats' | 'postgres' | 'redis'): Fault => ({
  name: `restart ${server}`,
  async inject(platform) {
    await platform.servers.restart(server);
    return `${server} restarted`;
  },
});

const noProcessorFaults: Faults = {
  latencyMs: 0,
  errorRate: 0,
  hangRate: 0,
  slowRate: 0,
  slowMs: 0,
  operations: [],
};

const processor = (name: string, faults: Partial<Faults>): Fault => ({
  name: `processor ${name}`,
  async inject(platform) {
    await platform.setProcessorFaults(faults);
    return `processor faults ${JSON.stringify(faults)}`;
  },
  recover: (platform) => platform.setProcessorFaults(noProcessorFaults),
});

/**
 * Refunds executed, their answers lost past payments' 10 s timeout: the refund ordering asks
 * again under the same key must be the same refund. The store cancels more of the orders it
 * moves meanwhile, so more refunds lose their answers.
 */
const processorLosingRefundAnswers: Fault = {
  name: 'processor losing refund answers',
  async inject(platform, workload) {
    const faults: Partial<Faults> = { slowRate: 0.5, slowMs: 12_000, operations: ['refund'] };
    await platform.setProcessorFaults(faults);
    workload.cancelShare = 0.6;
    return `processor faults ${JSON.stringify(faults)}; the store cancels 60% of the orders it moves`;
  },
  async recover(platform, workload) {
    workload.cancelShare = CANCEL_SHARE;
    await platform.setProcessorFaults(noProcessorFaults);
  },
};

/** The store with a submission URL answers differently for a while. */
const store = (name: string, mood: StoreMood): Fault => ({
  name,
  inject(_platform, workload) {
    workload.store.mood = mood;
    return Promise.resolve(`the store answers ${mood}`);
  },
  recover(_platform, workload) {
    workload.store.mood = 'prompt';
    return Promise.resolve();
  },
});

/** How long a place key lives in the retention faults (a day in production). */
const SHORT_RETENTION_MS = 6_000;

/**
 * Ordering restarted (rolling) with keys that live seconds, not a day, so the sweeper
 * settles keys while their partners still retry them (`reuse`: or partners use a key
 * again after its retention, as if replaying an old request).
 */
const shortRetention = (name: string, reuse: boolean): Fault => ({
  name,
  async inject(platform, workload) {
    await platform.supervisor.restartWith('ordering', {
      ORDERING_IDEMPOTENCY_RETENTION_MS: String(SHORT_RETENTION_MS),
    });
    if (reuse) workload.reuseKeysAfterMs = SHORT_RETENTION_MS + 2_000;
    // Half the payments fail (retryable), so keys need retries that outlive them.
    else await platform.setProcessorFaults({ errorRate: 0.5, operations: ['authorize'] });
    return `keys live ${SHORT_RETENTION_MS / 1000} s${reuse ? ', then are used again' : ' while half the authorizations fail'}`;
  },
  async recover(platform, workload) {
    workload.reuseKeysAfterMs = undefined;
    await platform.setProcessorFaults(noProcessorFaults);
    await platform.supervisor.restartWith('ordering', {
      ORDERING_IDEMPOTENCY_RETENTION_MS: undefined,
    });
  },
});

/** Payments dies after the processor authorized, before it recorded the authorization. */
const paymentsDiesUnrecorded: Fault = {
  name: 'SIGKILL payments between authorize and record',
  async inject(platform) {
    await platform.supervisor.restartWith('payments', {
      PAYMENTS_FAILPOINT: 'authorized-unrecorded',
      PAYMENTS_FAILPOINT_RATE: '0.2',
    });
    return 'payments dies after 1 in 5 authorizations, before recording it';
  },
  recover: (platform) =>
    platform.supervisor.restartWith('payments', {
      PAYMENTS_FAILPOINT: undefined,
      PAYMENTS_FAILPOINT_RATE: undefined,
    }),
};

/**
 * Ordering dies right after one of place's points, for 1 in 5 places: `captured` (payments
 * captured; the relaxed `capturing` and nothing after it committed), `recorded` (the order and
 * its answer committed in one statement, never replied).
 */
const orderingDiesAt = (point: 'captured' | 'recorded', name: string): Fault => ({
  name,
  async inject(platform) {
    await platform.supervisor.restartWith('ordering', {
      ORDERING_FAILPOINT: point,
      ORDERING_FAILPOINT_RATE: '0.2',
    });
    return `ordering dies at ${point} in 1 of 5 places`;
  },
  recover: (platform) =>
    platform.supervisor.restartWith('ordering', {
      ORDERING_FAILPOINT: undefined,
      ORDERING_FAILPOINT_RATE: undefined,
    }),
});

/** How long an order waits for its store in the "store never answers" fault (600 s by default). */
const SHORT_ACCEPTANCE_WINDOW_SECONDS = 3;

/**
 * The store never answers: ordering restarted with seconds-long acceptance windows (a test-only
 * setting production refuses) while the commerce partner moves no order, so every order left
 * pending is cancelled by the platform and refunded, once (docs/guide/orders.md#acceptance-window).
 */
const storeNeverAnswers: Fault = {
  name: 'store never answers',
  async inject(platform, workload) {
    await platform.supervisor.restartWith('ordering', {
      ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS: String(SHORT_ACCEPTANCE_WINDOW_SECONDS),
      ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '500',
    });
    workload.storeSilent = true;
    return `orders wait ${SHORT_ACCEPTANCE_WINDOW_SECONDS} s for a store that never answers`;
  },
  async recover(platform, workload) {
    workload.storeSilent = false;
    await platform.supervisor.restartWith('ordering', {
      ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS: undefined,
      ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: undefined,
    });
    // 3 timeouts in a row paused the stores; their partner resumes them.
    await workload.resumeStores();
  },
};

/**
 * The reconciler races place: payments reconciles every 500 ms and judges charges however
 * recently they changed, while ordering holds its answer to the reconciler's charge-owners
 * question 300 ms between its two reads (inside one snapshot in correct code: harmless; with
 * two reads outside one, an order that commits between them reads as "no order, its attempt
 * answered" and its charge as one to release). Captures take 200 ms meanwhile, so a charge is
 * authorized for that long before its order commits: the window such a read falls in. Correct
 * code releases and withholds nothing.
 */
const reconcilerRacesPlace: Fault = {
  name: 'reconciler races place',
  async inject(platform) {
    // Ordering first: every replica holds its reads by the time payments races.
    await platform.supervisor.restartWith('ordering', { ORDERING_TEST_OWNERS_READ_HOLD_MS: '300' });
    await platform.supervisor.restartWith('payments', {
      PAYMENTS_RECONCILE_INTERVAL_MS: '500',
      PAYMENTS_RECONCILE_QUIET_MS: '0',
    });
    await platform.setProcessorFaults({ latencyMs: 200, operations: ['capture'] });
    return 'payments reconciles every 0.5 s with no quiet period; ordering holds 0.3 s between the owners reads; captures take 0.2 s';
  },
  async recover(platform) {
    await platform.setProcessorFaults(noProcessorFaults);
    await platform.supervisor.restartWith('payments', {
      PAYMENTS_RECONCILE_INTERVAL_MS: RECONCILE_INTERVAL_MS,
      PAYMENTS_RECONCILE_QUIET_MS: RECONCILE_QUIET_MS,
    });
    await platform.supervisor.restartWith('ordering', {
      ORDERING_TEST_OWNERS_READ_HOLD_MS: undefined,
    });
  },
};

const receiverDown: Fault = {
  name: 'webhook receiver down',
  async inject(_platform, workload) {
    await Promise.all(workload.receivers.map((receiver) => receiver.down()));
    return `${workload.receivers.length} receivers down`;
  },
  async recover(_platform, workload) {
    await Promise.all(workload.receivers.map((receiver) => receiver.up()));
  },
};

export const FAULTS: Record<string, Fault> = Object.fromEntries(
  [
    kill('gateway'),
    kill('stores'),
    kill('catalog'),
    kill('ordering'),
    kill('payments'),
    restart('nats'),
    restart('postgres'),
    restart('redis'),
    processor('hanging', { hangRate: 0.5 }),
    processor('failing 50%', { errorRate: 0.5 }),
    processor('slow 5 s', { latencyMs: 5_000 }),
    // Captures executed, their answers lost past payments' 10 s timeout.
    processor('losing capture answers', { slowRate: 0.5, slowMs: 12_000, operations: ['capture'] }),
    processorLosingRefundAnswers,
    paymentsDiesUnrecorded,
    orderingDiesAt('captured', 'SIGKILL ordering between capture and record'),
    orderingDiesAt('recorded', 'SIGKILL ordering after the order is recorded'),
    store('store accepts after the timeout', 'late'),
    store('store answers 409 and 429', 'flaky'),
    shortRetention('keys expire while retried', false),
    shortRetention('keys reused after retention', true),
    receiverDown,
    storeNeverAnswers,
    reconcilerRacesPlace,
  ].map((fault) => [fault.name, fault]),
);

/** How long each phase runs its load around the fault, and which faults run. */
export interface Profile {
  readonly faults: readonly string[];
  /** The fault comes at a random point up to this long after the load starts. */
  readonly maxLeadMs: number;
  /** How long the fault lasts (a kill or restart is instant; the load goes on as long). */
  readonly holdMs: number;
  /** Load after the recovery, before the phase's load stops. */
  readonly tailMs: number;
  readonly buyers: number;
}

export type ProfileName = 'short' | 'full' | 'mutation';

/** CI's faults: those most likely to lose or double a payment, and a receiver outage. */
const SHORT_FAULTS = [
  'SIGKILL ordering',
  'SIGKILL payments',
  'processor failing 50%',
  'processor losing capture answers',
  'SIGKILL payments between authorize and record',
  'webhook receiver down',
  'store never answers',
];

export const PROFILES: Record<ProfileName, Profile> = {
  short: {
    faults: SHORT_FAULTS,
    maxLeadMs: 3_000,
    holdMs: 5_000,
    tailMs: 2_000,
    buyers: 3,
  },
  // The mutation check's (`--mutants`): the short faults, and those that make a refund be
  // asked twice and the reconciler race place, so every planted defect has its chance.
  mutation: {
    faults: [...SHORT_FAULTS, 'processor losing refund answers', 'reconciler races place'],
    maxLeadMs: 3_000,
    // Longer than the short profile's: more refunds lose their answers, more places race.
    holdMs: 8_000,
    tailMs: 2_000,
    buyers: 3,
  },
  full: {
    faults: Object.keys(FAULTS),
    maxLeadMs: 6_000,
    holdMs: 12_000,
    tailMs: 4_000,
    buyers: 4,
  },
};

export interface PhaseResult {
  readonly fault: string;
  readonly what: string;
  readonly counts: ReadonlyMap<Invariant, Count>;
  readonly violations: readonly string[];
  readonly places: number;
  /** Keys the store refused (STORE_REJECTED: the saga released their authorizations). */
  readonly storeRefusals: number;
  readonly seconds: number;
}

export interface SuiteResult {
  readonly seed: number;
  readonly profile: string;
  readonly phases: readonly PhaseResult[];
  readonly violated: number;
  /** Where the servers' and processes' logs were (removed at the end unless kept). */
  readonly logDir: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Run the fault suite: start the platform on its own servers, then for each fault of the
 * profile run the workload, inject the fault at a seeded random point, recover, let the
 * workload finish and check every invariant against the truth.
 */
export async function runFaultSuite(options: {
  profile: ProfileName;
  seed: number;
  /** Only these faults (names of FAULTS), e.g. to replay one. */
  only?: readonly string[];
  /** Keep the logs of the servers and processes when a violation was found. */
  keepLogsOnViolation?: boolean;
  /** Variables of one service's processes over the suite's (the mutation check's defects). */
  serviceEnv?: ServiceEnv;
  /** End after the first phase with a violation (the mutation check: the defect was seen). */
  stopAtFirstViolation?: boolean;
  log?: (line: string) => void;
}): Promise<SuiteResult> {
  const log = options.log ?? ((line: string) => process.stdout.write(`[faults] ${line}\n`));
  const profile = PROFILES[options.profile];
  const names = options.only?.length ? options.only : profile.faults;
  for (const name of names) {
    if (!FAULTS[name])
      throw new Error(`no fault named ${name}; known: ${Object.keys(FAULTS).join(', ')}`);
  }
  const { seed } = options;
  log(`profile ${options.profile}, seed ${seed} (FAULT_SEED=${seed} replays it)`);
  const faultRandom = mulberry32(seed);
  const started = Date.now();
  const platform = await FaultPlatform.start(log, options.serviceEnv);
  let workload: Workload | undefined;
  const phases: PhaseResult[] = [];
  // Interrupted: stop the processes and servers rather than leave them running.
  const interrupted = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping the platform`);
    void platform.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    workload = await Workload.create(platform, {
      distributionPartners: 2,
      stores: 2,
      buyers: profile.buyers,
      random: mulberry32(seed ^ 0x5bd1e995),
    });
    log(`platform and partners ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    for (const [index, name] of names.entries()) {
      const fault = FAULTS[name]!;
      const phaseStartedAt = Date.now();
      // The phase's place attempts, read while it runs: retention may delete them before the checks.
      const attempts = AttemptWatch.start(platform, phaseStartedAt);
      const phase = new PhaseLog();
      let what: string;
      let tally: Tally;
      try {
        workload.start(
          phase,
          workload.buyers.map((_buyer, worker) => mulberry32(seed + 7919 * (index + 1) + worker)),
        );
        await sleep(500 + faultRandom() * profile.maxLeadMs);
        what = await fault.inject(platform, workload, faultRandom);
        log(`${name}: ${what}`);
        await sleep(profile.holdMs);
        await fault.recover?.(platform, workload);
        await sleep(profile.tailMs);
        await workload.stop();
        await platform.supervisor.waitAllReady(60_000);
        await workload.resolveUnknown(45_000);
        tally = await checkPhase(platform, workload, phase, phaseStartedAt, attempts);
      } finally {
        await attempts.stop();
      }
      const seconds = (Date.now() - phaseStartedAt) / 1000;
      // Processes that went down during the phase (killed by the fault, or by a failpoint).
      const restarts = new Map<string, number>();
      for (const downtime of platform.supervisor.downtimes) {
        if (downtime.from >= phaseStartedAt) {
          restarts.set(downtime.name, (restarts.get(downtime.name) ?? 0) + 1);
        }
      }
      const storeRefusals = phase.outcomes.filter((outcome) =>
        outcome.problem?.endsWith('STORE_REJECTED'),
      ).length;
      log(
        `${name}: ${phase.outcomes.length} places (${storeRefusals} refused by the store), ` +
          `${phase.statusChanges} status changes, ` +
          `${phase.ingests.length} ingests, ${phase.requests} requests` +
          (phase.failures.size > 0
            ? ` (journeys cut short: ${[...phase.failures].map(([why, n]) => `${why} ×${n}`).join(', ')})`
            : '') +
          (restarts.size > 0
            ? `, restarts: ${[...restarts].map(([who, n]) => `${who} ×${n}`).join(', ')}`
            : '') +
          '; ' +
          (tally.notes.length > 0 ? `${tally.notes.join('; ')}; ` : '') +
          `${tally.violated} violations (${seconds.toFixed(1)} s)`,
      );
      phases.push({
        fault: name,
        what,
        counts: tally.counts,
        violations: tally.violations,
        places: phase.outcomes.length,
        storeRefusals,
        seconds,
      });
      if (options.stopAtFirstViolation && tally.violated > 0) break;
    }
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await workload?.close();
    const violated = phases.some((phase) => phase.violations.length > 0);
    await platform.stop(Boolean(options.keepLogsOnViolation) && violated);
  }
  return {
    seed,
    profile: options.profile,
    phases,
    violated: phases.reduce((sum, phase) => sum + phase.violations.length, 0),
    logDir: platform.servers.logDir,
  };
}

/** Faults × invariants, `checked/violated` in each cell, then every violation. */
export function formatReport(result: SuiteResult, maxViolationsShown = 30): string {
  const header = ['fault', ...INVARIANTS];
  const rows = result.phases.map((phase) => [
    phase.fault,
    ...INVARIANTS.map((invariant) => {
      const count = phase.counts.get(invariant)!;
      return `${count.checked}/${count.violated}`;
    }),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join(' | ');
  const out = [
    `Fault suite (${result.profile}), seed ${result.seed}: cells are checked/violated`,
    line(header),
    widths.map((width) => '-'.repeat(width)).join('-+-'),
    ...rows.map(line),
  ];
  const violations = result.phases.flatMap((phase) =>
    phase.violations.map((violation) => `  [${phase.fault}] ${violation}`),
  );
  out.push(
    '',
    violations.length === 0
      ? 'No invariant violated.'
      : `${violations.length} violations:\n${violations.slice(0, maxViolationsShown).join('\n')}` +
          (violations.length > maxViolationsShown
            ? `\n  … and ${violations.length - maxViolationsShown} more`
            : ''),
    `Replay: FAULT_SEED=${result.seed} FAULT_PROFILE=${result.profile} npm run test:faults`,
  );
  return out.join('\n');
}
