// Requests to a partner's URL under the outbound rules: their options, answers and failures,
// and the redirects followed, each target checked again, in a trace of their own.
import { ROOT_CONTEXT, context as otelContext, SpanKind, trace } from '@opentelemetry/api';
import type http from 'node:http';
import type { AddressAllowlist } from './ip-address.js';
import { checkTarget } from './outbound-address.js';
import type { OutboundAgents } from './outbound-agents.js';
import { CallbackError, FetchFailure, size } from './outbound-failure.js';
import {
  CANCELLED,
  DEADLINE,
  requestOnce,
  type Answer,
  type Exchange,
} from './outbound-request.js';

/** Rules and limits every outbound request to a partner's URL obeys. */
export interface SafeOutboundOptions {
  /** Admit plain http too (local runs, tests); otherwise https only. */
  allowHttp: boolean;
  /** Non-public addresses an operator admits; every other address must be public. */
  allowlist: AddressAllowlist;
  /** Cap on the response body, counted in decoded bytes. */
  maxBytes: number;
  /** Per connection, until the TCP (or TLS) handshake completes. */
  connectTimeoutMs: number;
  /** For the whole exchange: connections, redirects and body. */
  totalTimeoutMs: number;
  /** How messages name the URL, e.g. the request field it came from. Default 'url'. */
  urlName?: string;
  /**
   * Keep-alive connections to reuse (made with this `allowlist`); without it every request
   * opens a connection of its own.
   */
  agents?: OutboundAgents;
  /** Cancels the request: an `aborted` failure. */
  signal?: AbortSignal;
  /** Called with the decoded bytes received so far; an exception from it is rethrown. */
  onProgress?: (receivedBytes: number) => void;
  /**
   * A floor on the average rate (decoded bytes per second since the request was sent), checked
   * every second once `graceMs` has passed: a peer that drips its answer fails `too_slow` in
   * seconds instead of holding the caller until the total timeout.
   */
  minRate?: { bytesPerSec: number; graceMs: number };
}

/** Options of {@link safeFetch}. */
export interface SafeFetchOptions extends SafeOutboundOptions {
  /** Redirects followed before failing with `too_many_redirects`. */
  maxRedirects: number;
}

/** Options of {@link safeRequest}: a GET follows redirects, a POST returns a 3xx as its answer. */
export type SafeRequestOptions = SafeOutboundOptions & {
  /** Sent with the request, and with every redirect a GET follows. */
  headers?: Readonly<Record<string, string>>;
} & ({ method: 'GET'; maxRedirects: number } | { method: 'POST'; body?: Buffer });

/** Why a request failed: distinct for logs and metrics even where two messages read the same. */
export type SafeFetchFailure =
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'address_not_allowed'
  | 'dns_failed'
  | 'unreachable'
  | 'timeout'
  | 'too_large'
  | 'too_slow'
  | 'too_many_redirects'
  | 'http_status'
  | 'aborted';

/** A failure whose message is safe to show the partner who gave the URL. */
export interface SafeFetchFailed {
  ok: false;
  failure: SafeFetchFailure;
  message: string;
}

/** What {@link safeFetch} returns. */
export type SafeFetchResult =
  | {
      ok: true;
      /** The decoded body; it alone spans its ArrayBuffer, so that can be transferred. */
      body: Buffer;
      finalUrl: string;
      contentType: string | undefined;
    }
  | SafeFetchFailed;

/** What {@link safeRequest} returns: the final answer whatever its status. */
export type SafeRequestResult =
  | {
      ok: true;
      status: number;
      headers: http.IncomingHttpHeaders;
      /** The decoded body, at most maxBytes of it; it alone spans its ArrayBuffer. */
      body: Buffer;
      /** The body was over maxBytes (declared or read), so reading stopped; body is a prefix. */
      truncated: boolean;
      finalUrl: string;
    }
  | SafeFetchFailed;

/**
 * GETs a JSON document from a partner's URL under the outbound rules: https only (unless
 * allowHttp), no credentials in the URL, only public or allow-listed addresses connected to
 * (resolved by us, so no DNS rebinding), redirects re-checked and limited, timeouts, and a cap
 * on the decoded body. A non-2xx answer is an `http_status` failure. Never throws for network
 * or partner problems; returns `{ok: false}` with a message safe to show the partner.
 */
