import { errorCodes, maxProblemErrors, type ErrorCode } from '@pcp/contracts';
import { request as httpRequest } from 'node:http';
import type { FuzzRequest } from './operations.js';

/** A fuzzed request that takes longer than this is a hang. */
export const REQUEST_DEADLINE_MS = 15_000;
/** No answer to a fuzzed request is larger than this. */
export const MAX_RESPONSE_BYTES = 256 * 1024;

/** What came back, read up to the size bound. */
export interface FuzzResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly bytes: number;
  readonly ms: number;
}

/**
 * Send `request` with the deadline, reading at most MAX_RESPONSE_BYTES + 1 of the answer.
 * Sent with node:http, which puts the path on the wire as generated (only characters HTTP
 * cannot carry percent-encoded): fetch would resolve dot segments first, so
 * `/stores/./catalogset` went out as `/stores/catalogset`, another route.
 */
export async function send(baseUrl: string, request: FuzzRequest): Promise<FuzzResponse> {
  const started = Date.now();
  const { hostname, port } = new URL(baseUrl);
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  try {
    const answer = await new Promise<{
      status: number;
      headers: Headers;
      text: string;
      bytes: number;
    }>((resolve, reject) => {
      const outgoing = httpRequest(
        {
          hostname,
          port,
          method: request.method,
          path: onTheWire(request.url),
          headers: {
            ...request.headers,
            ...(body ? { 'content-length': String(body.byteLength) } : {}),
          },
          signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
          agent: false,
        },
        (incoming) => {
          const headers = new Headers();
          for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
            headers.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!);
          }
          const chunks: Buffer[] = [];
          let bytes = 0;
          const settle = () =>
            resolve({
              status: incoming.statusCode ?? 0,
              headers,
              text: Buffer.concat(chunks).toString('utf8'),
              bytes,
            });
          // An event stream that opened never ends by itself: its head is the answer.
          if (headers.get('content-type')?.startsWith('text/event-stream')) {
            incoming.destroy();
            settle();
            return;
          }
          incoming.on('data', (chunk: Buffer) => {
            bytes += chunk.byteLength;
            chunks.push(chunk);
            if (bytes > MAX_RESPONSE_BYTES) {
              incoming.destroy();
              settle();
            }
          });
          incoming.on('end', settle);
          incoming.on('error', reject);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
    return { ...answer, ms: Date.now() - started };
  } catch (error) {
    throw new Error(
      `${describeRequest(request)}: no answer within ${REQUEST_DEADLINE_MS} ms (${String(error)})`,
    );
  }
}

/** `url` with what an HTTP request line cannot carry (spaces, controls, non-ASCII) escaped. */
function onTheWire(url: string): string {
  return url.replace(/[^\x21-\x7e]/gu, (char) =>
    [...Buffer.from(char, 'utf8')]
      .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
      .join(''),
  );
}

/** A short description of a request for a failure message (bodies cut short). */
export function describeRequest(request: FuzzRequest): string {
  const body =
    request.body === undefined
      ? ''
      : typeof request.body === 'string'
        ? ` body(${request.body.length} chars)=${JSON.stringify(request.body.slice(0, 300))}`
        : ` body(${request.body.byteLength} bytes)=${Buffer.from(request.body.subarray(0, 100)).toString('hex')}`;
  return `${request.method} ${request.url.slice(0, 300)} key=${request.key} headers=${JSON.stringify(
    Object.fromEntries(
      Object.entries(request.headers)
        .filter(([name]) => name !== 'authorization')
        .map(([name, value]) => [name, value.slice(0, 100)]),
    ),
  )}${body}`;
}

/** What must never be in an answer: stack frames, source paths, driver and runtime errors. */
const LEAKS = [
  /\n\s+at /,
  /node_modules/,
  /\/(?:src|dist)\/[\w/-]+\.[jt]s/,
  /file:\/\//,
  /\b(?:TypeError|RangeError|ReferenceError|SyntaxError):/,
  /\bat position \d+/,
  /\bpg_|\bduplicate key value|\bviolates .* constraint/,
];

/**
 * The invariants of every answer: never a 5xx, answered in time, bounded in size; a 4xx is
 * an RFC 9457 ProblemDetail consistent with its status and error code, with no internals.
 * Throws an Error naming the request when one is broken.
 */
export function checkResponse(
  request: FuzzRequest,
  response: FuzzResponse,
  options: { bodiless404?: boolean } = {},
): void {
  const fail = (why: string): never => {
    throw new Error(
      `${why}\n  request: ${describeRequest(request)}\n  answer: ${response.status} ${response.text.slice(0, 800)}`,
    );
  };
  if (response.status >= 500) fail(`answered ${response.status}`);
  if (response.bytes > MAX_RESPONSE_BYTES) fail(`answer over ${MAX_RESPONSE_BYTES} bytes`);
  for (const leak of LEAKS) if (leak.test(response.text)) fail(`answer leaks internals (${leak})`);
  const contentType = response.headers.get('content-type') ?? '';

  if (response.status >= 400) {
    if (options.bodiless404 && response.status === 404 && response.text === '') return;
    if (!contentType.startsWith('application/problem+json')) fail(`4xx as ${contentType}`);
    let problem: Record<string, unknown>;
    try {
      problem = JSON.parse(response.text) as Record<string, unknown>;
    } catch {
      return fail('ProblemDetail is not JSON');
    }
    const code = problem.errorCode as ErrorCode;
    const entry = errorCodes[code];
    if (!entry) fail(`unknown errorCode ${String(code)}`);
    if (problem.status !== response.status || entry.status !== response.status) {
      fail(
        `status ${String(problem.status)} / ${code}'s ${entry.status} vs HTTP ${response.status}`,
      );
    }
    if (problem.title !== entry.title) fail(`title ${String(problem.title)} is not ${code}'s`);
    if (typeof problem.type !== 'string' || !problem.type.endsWith(`/errors/${code}`)) {
      fail(`type ${String(problem.type)} does not name ${code}`);
    }
    if (typeof problem.detail !== 'string' || problem.detail.length > 2_000) fail('detail');
    if (typeof problem.requestId !== 'string' || problem.requestId.length > 128) fail('requestId');
    if (problem.errors !== undefined) {
      if (!Array.isArray(problem.errors) || problem.errors.length > maxProblemErrors) {
        fail(`errors[] is not a list of at most ${maxProblemErrors}`);
      }
    }
    if (response.status === 429 || response.status === 503) {
      if (!response.headers.get('retry-after')) fail(`${response.status} without Retry-After`);
    }
    return;
  }
  if (response.status === 304 || response.status === 204) {
    if (response.text !== '') fail(`${response.status} with a body`);
    return;
  }
  if (response.status >= 300) fail(`unexpected redirect ${response.status}`);
  if (response.text !== '') {
    if (!/^application\/(?:[\w.+-]*\+)?json/.test(contentType)) fail(`2xx as ${contentType}`);
    try {
      JSON.parse(response.text);
    } catch {
      fail('2xx body is not JSON');
    }
  }
}
