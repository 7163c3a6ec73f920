// Printing what a partner sees: every HTTP exchange the clients make is recorded by the fetch
// they are given, then printed by the step that caused it.
import { check, cyan, dim, green, json, out, red, yellow } from './output.js';

interface Exchange {
  method: string;
  path: string;
  status?: number;
  headers?: Headers;
  body?: unknown;
  error?: Error & { cause?: { code?: string } };
}

/** Every request the clients sent and what came back, in order. */
const exchanges: Exchange[] = [];

/** A fetch that records each exchange (the helpers' retries and polls included). */
export async function recordingFetch(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  // openapi-fetch hands over a Request; a URL and init would do as well.
  const request = input instanceof Request ? input : undefined;
  const url = new URL(request ? request.url : input);
  const exchange: Exchange = {
    method: init?.method ?? request?.method ?? 'GET',
    path: `${url.pathname}${url.search}`,
  };
  exchanges.push(exchange);
  try {
    const response = await fetch(input, init);
    exchange.status = response.status;
    exchange.headers = response.headers;
    if (/json/.test(response.headers.get('content-type') ?? '')) {
      exchange.body = await response
        .clone()
        .json()
        .catch(() => undefined);
    }
    return response;
  } catch (error) {
    exchange.error = error as Exchange['error'];
    throw error;
  }
}

function statusLine(exchange: Exchange): string {
  if (exchange.error) return red(`✗ ${exchange.error.cause?.code ?? exchange.error.message}`);
  const status = exchange.status ?? 0;
  const text = String(status);
  return status < 300 ? green(text) : status < 400 ? yellow(text) : red(text);
}

interface ProblemLike {
  errorCode?: string;
  detail?: string;
  errors?: { code?: string; pointer?: string }[];
}

/** A ProblemDetail's gist: `errorCode: detail` and its first errors. */
export function problemOf(body: unknown): string {
  if (!body || typeof body !== 'object' || !('errorCode' in body)) return '';
  const problem = body as ProblemLike;
  const errors = (problem.errors ?? [])
    .slice(0, 3)
    .map((error) => `${error.code ?? ''}@${error.pointer ?? ''}`)
    .join(' ');
  return `${problem.errorCode}: ${problem.detail ?? ''}${errors ? ` [${errors}]` : ''}`;
}

/** How to print a call's exchanges: the request's interesting fields, the answer's. */
export interface Printing<Body> {
  note?: string;
  /** The interesting part of a successful answer, from its body as the call types it. */
  answer?: (body: Body, headers: Headers) => string;
}

/**
 * Run `send` (one typed call, or a helper making several), then print each exchange it made:
 * `→ METHOD /path` with `note` and `← STATUS` with `answer(body, headers)`, or the
 * ProblemDetail's gist for an error.
 */
export async function exchange<T, Body = unknown>(
  send: () => Promise<T>,
  { note = '', answer }: Printing<Body> = {},
): Promise<T> {
  const first = exchanges.length;
  try {
    return await send();
  } finally {
    for (const sent of exchanges.slice(first)) {
      out(`   ${cyan('→')} ${sent.method} ${sent.path}${note ? `  ${dim(note)}` : ''}`);
      const failed = sent.status !== undefined && sent.status >= 400;
      const gist = failed
        ? problemOf(sent.body)
        : answer && sent.headers
          ? answer(sent.body as Body, sent.headers)
          : '';
      out(`   ${cyan('←')} ${statusLine(sent)}${gist ? `  ${gist}` : ''}`);
    }
  }
}

/** What an openapi-fetch call resolves to. */
interface Answer<Data> {
  data?: Data;
  error?: unknown;
  response: Response;
}

/** One typed call, printed, whose answer must have `status`: its data. */
export async function call<Data>(
  send: () => Promise<Answer<Data>>,
  status: number,
  printing: Printing<Data> = {},
): Promise<Data> {
  const result = await exchange(send, printing);
  const got = result.response.status;
  check(
    got === status && result.data !== undefined,
    `HTTP ${status}`,
    () => `HTTP ${got}${result.error ? ` ${problemOf(result.error) || json(result.error)}` : ''}`,
  );
  return result.data;
}
