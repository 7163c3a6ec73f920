import { useState } from 'preact/hooks';
import { api, ok, type RequestErrorGroups, type RequestLogPage, type Session } from '../api.js';
import { CopyButton } from '../components/copy.js';
import { formatInstant } from '../components/format.js';
import { CursorPager, useCursorPages } from '../components/cursor-pages.js';
import { ProblemMessage } from '../components/problem.js';
import { useLoad } from '../components/use-load.js';

const PAGE = 50;

/** What the log is filtered by: the API's `status` (error or one code) and `errorCode`. */
interface Filter {
  readonly status: string;
  readonly errorCode: string;
}

const noFilter: Filter = { status: '', errorCode: '' };

/** The status filter's choices: every error, or one status code partners meet often. */
const statusChoices = [
  ['', 'Any status'],
  ['error', 'Errors (400 and above)'],
  ...[
    '200',
    '201',
    '204',
    '400',
    '401',
    '403',
    '404',
    '409',
    '422',
    '429',
    '500',
    '503',
    '504',
  ].map((code) => [code, code] as const),
] as const;

function readRequests(session: Session, filter: Filter, before: string | undefined) {
  const query = {
    limit: PAGE,
    ...(before ? { before } : {}),
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.errorCode ? { errorCode: filter.errorCode } : {}),
  };
  return session.kind === 'commerce'
    ? ok(api.GET('/v1/commerce/requests', { params: { query } }))
    : ok(api.GET('/v1/marketfront/requests', { params: { query } }));
}

function readErrors(session: Session) {
  return session.kind === 'commerce'
    ? ok(api.GET('/v1/commerce/requests/errors'))
    : ok(api.GET('/v1/marketfront/requests/errors'));
}

/**
 * The page of an error code (the ProblemDetail's `type`): the grouped errors name each recent
 * code's; an older code's follows the same pattern, `<docs>/errors/<code>`.
 */
function docsLinkOf(groups: RequestErrorGroups['groups']) {
  const known = new Map(groups.map((group) => [group.errorCode, group.docsUrl]));
  const base = groups[0]?.docsUrl.replace(/\/errors\/[^/]+$/, '');
  return (code: string) =>
    known.get(code) ?? (base === undefined ? undefined : `${base}/errors/${code}`);
}

/**
 * The partner's request log (docs/guide/requests.md): the last day's errors grouped by code
 * above, each filtering the log when chosen; then every request, newest first, a page at a time.
 */
export function RequestsPage({ session }: { session: Session }) {
  const [filter, setFilter] = useState<Filter>(noFilter);
  const pages = useCursorPages();
  const before = pages.cursor;
  const errors = useLoad(() => readErrors(session), session.kind);
  const log = useLoad(
    () => readRequests(session, filter, before),
    `${filter.status}|${filter.errorCode}|${before ?? ''}`,
  );
  const docsOf = docsLinkOf(errors.data?.groups ?? []);

  const applyFilter = (next: Filter) => {
    setFilter(next);
    pages.reset();
  };
  const refresh = () => {
    errors.reload();
    log.reload();
  };

  return (
    <section>
      <div class="page-head">
        <h1>Requests</h1>
        <button type="button" class="button secondary" onClick={refresh} disabled={log.loading}>
          Refresh
        </button>
      </div>
      <p class="muted">
        Every request your {session.mode === 'live' ? 'live' : 'test'} keys made, as the platform
        answered it: never bodies or headers. Kept 30 days.
      </p>
      <ErrorGroups
        errors={errors.data}
        error={errors.error}
        active={filter.errorCode}
        onChoose={(errorCode) => applyFilter({ status: '', errorCode })}
      />
      <h2 id="request-log">Request log</h2>
      {/* Keyed by the filter: one applied from an error group shows in the form too. */}
      <FilterForm
        key={`${filter.status}|${filter.errorCode}`}
        filter={filter}
        onApply={applyFilter}
      />
      <ProblemMessage error={log.error} />
      {log.data && (
        <RequestTable
          page={log.data}
          docsOf={docsOf}
          filtered={filter.status !== '' || filter.errorCode !== ''}
        />
      )}
      {log.data && <CursorPager pages={pages} nextCursor={log.data.nextCursor} />}
    </section>
  );
}