export async function safeFetch(url: string, options: SafeFetchOptions): Promise<SafeFetchResult> {
  const result = await perform(url, options, {
    method: 'GET',
    headers: { accept: 'application/json' },
    body: undefined,
    maxRedirects: options.maxRedirects,
    successOnly: true,
  });
  if (!result.ok) return result;
  if (result.truncated) {
    return {
      ok: false,
      failure: 'too_large',
      message: `the document is larger than ${size(options.maxBytes)}`,
    };
  }
  return {
    ok: true,
    body: result.body,
    finalUrl: result.finalUrl,
    contentType: result.headers['content-type'],
  };
}

/**
 * Sends a GET or POST to a partner's URL under the same rules as {@link safeFetch}, and returns
 * the final answer's status, headers and (capped) body whatever the status: the caller decides
 * what a 4xx means. Never throws for network or partner problems.
 */
export function safeRequest(url: string, options: SafeRequestOptions): Promise<SafeRequestResult> {
  return perform(url, options, {
    method: options.method,
    headers: options.headers ?? {},
    body: options.method === 'POST' ? options.body : undefined,
    maxRedirects: options.method === 'GET' ? options.maxRedirects : undefined,
    successOnly: false,
  });
}

const tracer = trace.getTracer('@pcp/service-kit/safe-fetch');

/**
 * Runs an outbound exchange in a trace of its own, linked from the caller's span: a partner's
 * endpoint belongs to another tenant, so the traceparent it receives must not reveal (or let
 * it join) the trace of the request that caused it, and no baggage goes out (ROOT_CONTEXT
 * carries none).
 */
function inOwnTrace<T>(urlName: string, work: () => Promise<T>): Promise<T> {
  const caller = trace.getSpanContext(otelContext.active());
  return tracer.startActiveSpan(
    `outbound ${urlName}`,
    { root: true, kind: SpanKind.INTERNAL, links: caller ? [{ context: caller }] : [] },
    ROOT_CONTEXT,
    async (span) => {
      try {
        return await work();
      } finally {
        span.end();
      }
    },
  );
}

function perform(
  url: string,
  options: SafeOutboundOptions,
  exchange: Exchange,
): Promise<SafeRequestResult> {
  if (options.agents && options.agents.allowlist !== options.allowlist) {
    // Their connections were checked against another list.
    return Promise.reject(new Error('the outbound agents were made with another allow-list'));
  }
  return inOwnTrace(options.urlName ?? 'url', () => performInTrace(url, options, exchange));
}

async function performInTrace(
  url: string,
  options: SafeOutboundOptions,
  exchange: Exchange,
): Promise<SafeRequestResult> {
  const stop = new AbortController();
  const deadline = setTimeout(() => stop.abort(DEADLINE), options.totalTimeoutMs);
  const onCallerAbort = (): void => stop.abort(CANCELLED);
  if (options.signal?.aborted) onCallerAbort();
  else options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const urlName = options.urlName ?? 'url';
  try {
    return await follow(url, urlName, options, exchange, stop.signal);
  } catch (error) {
    if (error instanceof FetchFailure) {
      return { ok: false, failure: error.failure, message: error.message };
    }
    if (error instanceof CallbackError) throw error.cause;
    return { ok: false, failure: 'unreachable', message: `${urlName} could not be reached` };
  } finally {
    clearTimeout(deadline);
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
}

async function follow(
  url: string,
  urlName: string,
  options: SafeOutboundOptions,
  exchange: Exchange,
  signal: AbortSignal,
): Promise<Answer> {
  const redirectName = `${urlName} redirect target`;
  let target = checkTarget(url, undefined, urlName, options);
  for (let redirects = 0; ; redirects++) {
    const subject = redirects === 0 ? urlName : redirectName;
    const hop = await requestOnce(target, subject, options, exchange, signal);
    if (hop.kind === 'answer') return { ok: true, ...hop.answer, finalUrl: target.href };
    // Only a GET yields redirect hops, and it always has a limit.
    const maxRedirects = exchange.maxRedirects ?? 0;
    if (redirects >= maxRedirects) {
      throw new FetchFailure(
        'too_many_redirects',
        `too many redirects (more than ${maxRedirects})`,
      );
    }
    target = checkTarget(hop.location, target, redirectName, options);
  }
}
