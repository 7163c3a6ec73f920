// Error documentation rendered: a code's URL and ProblemDetail example, its page and the index,
// as JSON or as HTML.
import {
  errorCodes,
  isErrorCode,
  type ErrorCode,
  type ErrorCodeInfo,
  type ProblemDetail,
} from '@pcp/contracts';
import { errorDocs, type ErrorDoc } from './error-docs.js';
import { guideUrl } from './guides.js';

/** Every code, in the table's order (grouped by kind). */
export const documentedCodes = Object.keys(errorCodes) as ErrorCode[];

/** The URL of a code's page: ProblemDetail `type`. */
export function errorDocUrl(docsUrl: string, code: ErrorCode): string {
  return `${docsUrl}/errors/${code}`;
}

/** The code's ProblemDetail as the platform renders it, with its documented occurrence. */
export function problemExample(code: ErrorCode, docsUrl: string): ProblemDetail {
  const info: ErrorCodeInfo = errorCodes[code];
  const { example } = errorDocs[code] as ErrorDoc;
  return {
    type: errorDocUrl(docsUrl, code),
    title: info.title,
    status: info.status,
    detail: example.detail,
    instance: example.instance,
    requestId: '3b9f6a0e-2d1c-4c8e-9a7f-5e4d3c2b1a09',
    timestamp: '2026-11-22T10:00:00.000Z',
    errorCode: code,
    errorCategory: info.category,
    retryable: info.retryable,
    ...(example.errors ? { errors: [...example.errors] } : {}),
  };
}

/** A code's page as JSON (`GET {DOCS_URL}/errors/<code>` without a preference for HTML). */
export interface ErrorPage {
  readonly errorCode: ErrorCode;
  readonly status: number;
  readonly category: string;
  readonly retryable: boolean;
  readonly title: string;
  readonly description: string;
  readonly action: string;
  /** The guide section with the rules behind the code. */
  readonly rules: string;
  readonly example: ProblemDetail;
}

/** The page of `code`, or undefined when it names no error code. */
export function errorPage(code: string, docsUrl: string): ErrorPage | undefined {
  if (!isErrorCode(code)) return undefined;
  const info = errorCodes[code];
  const doc: ErrorDoc = errorDocs[code];
  return {
    errorCode: code,
    status: info.status,
    category: info.category,
    retryable: info.retryable,
    title: info.title,
    description: doc.description,
    action: doc.action,
    rules: guideUrl(docsUrl, doc.rules),
    example: problemExample(code, docsUrl),
  };
}

/** The index: every code with its status and where its page is. */
export function errorIndex(docsUrl: string) {
  return {
    errors: documentedCodes.map((code) => ({
      errorCode: code,
      status: errorCodes[code].status,
      title: errorCodes[code].title,
      retryable: errorCodes[code].retryable,
      url: errorDocUrl(docsUrl, code),
    })),
  };
}

/** An Accept header holds at most this many media ranges we look at (headers are bounded anyway). */
const MAX_MEDIA_RANGES = 32;

/**
 * The quality `accept` gives a media type (RFC 9110 §12.5.1): the most specific matching
 * range wins (the type and subtype, then the type with any subtype, then any type); 0 when
 * nothing matches.
 */
function qualityOf(accept: string, mediaType: string): number {
  const [type] = mediaType.split('/');
  let best = { specificity: -1, quality: 0 };
  for (const range of accept.split(',', MAX_MEDIA_RANGES)) {
    const [name = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const specificity =
      name === mediaType ? 2 : name === `${type}/*` ? 1 : name === '*/*' ? 0 : undefined;
    if (specificity === undefined || specificity < best.specificity) continue;
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    best = { specificity, quality: Number.isFinite(quality) ? quality : 0 };
  }
  return best.quality;
}

/** Whether the client prefers an HTML page to JSON: a browser does; curl and API clients do not. */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = qualityOf(accept, 'text/html');
  return html > 0 && html > qualityOf(accept, 'application/json');
}

const htmlEscapes: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => htmlEscapes[character] ?? character);
}

/** No scripts, no external assets: the pages are text and inline CSS only. */
export const errorPageSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'";

const style = `
body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #1f2328; }
h1 { font-size: 1.6rem; margin-bottom: 0.25rem; }
code, pre { font: 0.9rem ui-monospace, monospace; }
pre { background: #f6f8fa; padding: 1rem; overflow-x: auto; border-radius: 6px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; }
dt { font-weight: 600; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.3rem 0.6rem; border-bottom: 1px solid #d0d7de; }
.subtitle { color: #59636e; margin-top: 0; }
`;

/** A page of the docs: the given body with the pages' style, no script, nothing loaded. */
export function htmlDocument(title: string, body: string): string {
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)}</title><style>${style}</style></head>` +
    `<body>${body}</body></html>\n`
  );
}

/** A code's page for a person. */
export function renderErrorPage(page: ErrorPage, docsUrl: string): string {
  const retry = page.retryable
    ? 'Yes: retry later, after the Retry-After seconds when the answer carries them, ' +
      'otherwise with exponential backoff; on place, with the same Idempotency-Key.'
    : 'No: the same request gets the same answer until what it names is fixed.';
  return htmlDocument(
    `${page.errorCode}: ${page.title}`,
    `<p><a href="${escapeHtml(`${docsUrl}/errors`)}">All error codes</a></p>` +
      `<h1><code>${escapeHtml(page.errorCode)}</code></h1>` +
      `<p class="subtitle">${escapeHtml(page.title)}</p>` +
      '<dl>' +
      `<dt>HTTP status</dt><dd>${page.status}</dd>` +
      `<dt>Category</dt><dd><code>${escapeHtml(page.category)}</code></dd>` +
      `<dt>Retryable</dt><dd>${escapeHtml(retry)}</dd>` +
      '</dl>' +
      `<h2>What happened</h2><p>${escapeHtml(page.description)}</p>` +
      `<h2>What to do</h2><p>${escapeHtml(page.action)}</p>` +
      `<h2>The rules</h2><p>The guide explains the rules behind this code: ` +
      `<a href="${escapeHtml(page.rules)}">${escapeHtml(page.rules)}</a>.</p>` +
      '<h2>Example</h2><p>The body of such an answer (<code>application/problem+json</code>):</p>' +
      `<pre>${escapeHtml(JSON.stringify(page.example, null, 2))}</pre>`,
  );
}

/** The index for a person: every code, linked to its page. */
export function renderErrorIndex(docsUrl: string): string {
  const rows = errorIndex(docsUrl)
    .errors.map(
      (entry) =>
        `<tr><td><a href="${escapeHtml(entry.url)}"><code>${escapeHtml(entry.errorCode)}</code></a></td>` +
        `<td>${entry.status}</td><td>${escapeHtml(entry.title)}</td>` +
        `<td>${entry.retryable ? 'yes' : 'no'}</td></tr>`,
    )
    .join('');
  return htmlDocument(
    'Error codes',
    '<h1>Error codes</h1>' +
      '<p>Every error is an RFC 9457 ProblemDetail (<code>application/problem+json</code>) whose ' +
      '<code>errorCode</code> is one of these; its <code>type</code> links to the page below.</p>' +
      '<table><thead><tr><th>errorCode</th><th>Status</th><th>Title</th><th>Retryable</th></tr>' +
      `</thead><tbody>${rows}</tbody></table>`,
  );
}
