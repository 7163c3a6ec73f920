import type { Logger, ServiceMetrics } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import { Counter } from 'prom-client';
import type { GatewayDatabase } from '../db/partner.table.js';
import {
  deleteRequestsBefore,
  insertRequests,
  touchKeys,
  type RequestLogInsert,
} from '../db/request-log.repository.js';

/** Rows of one INSERT; a flush that finds this many waiting writes at once. */
const BATCH_ROWS = 500;
/** Rows of one DELETE of the sweep, and the most DELETEs per sweep. */
const SWEEP_BATCH_ROWS = 5_000;
const SWEEP_MAX_BATCHES = 20;
/** The most of a tenant's oldest rows one write deletes past its cap (more than it writes). */
const MAX_TRIMMED_PER_WRITE = 5_000;
/** A key's last use is written at most this often per replica. */
const KEY_USE_RESOLUTION_MS = 60_000;
/** Keys whose last write is remembered, and tenants whose dropped rows are told per flush. */
const MAX_TRACKED = 10_000;
/** Tenants named in one flush's warning about dropped rows. */
const MAX_TENANTS_WARNED = 20;
const DAY_MS = 86_400_000;

export interface RequestRecorderOptions {
  readonly db: Kysely<GatewayDatabase>;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  readonly flushMs: number;
  readonly maxBuffered: number;
  readonly maxBufferedPerTenant: number;
  readonly retentionDays: number;
  readonly maxPerTenant: number;
  readonly sweepIntervalMs: number;
}

/** One tenant's unwritten rows: `rows[start…]`, so dropping the oldest moves `start`. */
interface TenantQueue {
  rows: RequestLogInsert[];
  start: number;
}
const queued = (queue: TenantQueue) => queue.rows.length - queue.start;

/**
 * The request log's writer (docs/guide/requests.md): requests are buffered in memory and
 * written in batches, one multi-row INSERT each, so no request waits on a database round
 * trip. Each tenant has its own queue of at most `maxBufferedPerTenant` unwritten rows within
 * the replica's `maxBuffered`: past either, the tenant's own oldest row is dropped (a tenant
 * with none queued loses the new one), so a flooding tenant drops its own rows, never another's;
 * each drop is counted and the tenants that dropped are logged. Each write trims its tenants
 * to their newest `maxPerTenant` in the same transaction. Keys' last use goes with the same
 * flush, at most once a minute per key. A sweep deletes requests past the retention.
 */
