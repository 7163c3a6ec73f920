import type { components, paths } from '@pcp/client';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Store } from '../api.js';
import {
  CatalogErrorList,
  changeLine,
  sizeLine,
  type CatalogError,
  type ChangeSummary,
} from '../components/catalog-errors.js';
import { formatDuration, formatInstantSeconds } from '../components/format.js';
import { fieldText } from '../components/form.js';
import { ProblemMessage, problemOf } from '../components/problem.js';
import { liveLabel, useLiveEvents } from '../components/use-events.js';
import { href } from '../router.js';

type IngestRun = components['schemas']['CatalogIngestRun'];
type IngestState = IngestRun['state'];
type IngestStatus =
  paths['/v1/commerce/stores/{storeId}/catalog-ingest/{catalogIngestId}/status']['get']['responses'][200]['content']['application/json'];
type DryRun =
  paths['/v1/commerce/stores/{storeId}/catalogset-validation']['post']['responses'][200]['content']['application/json'];
type Problem = ReturnType<typeof problemOf>;

const PAGE = 20;

const stateLabel: Record<IngestState, string> = {
  queued: 'Queued',
  pulling: 'Downloading',
  processing: 'Validating',
  succeeded: 'Succeeded',
  failed: 'Failed',
};

const finished = (state: IngestState) => state === 'succeeded' || state === 'failed';

function StateBadge({ state }: { state: IngestState }) {
  return <span class={`badge ingest-${state}`}>{stateLabel[state]}</span>;
}

const shortId = (id: string) => id.slice(0, 8);

/**
 * A store's catalog: the active CatalogSet, a form to dry-run a CatalogSet URL or notify a
 * change (ingest it), and every ingest run with its state, timing, changes and errors; or,
 * with `ingestId`, that one run.
 */
export function StoreCatalog({
  store,
  ingestId,
  onChange,
}: {
  store: Store;
  ingestId: string | undefined;
  onChange: () => void;
}) {
  if (ingestId) return <IngestRunDetail storeId={store.storeId} ingestId={ingestId} />;
  return <CatalogOverview store={store} onChange={onChange} />;
}

function CatalogOverview({ store, onChange }: { store: Store; onChange: () => void }) {
  const storeId = store.storeId;
  const runs = useIngestRuns(storeId);
  const live = useLiveEvents(
    `/v1/commerce/stores/${storeId}/events`,
    ['catalog.activated'],
    () => {
      // A run succeeded: the list shows it, the store profile its new catalogSetId.
      runs.refresh();
      onChange();
    },
    runs.refresh,
  );
  return (
    <div class="panel-stack">
      <div class="panel-grid catalog-top">
        <article class="card" aria-labelledby="active-catalog-heading">
          <h2 id="active-catalog-heading">Active catalog</h2>
          {store.catalogSetId ? (
            <dl class="facts">
              <dt>CatalogSet</dt>
              <dd>
                <code data-testid="active-catalog">{store.catalogSetId}</code>
              </dd>
            </dl>
          ) : (
            <p class="empty" data-testid="active-catalog">
              No catalog yet: carts and orders need one. Notify a change to ingest your first.
            </p>
          )}
          <p class="muted">
            Only a succeeded run changes it. The document’s JSON Schema is at{' '}
            <a href="/schemas/catalogset.json">/schemas/catalogset.json</a>.
          </p>
        </article>
        <PublishForm storeId={storeId} onNotified={runs.refresh} />
      </div>
      <IngestRunList storeId={storeId} runs={runs} live={liveLabel[live]} />
    </div>
  );
}

interface RunList {
  readonly runs: readonly IngestRun[];
  readonly nextCursor?: string;
}

/** The fresh first page over what was loaded: older pages stay when the two overlap. */
function mergeNewest(previous: RunList | undefined, page: RunList): RunList {
  const last = page.runs.at(-1);
  if (!previous || !last || page.nextCursor === undefined) return page;
  const at = previous.runs.findIndex((run) => run.catalogIngestId === last.catalogIngestId);
  // More runs came than a page holds: what was loaded below has a gap, start over.
  if (at < 0) return page;
  return {
    runs: [...page.runs, ...previous.runs.slice(at + 1)],
    nextCursor: previous.nextCursor,
  };
}

/**
 * The store's runs, newest first, a page at a time; `refresh` reads the first page again
 * (an answer older than one already shown is dropped), `loadOlder` the next page. While a
 * run is unfinished, its status is followed until it ends.
 */
