import { ROOT_CONTEXT, context as otelContext, SpanKind, trace } from '@opentelemetry/api';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { isPublicAddress, type AddressAllowlist } from './ip-address.js';

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

/** What one call sends, and how it treats the answer. */
interface Exchange {
  method: 'GET' | 'POST';
  headers: Readonly<Record<string, string>>;
  body: Buffer | undefined;
  /** Redirects followed before failing; undefined: a 3xx is the answer. */
  maxRedirects: number | undefined;
  /** safeFetch's rule: a non-2xx fails before its body is read. */
  successOnly: boolean;
}

type Answer = Extract<SafeRequestResult, { ok: true }>;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const DECODERS = new Map<string, () => Transform>([
  ['gzip', () => zlib.createGunzip()],
  ['x-gzip', () => zlib.createGunzip()],
  ['br', () => zlib.createBrotliDecompress()],
  ['deflate', () => zlib.createInflate()],
]);

/** Abort reasons of the combined signal, so a hop can tell the caller's cancel from our deadline. */
const DEADLINE = 'deadline';
const CANCELLED = 'cancelled';

/** A failure whose message is safe to show the partner. */
class FetchFailure extends Error {
  constructor(
    readonly failure: SafeFetchFailure,
    message: string,
  ) {
    super(message);
  }
}

/** An exception from the caller's onProgress: our bug, not the partner's, so it is rethrown. */
class CallbackError extends Error {
  constructor(cause: unknown) {
    super('onProgress threw', { cause });
  }
}

type Hop =
  | { kind: 'redirect'; location: string }
  | { kind: 'answer'; answer: Omit<Answer, 'ok' | 'finalUrl'> };

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

/** Scheme, credentials and IP-literal checks; Node skips `lookup` for literals, so they are checked here. */
function checkTarget(
  raw: string,
  base: URL | undefined,
  subject: string,
  options: SafeOutboundOptions,
): URL {
  let target: URL;
  try {
    target = new URL(raw, base);
  } catch {
    throw new FetchFailure('invalid_url', `${subject} is not a valid URL`);
  }
  if (target.protocol !== 'https:' && !(options.allowHttp && target.protocol === 'http:')) {
    const allowed = options.allowHttp ? 'http or https' : 'https';
    throw new FetchFailure('scheme_not_allowed', `${subject} must use ${allowed}`);
  }
  if (target.username !== '' || target.password !== '') {
    throw new FetchFailure('invalid_url', `${subject} must not contain credentials`);
  }
  const literal = unbracket(target.hostname);
  if (isIP(literal) !== 0 && !addressAllowed(literal, options.allowlist)) {
    throw notRoutable(subject, 'address_not_allowed');
  }
  return target;
}