function ErrorGroups(props: {
  errors: RequestErrorGroups | undefined;
  error: Parameters<typeof ProblemMessage>[0]['error'];
  active: string;
  onChoose: (errorCode: string) => void;
}) {
  const { errors } = props;
  return (
    <article class="card error-groups" aria-labelledby="recent-errors">
      <h2 id="recent-errors">Recent errors</h2>
      <ProblemMessage error={props.error} />
      {errors && errors.groups.length === 0 && <p class="empty">No errors in the last 24 hours.</p>}
      {errors && errors.groups.length > 0 && (
        <>
          <p class="muted">
            Since {formatInstant(errors.since)}, by code. Choose a code to see its requests.
          </p>
          <ul class="error-group-list">
            {errors.groups.map((group) => (
              <li key={group.errorCode} class="error-group">
                <button
                  type="button"
                  class="button link error-group-code"
                  aria-pressed={props.active === group.errorCode}
                  onClick={() => props.onChoose(group.errorCode)}
                >
                  <code>{group.errorCode}</code>
                </button>
                <span class="error-group-count">
                  {group.count} {group.count === 1 ? 'request' : 'requests'}
                </span>
                <span class="muted">
                  HTTP {group.status} · last {formatInstant(group.lastAt)} ·{' '}
                  <code>{group.lastRequestId}</code>
                </span>
                <a href={group.docsUrl} target="_blank" rel="noreferrer">
                  What {group.errorCode} means
                </a>
              </li>
            ))}
          </ul>
        </>
      )}
    </article>
  );
}

function FilterForm({ filter, onApply }: { filter: Filter; onApply: (filter: Filter) => void }) {
  // The form's own copy: the log changes when the filter is applied, not on each keystroke.
  const [status, setStatus] = useState(filter.status);
  const [errorCode, setErrorCode] = useState(filter.errorCode);
  const filtered = filter.status !== '' || filter.errorCode !== '';
  return (
    <form
      class="inline-form request-filter"
      aria-label="Filter the request log"
      onSubmit={(event) => {
        event.preventDefault();
        onApply({ status, errorCode: errorCode.trim().toUpperCase() });
      }}
    >
      <label>
        Status
        <select value={status} onChange={(event) => setStatus(event.currentTarget.value)}>
          {statusChoices.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Error code
        <input
          type="text"
          value={errorCode}
          placeholder="STORE_NOT_FOUND"
          pattern="[A-Za-z_]*"
          maxLength={100}
          spellcheck={false}
          onInput={(event) => setErrorCode(event.currentTarget.value)}
        />
      </label>
      <button type="submit" class="button primary">
        Filter
      </button>
      {filtered && (
        <button type="button" class="button secondary" onClick={() => onApply(noFilter)}>
          Show all
        </button>
      )}
    </form>
  );
}

function RequestTable(props: {
  page: RequestLogPage;
  docsOf: (code: string) => string | undefined;
  filtered: boolean;
}) {
  const { page, docsOf } = props;
  if (page.requests.length === 0) {
    return (
      <p class="empty">
        {props.filtered
          ? 'No request matches this filter.'
          : 'No requests yet. Each call made with your key shows here within a second.'}
      </p>
    );
  }
  return (
    <div class="table-wrap">
      <table class="table request-table">
        <caption class="visually-hidden">Your requests, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Request</th>
            <th scope="col">Status</th>
            <th scope="col">Error code</th>
            <th scope="col">Request id</th>
            <th scope="col">Idempotency-Key</th>
            <th scope="col" class="numeric">
              Latency
            </th>
          </tr>
        </thead>
        <tbody>
          {page.requests.map((entry) => {
            const docs = entry.errorCode ? docsOf(entry.errorCode) : undefined;
            return (
              <tr key={entry.requestId + entry.at}>
                <td class="nowrap">
                  <time dateTime={entry.at}>{formatInstant(entry.at)}</time>
                </td>
                <td>
                  <span class="method">{entry.method}</span> <code>{entry.path}</code>
                </td>
                <td>
                  <span class={`badge http-${Math.floor(entry.status / 100)}xx`}>
                    {entry.status}
                  </span>
                </td>
                <td class="nowrap">
                  {entry.errorCode &&
                    (docs ? (
                      <a href={docs} target="_blank" rel="noreferrer">
                        <code>{entry.errorCode}</code>
                      </a>
                    ) : (
                      <code>{entry.errorCode}</code>
                    ))}
                </td>
                <td>
                  <span class="copyable">
                    <code>{entry.requestId}</code>
                    <CopyButton
                      text={entry.requestId}
                      label={`Copy request id ${entry.requestId}`}
                    />
                  </span>
                </td>
                <td>{entry.idempotencyKey ? <code>{entry.idempotencyKey}</code> : '—'}</td>
                <td class="numeric">{entry.latencyMs} ms</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