export function createRequestRecorder(options: RequestRecorderOptions) {
  const { db, logger } = options;
  const dropped = new Counter({
    name: 'pcp_gateway_request_log_dropped_total',
    help:
      'Request log rows never written: the tenant’s share of the buffer or the buffer was ' +
      'full, or the database refused a batch',
    labelNames: ['reason'],
    registers: [options.metrics.registry],
  });
  const swept = new Counter({
    name: 'pcp_gateway_request_log_swept_total',
    help: 'Request log rows deleted: past the retention (the sweep), or past the tenant cap (each write)',
    labelNames: ['reason'],
    registers: [options.metrics.registry],
  });

  // Tenants in the order their queues opened, so batches take each tenant's oldest in turn.
  const queues = new Map<string, TenantQueue>();
  let pendingRows = 0;
  const droppedByTenant = new Map<string, number>();
  const keyUses = new Map<string, Date>();
  const keysWritten = new LRUCache<string, true>({ max: MAX_TRACKED, ttl: KEY_USE_RESOLUTION_MS });
  let flushing: Promise<void> | undefined;
  let sweeping: Promise<void> | undefined;
  const { maxBuffered, maxBufferedPerTenant } = options;

  /** Up to BATCH_ROWS rows, round the tenants: each queue's oldest first. */
  function takeBatch(): RequestLogInsert[] {
    const batch: RequestLogInsert[] = [];
    while (batch.length < BATCH_ROWS && queues.size > 0) {
      const share = Math.max(1, Math.floor((BATCH_ROWS - batch.length) / queues.size));
      for (const [tenantId, queue] of queues) {
        const taken = queue.rows.slice(queue.start, queue.start + share);
        batch.push(...taken);
        queue.start += taken.length;
        if (queued(queue) === 0) queues.delete(tenantId);
        else compact(queue);
        if (batch.length >= BATCH_ROWS) break;
      }
    }
    pendingRows -= batch.length;
    return batch;
  }

  /** Let go of the slots of rows taken or dropped, so a queue never outgrows twice its share. */
  function compact(queue: TenantQueue): void {
    if (queue.start >= Math.max(Math.min(maxBufferedPerTenant, maxBuffered), BATCH_ROWS)) {
      queue.rows = queue.rows.slice(queue.start);
      queue.start = 0;
    }
  }

  function dropOldest(tenantId: string, queue: TenantQueue, reason: string): void {
    queue.start++;
    pendingRows--;
    if (queued(queue) === 0) queues.delete(tenantId);
    else compact(queue);
    countDrop(tenantId, reason);
  }

  function countDrop(tenantId: string, reason: string): void {
    dropped.labels(reason).inc();
    if (droppedByTenant.has(tenantId) || droppedByTenant.size < MAX_TRACKED) {
      droppedByTenant.set(tenantId, (droppedByTenant.get(tenantId) ?? 0) + 1);
    }
  }

  /** Which tenants lost rows since the last flush: the operator's lead to a flood. */
  function warnOfDrops(): void {
    if (droppedByTenant.size === 0) return;
    const tenants = [...droppedByTenant]
      .sort((a, b) => b[1] - a[1])
      .slice(0, MAX_TENANTS_WARNED)
      .map(([tenantId, rows]) => ({ tenantId, rows }));
    logger.warn(
      { tenants, tenantCount: droppedByTenant.size },
      'request log rows dropped: buffer full',
    );
    droppedByTenant.clear();
  }

  /** Write what is buffered; a batch the database refuses is dropped (and counted). */
  async function writeAll(): Promise<void> {
    warnOfDrops();
    if (keyUses.size > 0) {
      const uses = [...keyUses].map(([keyId, at]) => ({ keyId, at }));
      keyUses.clear();
      await touchKeys(db, uses).catch((error: unknown) => {
        logger.warn({ err: error }, 'writing API keys’ last use failed');
      });
    }
    while (pendingRows > 0) {
      const batch = takeBatch();
      try {
        const trimmed = await insertRequests(
          db,
          batch,
          options.maxPerTenant,
          MAX_TRIMMED_PER_WRITE,
        );
        swept.labels('cap').inc(trimmed);
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
      let queue = queues.get(row.tenant_id);
      if (queue && queued(queue) >= maxBufferedPerTenant) {
        dropOldest(row.tenant_id, queue, 'tenant_buffer_full');
      } else if (pendingRows >= maxBuffered) {
        if (!queue) {
          countDrop(row.tenant_id, 'buffer_full');
          return;
        }
        dropOldest(row.tenant_id, queue, 'buffer_full');
      }
      queue = queues.get(row.tenant_id);
      if (!queue) {
        queue = { rows: [], start: 0 };
        queues.set(row.tenant_id, queue);
      }
      queue.rows.push(row);
      pendingRows++;
      if (!keysWritten.has(row.key_id)) {
        keysWritten.set(row.key_id, true);
        keyUses.set(row.key_id, row.at);
      }
      if (pendingRows >= BATCH_ROWS) void flush();
    },
    /** Write everything buffered now (tests; the gateway's close). */
    flush,
    /** Run the retention sweep now, or wait for the one running. */
    sweep,
    /** Stop the timers and write what is left. */
    async close(): Promise<void> {
      clearInterval(flushTimer);
      clearInterval(sweepTimer);
      await sweeping;
      await flush();
      // Rows recorded while that flush ran.
      if (pendingRows > 0 || keyUses.size > 0) await flush();
    },
  };
}
export type RequestRecorder = ReturnType<typeof createRequestRecorder>;
