import type { Logger, ServiceMetrics } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import { Counter } from 'prom-client';
import type { GatewayDatabase } from '../db/partner.table.js';
import {
  deleteRequestsBefore,
  insertRequests,
  touchKeys,
  trimTenantRequests,
  type RequestLogInsert,
} from '../db/request-log.repository.js';

/** Rows of one INSERT; a flush that finds this many waiting writes at once. */
const BATCH_ROWS = 500;
/** Rows of one DELETE of the sweep, and the most DELETEs of one kind per sweep. */
const SWEEP_BATCH_ROWS = 5_000;
const SWEEP_MAX_BATCHES = 20;
/** A key's last use is written at most this often per replica. */
const KEY_USE_RESOLUTION_MS = 60_000;
/** Keys whose last write is remembered, and tenants awaiting their cap's sweep. */
const MAX_TRACKED = 10_000;
const DAY_MS = 86_400_000;

export interface RequestRecorderOptions {
  readonly db: Kysely<GatewayDatabase>;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  readonly flushMs: number;
  readonly maxBuffered: number;
  readonly retentionDays: number;
  readonly maxPerTenant: number;
  readonly sweepIntervalMs: number;
}

/**
 * The request log's writer (docs/guide/requests.md): requests are buffered in memory and
 * written in batches, one multi-row INSERT each, so no request waits on a database round
 * trip; past `maxBuffered` unwritten rows the oldest are dropped and counted. Keys' last use
 * goes with the same flush, at most once a minute per key. A sweep deletes requests past the
 * retention and, for each tenant this replica wrote for, those past its newest
 * `maxPerTenant`, in bounded batches.
 */
export function createRequestRecorder(options: RequestRecorderOptions) {
  const { db, logger } = options;
  const dropped = new Counter({
    name: 'pcp_gateway_request_log_dropped_total',
    help: 'Request log rows never written: the buffer was full, or the database refused a batch',
    labelNames: ['reason'],
    registers: [options.metrics.registry],
  });
  const swept = new Counter({
    name: 'pcp_gateway_request_log_swept_total',
    help: 'Request log rows deleted by the sweep: past the retention, or past the tenant cap',
    labelNames: ['reason'],
    registers: [options.metrics.registry],
  });

  /** Unwritten rows are `buffer[start…]`: dropping the oldest moves `start`, not the array. */
  let buffer: RequestLogInsert[] = [];
  let start = 0;
  const keyUses = new Map<string, Date>();
  const keysWritten = new LRUCache<string, true>({ max: MAX_TRACKED, ttl: KEY_USE_RESOLUTION_MS });
  const tenantsToTrim = new Set<string>();
  let flushing: Promise<void> | undefined;
  let sweeping: Promise<void> | undefined;
  const pending = () => buffer.length - start;

  function takeBatch(): RequestLogInsert[] {
    const batch = buffer.slice(start, start + BATCH_ROWS);
    start += batch.length;
    if (start === buffer.length) {
      buffer = [];
      start = 0;
    } else if (start > BATCH_ROWS * 4) {
      buffer = buffer.slice(start);
      start = 0;
    }
    return batch;
  }

  /** Write what is buffered; a batch the database refuses is dropped (and counted). */
  async function writeAll(): Promise<void> {
    if (keyUses.size > 0) {
      const uses = [...keyUses].map(([keyId, at]) => ({ keyId, at }));
      keyUses.clear();
      await touchKeys(db, uses).catch((error: unknown) => {
        logger.warn({ err: error }, 'writing API keys’ last use failed');
      });
    }
    while (pending() > 0) {
      const batch = takeBatch();
      try {
        await insertRequests(db, batch);
        for (const row of batch) {
          if (tenantsToTrim.size < MAX_TRACKED) tenantsToTrim.add(row.tenant_id);
        }
      } catch (error) {
        dropped.labels('write_failed').inc(batch.length);
        logger.warn({ err: error, rows: batch.length }, 'writing the request log failed');
        return;
      }
    }
  }

  function flush(): Promise<void> {
    flushing ??= writeAll().finally(() => {
      flushing = undefined;
    });
    return flushing;
  }

  async function sweepOnce(): Promise<void> {
    const cutoff = new Date(Date.now() - options.retentionDays * DAY_MS);
    for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
      const deleted = await deleteRequestsBefore(db, cutoff, SWEEP_BATCH_ROWS);
      swept.labels('retention').inc(deleted);
      if (deleted < SWEEP_BATCH_ROWS) break;
    }
    const tenants = [...tenantsToTrim];
    tenantsToTrim.clear();
    for (const tenantId of tenants) {
      for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
        const deleted = await trimTenantRequests(
          db,
          tenantId,
          options.maxPerTenant,
          SWEEP_BATCH_ROWS,
        );
        swept.labels('cap').inc(deleted);
        if (deleted < SWEEP_BATCH_ROWS) break;
      }
    }
  }

  function sweep(): Promise<void> {
    sweeping ??= sweepOnce()
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'sweeping the request log failed');
      })
      .finally(() => {
        sweeping = undefined;
      });
    return sweeping;
  }

  const flushTimer = setInterval(() => void flush(), options.flushMs).unref();
  const sweepTimer = setInterval(() => void sweep(), options.sweepIntervalMs).unref();

  return {
    /** Keep one answered request for the next flush. */
    record(row: RequestLogInsert): void {
      if (pending() >= options.maxBuffered) {
        start++;
        dropped.labels('buffer_full').inc();
        // A flush that hangs must not leave the dropped rows' slots to grow without end.
        if (start >= options.maxBuffered) {
          buffer = buffer.slice(start);
          start = 0;
        }
      }
      buffer.push(row);
      if (!keysWritten.has(row.key_id)) {
        keysWritten.set(row.key_id, true);
        keyUses.set(row.key_id, row.at);
      }
      if (pending() >= BATCH_ROWS) void flush();
    },
    /** Write everything buffered now (tests; the gateway's close). */
    flush,
    /** Run the retention and cap sweep now, or wait for the one running. */
    sweep,
    /** Stop the timers and write what is left. */
    async close(): Promise<void> {
      clearInterval(flushTimer);
      clearInterval(sweepTimer);
      await sweeping;
      await flush();
      // Rows recorded while that flush ran.
      if (pending() > 0 || keyUses.size > 0) await flush();
    },
  };
}
export type RequestRecorder = ReturnType<typeof createRequestRecorder>;
