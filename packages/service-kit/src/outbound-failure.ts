// Why an outbound request failed, in messages safe to show the partner who gave the URL.
import type { SafeFetchFailure } from './safe-fetch.js';

/** A failure whose message is safe to show the partner. */
export class FetchFailure extends Error {
  constructor(
    readonly failure: SafeFetchFailure,
    message: string,
  ) {
    super(message);
  }
}

/** An exception from the caller's onProgress: our bug, not the partner's, so it is rethrown. */
export class CallbackError extends Error {
  constructor(cause: unknown) {
    super('onProgress threw', { cause });
  }
}

/**
 * A host that does not resolve and one that resolves to a private address read the same to
 * the partner: distinct messages would let anyone probe our internal DNS. The failure kind
 * stays distinct for logs and metrics.
 */
export function notRoutable(
  subject: string,
  failure: 'address_not_allowed' | 'dns_failed',
): FetchFailure {
  return new FetchFailure(failure, `${subject} does not resolve to a publicly routable address`);
}

/** A failed request's error as the partner may read it. */
export function describeError(error: unknown, subject: string): FetchFailure {
  if (error instanceof FetchFailure) return error;
  const code = (error as NodeJS.ErrnoException).code ?? '';
  if (/CERT|^ERR_TLS|^ERR_SSL|^EPROTO$/.test(code)) {
    return new FetchFailure('unreachable', `${subject} failed the TLS handshake`);
  }
  return new FetchFailure('unreachable', `${subject} could not be reached`);
}

/** `ms` for a message: '1 second', '2.5 seconds'. */
export function duration(ms: number): string {
  const seconds = Number((ms / 1000).toFixed(1));
  return seconds === 1 ? '1 second' : `${seconds} seconds`;
}

/** `bytes` for a message: '512 bytes', '1.5 KB', '10 MB'. */
export function size(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Number((bytes / (1024 * 1024)).toFixed(1))} MB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KB`;
  return `${bytes} bytes`;
}
