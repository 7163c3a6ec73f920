import { errorCodes, maxProblemErrors, type ErrorCode } from '@pcp/contracts';
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

/** Send `request` with the deadline, reading at most MAX_RESPONSE_BYTES + 1 of the answer. */
export async function send(baseUrl: string, request: FuzzRequest): Promise<FuzzResponse> {
  const started = Date.now();
  const signal = AbortSignal.timeout(REQUEST_DEADLINE_MS);
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${request.url}`, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal,
      redirect: 'manual',
    });
  } catch (error) {
    throw new Error(
      `${describeRequest(request)}: no answer within ${REQUEST_DEADLINE_MS} ms (${String(error)})`,
    );
  }
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = response.body?.getReader();
  if (reader) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      chunks.push(value);
      if (bytes > MAX_RESPONSE_BYTES) {
        await reader.cancel();
        break;
      }
    }
  }
  return {
    status: response.status,
    headers: response.headers,
    text: Buffer.concat(chunks).toString('utf8'),
    bytes,
    ms: Date.now() - started,
  };
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