function useIngestRuns(storeId: string) {
  const [list, setList] = useState<RunList>();
  const [error, setError] = useState<Problem>();
  const [loadingOlder, setLoadingOlder] = useState(false);
  const started = useRef(0);
  const shown = useRef(0);

  const refresh = useCallback(() => {
    const call = ++started.current;
    ok(
      api.GET('/v1/commerce/stores/{storeId}/catalog-ingests', {
        params: { path: { storeId }, query: { limit: PAGE } },
      }),
    ).then(
      (page) => {
        if (call < shown.current) return;
        shown.current = call;
        setError(undefined);
        setList((previous) =>
          mergeNewest(previous, { runs: page.ingests, nextCursor: page.nextCursor }),
        );
      },
      (failure: unknown) => setError(problemOf(failure)),
    );
  }, [storeId]);

  useEffect(() => {
    setList(undefined);
    refresh();
  }, [refresh]);

  const loadOlder = async () => {
    if (!list?.nextCursor) return;
    setLoadingOlder(true);
    try {
      const page = await ok(
        api.GET('/v1/commerce/stores/{storeId}/catalog-ingests', {
          params: { path: { storeId }, query: { limit: PAGE, before: list.nextCursor } },
        }),
      );
      setList((previous) => {
        const known = new Set(previous?.runs.map((run) => run.catalogIngestId));
        return {
          runs: [
            ...(previous?.runs ?? []),
            ...page.ingests.filter((run) => !known.has(run.catalogIngestId)),
          ],
          nextCursor: page.nextCursor,
        };
      });
    } catch (failure) {
      setError(problemOf(failure));
    } finally {
      setLoadingOlder(false);
    }
  };

  // Runs of a store finish in notification order, so the oldest unfinished one is the one
  // that moves next; when its status differs from its row, the list is read again.
  const next = list?.runs.findLast((run) => !finished(run.state));
  const watched = useIngestStatus(storeId, next?.catalogIngestId);
  useEffect(() => {
    if (next && watched.data?.catalogIngestId === next.catalogIngestId) {
      if (watched.data.status !== next.state) refresh();
    }
  }, [watched.data, next?.catalogIngestId, next?.state, refresh]);

  return { list, error, refresh, loadOlder, loadingOlder, following: next !== undefined };
}

const FIRST_POLL_MS = 2_000;
const MAX_POLL_MS = 15_000;

/**
 * A run's status, read again while it is unfinished. Polling, not the live stream: the
 * store's stream announces only a run that succeeded (catalog.activated, which names no
 * run), and nothing announces a failed one or a step (queued → pulling → processing). So
 * the one run in progress is polled, no sooner than its Retry-After and less often the
 * longer it takes (up to every 15 s), and nothing is polled once it ended.
 */
