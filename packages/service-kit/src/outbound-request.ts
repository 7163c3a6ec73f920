// One outbound request (a hop: redirects are the caller's) under its limits: connect
// timeout, cancellation, minimum rate, decoded size cap and the encodings we decode.
import http from 'node:http';
import https from 'node:https';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { guardedLookup, unbracket } from './outbound-address.js';
import { CallbackError, describeError, duration, FetchFailure, size } from './outbound-failure.js';
import type { SafeFetchFailure, SafeOutboundOptions, SafeRequestResult } from './safe-fetch.js';

/** What one call sends, and how it treats the answer. */
export interface Exchange {
  method: 'GET' | 'POST';
  headers: Readonly<Record<string, string>>;
  body: Buffer | undefined;
  /** Redirects followed before failing; undefined: a 3xx is the answer. */
  maxRedirects: number | undefined;
  /** safeFetch's rule: a non-2xx fails before its body is read. */
  successOnly: boolean;
}

/** A final answer, as safeRequest returns it. */
export type Answer = Extract<SafeRequestResult, { ok: true }>;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const DECODERS = new Map<string, () => Transform>([
  ['gzip', () => zlib.createGunzip()],
  ['x-gzip', () => zlib.createGunzip()],
  ['br', () => zlib.createBrotliDecompress()],
  ['deflate', () => zlib.createInflate()],
]);

/** Abort reasons of the combined signal, so a hop can tell the caller's cancel from our deadline. */
export const DEADLINE = 'deadline';
export const CANCELLED = 'cancelled';

type Hop =
  | { kind: 'redirect'; location: string }
  | { kind: 'answer'; answer: Omit<Answer, 'ok' | 'finalUrl'> };

/** Sends the exchange to `target` once: its answer, or the redirect it points to. */
export function requestOnce(
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