function unbracket(hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

function addressAllowed(address: string, allowlist: AddressAllowlist): boolean {
  return isPublicAddress(address) || allowlist.allows(address);
}

/** Limits of the connections {@link createOutboundAgents} keeps. */
export interface OutboundAgentOptions {
  /** Every connection's address is checked against this (and must be public otherwise). */
  allowlist: AddressAllowlist;
  /** Connections open to one origin at most (in use and idle). */
  maxSocketsPerOrigin: number;
  /** Idle connections kept across all origins at most; past it a freed one is closed. */
  maxIdleSockets: number;
  /** A connection older than this is closed when freed, never reused. */
  maxSocketAgeMs: number;
  /** An idle connection is closed after this. */
  idleTimeoutMs: number;
}

/** Keep-alive agents for {@link SafeOutboundOptions.agents}; `close()` ends their connections. */
export interface OutboundAgents {
  readonly allowlist: AddressAllowlist;
  readonly http: http.Agent;
  readonly https: https.Agent;
  close(): void;
}

/**
 * Keep-alive agents for outbound requests. Pooling keeps the rules: a connection is only ever
 * made through the request's guarded lookup (the address checked is the address connected,
 * and an open connection cannot be rebound), and every connection was checked against this
 * one `allowlist`. A connection is reused until `maxSocketAgeMs`, so a partner's DNS change
 * (or an allow-list entry removed at a restart) takes effect within it.
 */
export function createOutboundAgents(options: OutboundAgentOptions): OutboundAgents {
  const bornAt = new WeakMap<object, number>();
  const idle = (agent: http.Agent) => {
    let count = 0;
    for (const sockets of Object.values(agent.freeSockets)) count += sockets?.length ?? 0;
    return count;
  };
  /** The rules on an agent: age and idle caps on the connections it keeps. */
  const ruled = <A extends http.Agent>(agent: A): A => {
    const create = agent.createConnection.bind(agent);
    agent.createConnection = (...args) => {
      const socket = create(...args);
      if (socket) bornAt.set(socket, Date.now());
      return socket;
    };
    const keep = (agent.keepSocketAlive as (socket: Socket) => boolean).bind(agent);
    agent.keepSocketAlive = (socket: Socket) => {
      const left = (bornAt.get(socket) ?? 0) + options.maxSocketAgeMs - Date.now();
      if (left <= 0 || idle(agents.http) + idle(agents.https) >= options.maxIdleSockets) {
        return false;
      }
      const kept = keep(socket);
      // The agent closes a free socket at its timeout: idle too long, or too old by then.
      socket.setTimeout(Math.min(socket.timeout ?? options.idleTimeoutMs, left));
      return kept;
    };
    return agent;
  };
  const settings = {
    keepAlive: true,
    maxSockets: options.maxSocketsPerOrigin,
    maxFreeSockets: Math.min(options.maxSocketsPerOrigin, options.maxIdleSockets),
    timeout: options.idleTimeoutMs,
    scheduling: 'lifo' as const,
  };
  const agents: OutboundAgents = {
    allowlist: options.allowlist,
    http: ruled(new http.Agent(settings)),
    https: ruled(new https.Agent(settings)),
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
  return agents;
}

/**
 * A host that does not resolve and one that resolves to a private address read the same to
 * the partner: distinct messages would let anyone probe our internal DNS. The failure kind
 * stays distinct for logs and metrics.
 */
function notRoutable(subject: string, failure: 'address_not_allowed' | 'dns_failed'): FetchFailure {
  return new FetchFailure(failure, `${subject} does not resolve to a publicly routable address`);
}

/**
 * Resolves the host ourselves and hands the socket only permitted addresses, so the address
 * checked is the address connected to (no DNS rebinding between check and connect).
 */
function guardedLookup(subject: string, allowlist: AddressAllowlist): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    const query = { family: lookupOptions.family, hints: lookupOptions.hints, all: true as const };
    dnsLookup(hostname, query, (error, addresses) => {
      if (error || addresses.length === 0) {
        callback(notRoutable(subject, 'dns_failed'), []);
        return;
      }
      const permitted = addresses.filter((entry: LookupAddress) =>
        addressAllowed(entry.address, allowlist),
      );
      const first = permitted[0];
      if (first === undefined) callback(notRoutable(subject, 'address_not_allowed'), []);
      // With autoSelectFamily, net asks for every address; otherwise for one.
      else if (lookupOptions.all) callback(null, permitted);
      else callback(null, first.address, first.family);
    });
  };
}