function useIngestStatus(storeId: string, ingestId: string | undefined) {
  const [state, setState] = useState<{ data?: IngestStatus; error?: Problem }>({});
  useEffect(() => {
    setState({});
    if (!ingestId) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    let delay = FIRST_POLL_MS;
    let lastStatus: IngestState | undefined;
    const read = async () => {
      const call = api.GET(
        '/v1/commerce/stores/{storeId}/catalog-ingest/{catalogIngestId}/status',
        {
          params: { path: { storeId, catalogIngestId: ingestId } },
        },
      );
      try {
        const data = await ok(call);
        if (stopped) return;
        setState({ data });
        if (finished(data.status)) return;
        // A step resets the backoff: the next one often follows soon.
        if (data.status !== lastStatus) delay = FIRST_POLL_MS;
        lastStatus = data.status;
        const retryAfter = Number((await call).response.headers.get('retry-after')) * 1000;
        timer = setTimeout(() => void read(), Math.max(delay, retryAfter || 0));
      } catch (failure) {
        if (stopped) return;
        const problem = problemOf(failure);
        setState((previous) => ({ ...previous, error: problem }));
        // A run that is not there (404) or a refused read stays so: only a transient failure
        // (the network, 429, 5xx) is read again.
        const status = 'status' in problem ? problem.status : 0;
        if (status >= 400 && status < 500 && status !== 429) return;
        timer = setTimeout(() => void read(), delay);
      }
      delay = Math.min(delay * 1.5, MAX_POLL_MS);
    };
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [storeId, ingestId]);
  return state;
}

function IngestRunList({
  storeId,
  runs,
  live,
}: {
  storeId: string;
  runs: ReturnType<typeof useIngestRuns>;
  live: string;
}) {
  const { list } = runs;
  return (
    <section aria-labelledby="runs-heading">
      <div class="section-head">
        <h2 id="runs-heading">Ingest runs</h2>
        <p class="muted live-state" role="status">
          {runs.following ? 'A run is in progress: following it…' : live}
        </p>
      </div>
      <ProblemMessage error={runs.error} />
      {list && list.runs.length === 0 && (
        <p class="empty">No ingest yet. Notify a change above to ingest a CatalogSet.</p>
      )}
      {list && list.runs.length > 0 && (
        <div class="table-wrap">
          <table class="table ingest-runs">
            <caption class="visually-hidden">The store’s catalog ingest runs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">State</th>
                <th scope="col">Notified</th>
                <th scope="col" class="wide-only">
                  Started
                </th>
                <th scope="col" class="wide-only">
                  Finished
                </th>
                <th scope="col">Took</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {list.runs.map((run) => (
                <tr key={run.catalogIngestId}>
                  <th scope="row">
                    <a
                      href={href(`/stores/${storeId}/catalog/${run.catalogIngestId}`)}
                      aria-label={`Run ${shortId(run.catalogIngestId)}`}
                    >
                      <code class="run-id">{shortId(run.catalogIngestId)}</code>
                    </a>
                  </th>
                  <td>
                    <StateBadge state={run.state} />
                  </td>
                  <td>{formatInstantSeconds(run.createdAt)}</td>
                  <td class="wide-only">
                    {run.startedAt ? formatInstantSeconds(run.startedAt) : '—'}
                  </td>
                  <td class="wide-only">{formatInstantSeconds(run.finishedAt)}</td>
                  <td>{formatDuration(run.startedAt, run.finishedAt)}</td>
                  <td>
                    <RunOutcome storeId={storeId} run={run} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list?.nextCursor && (
        <div class="pager">
          <button
            type="button"
            class="button secondary"
            disabled={runs.loadingOlder}
            onClick={() => void runs.loadOlder()}
          >
            {runs.loadingOlder ? 'Loading…' : 'Load older'}
          </button>
        </div>
      )}
    </section>
  );
}

function RunOutcome({ storeId, run }: { storeId: string; run: IngestRun }) {
  if (run.state === 'succeeded' && run.changeSummary) {
    return (
      <span class="outcome">
        <span>{changeLine(run.changeSummary)}</span>
        <span class="subtle">{sizeLine(run.changeSummary)}</span>
      </span>
    );
  }
  if (run.state === 'failed') {
    return (
      <a href={href(`/stores/${storeId}/catalog/${run.catalogIngestId}`)}>
        {run.errorCount === 1 ? '1 error' : `${run.errorCount} errors`}
      </a>
    );
  }
  return <span class="muted">In progress</span>;
}

/** What the form did last: the verdict of a dry run, or the run a notification started. */
type Outcome =
  | { readonly kind: 'dry-run'; readonly url: string; readonly result: DryRun }
  | { readonly kind: 'notified'; readonly url: string; readonly catalogIngestId: string };

/**
 * One URL, two actions: a dry run (download and validate now, change nothing) or a
 * notification (ingest it). Enter runs the dry run, the harmless one.
 */
function PublishForm({ storeId, onNotified }: { storeId: string; onNotified: () => void }) {
  const [pending, setPending] = useState<'dry-run' | 'notify'>();
  const [outcome, setOutcome] = useState<Outcome>();
  const [problem, setProblem] = useState<Problem>();

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const action = event.submitter?.getAttribute('value') === 'notify' ? 'notify' : 'dry-run';
    // The API's limits (length, scheme, host) are its own: its ProblemDetail says which.
    const callbackUrl = fieldText(form, 'callbackUrl').trim();
    setPending(action);
    setOutcome(undefined);
    setProblem(undefined);
    try {
      if (action === 'dry-run') {
        const result = await ok(
          api.POST('/v1/commerce/stores/{storeId}/catalogset-validation', {
            params: { path: { storeId } },
            body: { callbackUrl },
          }),
        );
        setOutcome({ kind: 'dry-run', url: callbackUrl, result });
      } else {
        const accepted = await ok(
          api.POST('/v1/commerce/catalogset-notification', {
            params: { query: { storeId } },
            body: { callbackUrl },
          }),
        );
        setOutcome({
          kind: 'notified',
          url: callbackUrl,
          catalogIngestId: accepted.catalogIngestId,
        });
        onNotified();
      }
    } catch (failure) {
      setProblem(problemOf(failure));
    } finally {
      setPending(undefined);
    }
  };

  return (
    <form
      class="card form publish-form"
      aria-labelledby="publish-heading"
      aria-busy={pending ? 'true' : undefined}
      onSubmit={(event) => void submit(event)}
    >
      <h2 id="publish-heading">Check or publish a CatalogSet</h2>
      <p class="muted">
        The platform downloads the document at your URL (https, a public host, up to 50 MB). A dry
        run validates it and counts its changes, leaving the active catalog as it is; notifying a
        change ingests it.
      </p>
      <label for="catalogset-url">CatalogSet URL</label>
      <input
        id="catalogset-url"
        name="callbackUrl"
        type="url"
        inputMode="url"
        required
        spellcheck={false}
        autoComplete="url"
        placeholder="https://pos.example.com/catalogs/store.json"
      />
      <div class="button-row">
        <button
          type="submit"
          name="action"
          value="dry-run"
          class="button secondary"
          disabled={pending !== undefined}
        >
          Dry run
        </button>
        <button
          type="submit"
          name="action"
          value="notify"
          class="button primary"
          disabled={pending !== undefined}
        >
          Notify a change
        </button>
      </div>
      <p class="notice" role="status">
        {pending === 'dry-run' && 'Downloading and validating… (a dry run may take up to 90 s)'}
        {pending === 'notify' && 'Notifying…'}
        {outcome?.kind === 'notified' && (
          <>
            Ingest queued as run{' '}
            <a href={href(`/stores/${storeId}/catalog/${outcome.catalogIngestId}`)}>
              {shortId(outcome.catalogIngestId)}
            </a>
            ; it shows in the list below.
          </>
        )}
      </p>
      <ProblemMessage error={problem} />
      {outcome?.kind === 'dry-run' && <DryRunVerdict url={outcome.url} result={outcome.result} />}
    </form>
  );
}

function DryRunVerdict({ url, result }: { url: string; result: DryRun }) {
  return (
    <div class={`verdict ${result.valid ? 'verdict-valid' : 'verdict-invalid'}`}>
      <p class="verdict-title" role="status">
        {result.valid
          ? 'Valid: an ingest of this document would succeed.'
          : `Invalid: ${result.errors.length === 1 ? '1 error' : `${result.errors.length} errors`}. An ingest would fail.`}
      </p>
      <p class="subtle verdict-url">
        Dry run of <code>{url}</code>. Nothing was stored or activated.
      </p>
      {result.summary && <SummaryFacts summary={result.summary} />}
      {result.errors.length > 0 && (
        <CatalogErrorList errors={result.errors} caption="Errors of the dry run" />
      )}
    </div>
  );
}

function SummaryFacts({ summary }: { summary: ChangeSummary }) {
  return (
    <dl class="facts">
      <dt>Size</dt>
      <dd>{sizeLine(summary)}</dd>
      <dt>Changes</dt>
      <dd data-testid="change-summary">{changeLine(summary)}</dd>
    </dl>
  );
}

/** One ingest run: its state, timing, summary or errors; followed while it is unfinished. */
function IngestRunDetail({ storeId, ingestId }: { storeId: string; ingestId: string }) {
  const status = useIngestStatus(storeId, ingestId);
  const run = status.data;
  const errors: readonly CatalogError[] = run?.errors ?? [];
  return (
    <section aria-labelledby="run-heading" class="panel-stack">
      <p class="breadcrumb">
        <a href={href(`/stores/${storeId}/catalog`)}>All ingest runs</a>
      </p>
      <h2 id="run-heading">
        Ingest run <code>{ingestId}</code>
      </h2>
      <ProblemMessage error={status.error} />
      {run && (
        <article class="card">
          <dl class="facts">
            <dt>State</dt>
            <dd>
              <StateBadge state={run.status} />{' '}
              {!finished(run.status) && (
                <span class="muted" role="status">
                  Following it until it ends…
                </span>
              )}
            </dd>
            <dt>Notified</dt>
            <dd>{formatInstantSeconds(run.createdAt)}</dd>
            <dt>{finished(run.status) ? 'Finished' : 'Last step'}</dt>
            <dd>{formatInstantSeconds(run.updatedAt)}</dd>
            {finished(run.status) && (
              <>
                <dt>Took, from notification</dt>
                <dd>{formatDuration(run.createdAt, run.updatedAt)}</dd>
              </>
            )}
          </dl>
          {run.summary && (
            <>
              <h3>Changes against the catalog active before</h3>
              <SummaryFacts summary={run.summary} />
            </>
          )}
          {run.status === 'failed' && errors.length === 0 && (
            <p class="muted">The run failed without a reason recorded.</p>
          )}
        </article>
      )}
      {errors.length > 0 && (
        <CatalogErrorList
          errors={errors}
          caption={`${errors.length === 1 ? '1 error' : `${errors.length} errors`}: the active catalog did not change`}
        />
      )}
    </section>
  );
}
