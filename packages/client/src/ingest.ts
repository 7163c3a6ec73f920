import type { MethodResponse } from 'openapi-fetch';
import type { PlatformClient } from './client.js';
import { PlatformProblem } from './problem.js';
import { delay, retryAfterMs } from './waiting.js';

const STATUS = '/v1/commerce/stores/{storeId}/catalog-ingest/{catalogIngestId}/status';

/** An ingest run's status resource: `queued` … `succeeded` (with its summary) or `failed`. */
export type CatalogIngestStatus = MethodResponse<PlatformClient, 'get', typeof STATUS>;

/** The store whose CatalogSet changed, and where to download it. */
export interface IngestCatalogInput {
  /** Your id of the store. */
  storeId: string;
  /** Where the platform downloads the CatalogSet JSON from. */
  callbackUrl: string;
  /** How long to wait for a terminal status. Default 10 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What an ingest got to before its time ran out. */
interface IngestProgress {
  /** The run's id, once the notification was accepted. */
  catalogIngestId?: string;
  /** The last status read, if any was. */
  lastStatus?: CatalogIngestStatus;
}

/** The run did not reach `succeeded` or `failed` within `timeoutMs`. */
export class CatalogIngestTimeoutError extends Error {
  override readonly name = 'CatalogIngestTimeoutError';
  readonly catalogIngestId: string | undefined;
  readonly lastStatus: CatalogIngestStatus | undefined;

  constructor(progress: IngestProgress, timeoutMs: number) {
    const { catalogIngestId, lastStatus } = progress;
    super(
      catalogIngestId === undefined
        ? `catalog ingest notification not accepted within ${timeoutMs} ms`
        : `catalog ingest ${catalogIngestId} was still ${lastStatus?.status ?? 'unread'} after ${timeoutMs} ms`,
    );
    this.catalogIngestId = catalogIngestId;
    this.lastStatus = lastStatus;
  }
}

/** The wait when an answer gives no Retry-After (the platform's is at least a second). */
const DEFAULT_POLL_MS = 1_000;
/** The shortest wait between reads, whatever Retry-After says. */
const MIN_POLL_MS = 100;

const isTerminal = (status: CatalogIngestStatus) =>
  status.status === 'succeeded' || status.status === 'failed';

/**
 * Catalog ingest as one call: notify the platform that the store's CatalogSet at
 * `callbackUrl` changed, then poll the run's status honouring Retry-After until it is
 * `succeeded` or `failed`. Both are returned (a failed run carries its `errors[]`); a
 * refused notification or status read throws a PlatformProblem, the time running out a
 * CatalogIngestTimeoutError. A status read that got no answer, a 5xx or a 429 is tried
 * again at the next poll.
 */
export async function ingestCatalog(
  client: PlatformClient,
  input: IngestCatalogInput,
): Promise<CatalogIngestStatus> {
  const timeoutMs = input.timeoutMs ?? 10 * 60_000;
  // One budget for the whole run, so a request that hangs cannot outlast it either.
  const budget = AbortSignal.timeout(timeoutMs);
  const signal = input.signal ? AbortSignal.any([input.signal, budget]) : budget;
  const progress: IngestProgress = {};
  try {
    return await notifyAndPoll(client, input, signal, progress);
  } catch (error) {
    if (!budget.aborted || input.signal?.aborted) throw error;
    throw new CatalogIngestTimeoutError(progress, timeoutMs);
  }
}

async function notifyAndPoll(
  client: PlatformClient,
  input: IngestCatalogInput,
  signal: AbortSignal,
  progress: IngestProgress,
): Promise<CatalogIngestStatus> {
  const { storeId } = input;
  const notified = await client.POST('/v1/commerce/catalogset-notification', {
    params: { query: { storeId } },
    body: { callbackUrl: input.callbackUrl },
    signal,
  });
  if (notified.data === undefined) {
    throw PlatformProblem.fromResponse(notified.response, notified.error);
  }
  const { catalogIngestId } = notified.data;
  progress.catalogIngestId = catalogIngestId;
  let waitMs = retryAfterMs(notified.response.headers) ?? DEFAULT_POLL_MS;
  for (;;) {
    await delay(Math.max(waitMs, MIN_POLL_MS), signal);
    let answer;
    try {
      answer = await client.GET(STATUS, { params: { path: { storeId, catalogIngestId } }, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      // No answer: the status is read again at the next poll.
    }
    if (answer?.data !== undefined) {
      progress.lastStatus = answer.data;
      if (isTerminal(answer.data)) return answer.data;
    } else if (answer) {
      const problem = PlatformProblem.fromResponse(answer.response, answer.error);
      if (problem.status < 500 && problem.status !== 429) throw problem;
    }
    waitMs = (answer && retryAfterMs(answer.response.headers)) ?? DEFAULT_POLL_MS;
  }
}