function requestOnce(
  target: URL,
  subject: string,
  options: SafeOutboundOptions,
  exchange: Exchange,
  signal: AbortSignal,
): Promise<Hop> {
  return new Promise<Hop>((resolve, reject) => {
    const secure = target.protocol === 'https:';
    const transport = secure ? https : http;
    const request = transport.request({
      protocol: target.protocol,
      hostname: unbracket(target.hostname),
      port: target.port === '' ? undefined : target.port,
      path: `${target.pathname}${target.search}`,
      method: exchange.method,
      // Only encodings we decode, whatever the caller asked for.
      headers: { ...exchange.headers, 'accept-encoding': 'gzip, br' },
      // Pooled connections were made through this lookup too; without agents, a fresh one.
      agent: (secure ? options.agents?.https : options.agents?.http) ?? false,
      lookup: guardedLookup(subject, options.allowlist),
    });
    let response: http.IncomingMessage | undefined;
    let decoder: Transform | undefined;
    let settled = false;
    let received = 0;
    const sentAt = Date.now();

    const settle = (outcome: { hop: Hop } | { error: Error }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      clearTimeout(rateGrace);
      clearInterval(rateCheck);
      signal.removeEventListener('abort', onAbort);
      decoder?.destroy();
      response?.destroy();
      request.destroy();
      if ('hop' in outcome) resolve(outcome.hop);
      else reject(outcome.error);
    };
    const fail = (failure: SafeFetchFailure, message: string): void =>
      settle({ error: new FetchFailure(failure, message) });

    const connectTimer = setTimeout(
      () =>
        fail(
          'timeout',
          `${subject} did not accept a connection within ${duration(options.connectTimeoutMs)}`,
        ),
      options.connectTimeoutMs,
    );
    const minRate = options.minRate;
    let rateCheck: NodeJS.Timeout | undefined;
    const rateGrace =
      minRate &&
      setTimeout(() => {
        const checkRate = (): void => {
          if ((received * 1000) / (Date.now() - sentAt) >= minRate.bytesPerSec) return;
          fail(
            'too_slow',
            `the download from ${subject} was slower than ${size(minRate.bytesPerSec)} per second`,
          );
        };
        checkRate();
        rateCheck = setInterval(checkRate, 1_000);
      }, minRate.graceMs);
    const onAbort = (): void => {
      const within = duration(options.totalTimeoutMs);
      if (signal.reason === CANCELLED) fail('aborted', 'the download was cancelled');
      else if (response === undefined)
        fail('timeout', `${subject} did not answer within ${within}`);
      else fail('timeout', `the download from ${subject} did not finish within ${within}`);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });

    request.on('socket', (socket) => {
      if (request.reusedSocket) clearTimeout(connectTimer);
      else socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
    });
    request.on('error', (error) => settle({ error: describeError(error, subject) }));
    request.on('response', (res) => {
      response = res;
      clearTimeout(connectTimer);
      res.on('error', () => fail('unreachable', `the download from ${subject} was interrupted`));
      res.on('close', () => {
        if (!res.complete) fail('unreachable', `the download from ${subject} was interrupted`);
      });

      const status = res.statusCode ?? 0;
      if (exchange.maxRedirects !== undefined && REDIRECT_STATUSES.has(status)) {
        const location = res.headers.location;
        if (location !== undefined) {
          settle({ hop: { kind: 'redirect', location } });
          return;
        }
        if (exchange.successOnly) {
          fail('http_status', `${subject} answered HTTP ${status} without a Location header`);
          return;
        }
      }
      if (exchange.successOnly && (status < 200 || status > 299)) {
        fail('http_status', `${subject} answered HTTP ${status}`);
        return;
      }

      const chunks: Buffer[] = [];
      const answer = (truncated: boolean): void =>
        settle({
          hop: {
            kind: 'answer',
            answer: { status, headers: res.headers, body: ownBuffer(chunks, received), truncated },
          },
        });
      if (Number(res.headers['content-length']) > options.maxBytes) {
        answer(true);
        return;
      }

      const encoding = (res.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
      if (encoding !== 'identity') {
        decoder = DECODERS.get(encoding)?.();
        if (decoder === undefined) {
          fail('http_status', `${subject} answered with an unsupported content-encoding`);
          return;
        }
        decoder.on('error', () =>
          fail('unreachable', `${subject} sent a compressed body that could not be decoded`),
        );
      }
      // The cap applies to decoded bytes, so a small compressed bomb cannot inflate past it.
      const body = decoder === undefined ? res : res.pipe(decoder);
      body.on('data', (chunk: Buffer) => {
        const room = options.maxBytes - received;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          received += room;
          answer(true);
          return;
        }
        chunks.push(chunk);
        received += chunk.length;
        try {
          options.onProgress?.(received);
        } catch (error) {
          settle({ error: new CallbackError(error) });
        }
      });
      body.on('end', () => answer(false));
    });
    request.end(exchange.body);
  });
}

/**
 * The chunks in one buffer outside Node's shared pool (Buffer.concat may place a small body
 * in it), so the caller can hand its ArrayBuffer to a worker thread without copying.
 */
function ownBuffer(chunks: readonly Buffer[], length: number): Buffer {
  const body = Buffer.allocUnsafeSlow(length);
  let offset = 0;
  for (const chunk of chunks) offset += chunk.copy(body, offset);
  return body;
}

function describeError(error: unknown, subject: string): FetchFailure {
  if (error instanceof FetchFailure) return error;
  const code = (error as NodeJS.ErrnoException).code ?? '';
  if (/CERT|^ERR_TLS|^ERR_SSL|^EPROTO$/.test(code)) {
    return new FetchFailure('unreachable', `${subject} failed the TLS handshake`);
  }
  return new FetchFailure('unreachable', `${subject} could not be reached`);
}

function duration(ms: number): string {
  const seconds = Number((ms / 1000).toFixed(1));
  return seconds === 1 ? '1 second' : `${seconds} seconds`;
}

function size(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Number((bytes / (1024 * 1024)).toFixed(1))} MB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KB`;
  return `${bytes} bytes`;
}
