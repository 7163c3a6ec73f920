// The catalog's ingest queue (services/catalog/src/db/ingest-run.repository.ts). A claim, and
// the choice of runs to wake after one ends, run under one advisory lock ('ingest claims')
// across every replica, so each sees the others' claims in the per-partner counts. A
// notification takes its store's lock and its partner's (the queued-runs cap). Claims/s
// with one and two claimers; notifications/s of one partner against as many partners.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { catalogMigrations } from '../../../../../services/catalog/src/db/migrations/index.js';
import type { CatalogDatabase } from '../../../../../services/catalog/src/db/catalog.table.js';
import {
  claimRun,
  insertRun,
  transitionRun,
  waitingRunsToWake,
} from '../../../../../services/catalog/src/db/ingest-run.repository.js';
import type { BenchPlatform } from '../../platform/bench-platform.js';
import { drive, scratchSchema, timed } from './drive.js';
import { ceilingRow } from './tally.js';

/** The catalog's defaults (services/catalog/src/config.ts). */
const MAX_RUNS_PER_PARTNER = 1;
const MAX_QUEUED_PER_PARTNER = 50;
const LEASE_MS = 30_000;
/** Each partner's stores, notified in turn: a later notification supersedes a queued one. */
const STORES_PER_PARTNER = 40;

const partnerId = (partner: number) =>
  `00000000-0000-4000-8000-${String(partner + 1).padStart(12, '0')}`;
const storeId = (partner: number, store: number) =>
  `00000000-0000-4000-9${String(partner).padStart(3, '0')}-${String(store).padStart(12, '0')}`;

function notify(db: Kysely<CatalogDatabase>, partner: number, store: number, runId = randomUUID()) {
  return insertRun(
    db,
    {
      runId,
      storeId: storeId(partner, store),
      partnerId: partnerId(partner),
      mode: 'live',
      callbackUrl: 'https://partner.invalid/catalog.json',
      currency: 'USD',
    },
    MAX_QUEUED_PER_PARTNER,
  );
}

/**
 * Notifications/s of `workers` concurrent notifiers, every one of them for one partner (its
 * queue lock serializes them) or each for a partner of its own.
 */
export async function measureNotify(
  platform: BenchPlatform,
  options: { schema: string; workers: number; seconds: number },
) {
  const rows = [];
  for (const shared of [true, false]) {
    const schema = await scratchSchema<CatalogDatabase>(
      platform,
      `${options.schema}_${shared ? 'one' : 'many'}`,
      catalogMigrations,
      { workers: options.workers, connections: 1 },
    );
    try {
      const next = Array.from({ length: options.workers }, () => 0);
      const result = await drive({
        workers: options.workers,
        seconds: options.seconds,
        op: async (worker) => {
          const partner = shared ? 0 : worker;
          // Shared: the workers walk one partner's stores together, never one store at once.
          const store = shared
            ? (worker + options.workers * next[worker]!++) % STORES_PER_PARTNER
            : next[worker]!++ % STORES_PER_PARTNER;
          const { value, ms } = await timed(() => notify(schema.pools[worker]!, partner, store));
          return { rows: value.outcome === 'queued' ? 1 : 0, ms };
        },
      });
      rows.push(
        ceilingRow(
          `ingest notify, ${options.workers} notifiers, ${shared ? 'one partner' : 'a partner each'}`,
          result.tallies,
          result.seconds,
        ),
      );
    } finally {
      await schema.close();
    }
  }
  return rows;
}

/**
 * Claims/s of `workers` claimers on `partners` × 40 queued runs: claim the fair queue's first,
 * end it at once (no download), and choose the next run to wake, as the worker does.
 */
export async function measureIngestClaims(
  platform: BenchPlatform,
  options: { schema: string; partners: number; runs: number[]; seconds: number },
) {
  const rows = [];
  for (const workers of options.runs) {
    const schema = await scratchSchema<CatalogDatabase>(
      platform,
      `${options.schema}_${workers}`,
      catalogMigrations,
      { workers, connections: 2 },
    );
    try {
      const runIds: string[] = [];
      for (let store = 0; store < STORES_PER_PARTNER; store++) {
        await Promise.all(
          Array.from({ length: options.partners }, async (_, partner) => {
            const runId = randomUUID();
            await notify(schema.admin, partner, store, runId);
            runIds.push(runId);
          }),
        );
      }
      let named = 0;
      const result = await drive({
        workers,
        seconds: options.seconds,
        op: async (worker) => {
          const db = schema.pools[worker]!;
          const workerId = `bench-${worker}`;
          // Each work message names a run; the claim takes the fair queue's first.
          const runId = runIds[named++ % runIds.length]!;
          const { value: claim, ms: claimMs } = await timed(() =>
            claimRun(db, {
              runId,
              workerId,
              leaseMs: LEASE_MS,
              maxRunsPerPartner: MAX_RUNS_PER_PARTNER,
            }),
          );
          if (claim.outcome !== 'claimed') return { rows: 0, ms: claimMs };
          await transitionRun(db, claim.run.run_id, workerId, 'succeeded');
          const { ms: wakeMs } = await timed(() =>
            waitingRunsToWake(db, MAX_RUNS_PER_PARTNER, { limit: 1 }),
          );
          return { rows: 1, ms: claimMs + wakeMs };
        },
      });
      rows.push(
        ceilingRow(
          `ingest claim + wake, ${options.partners} partners × ${STORES_PER_PARTNER} runs, ${workers} claimer(s)`,
          result.tallies,
          result.seconds,
        ),
      );
    } finally {
      await schema.close();
    }
  }
  return rows;
}
