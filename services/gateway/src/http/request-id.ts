import { randomUUID } from 'node:crypto';

/** The ids the gateway makes (randomUUID): the only X-Request-Id it keeps as the request's id. */
const OUR_REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The longest X-Request-Id kept as the partner's own. */
const MAX_CLIENT_REQUEST_ID_CHARS = 128;

/**
 * The request's id (docs/guide/errors.md#request-ids): an incoming X-Request-Id of our own
 * form, else a new one. Any other value (another system's id format, a forged internal one,
 * control characters, a megabyte) never becomes the id our logs, spans and support go by.
 */
export function requestIdOf(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && OUR_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * The partner's X-Request-Id as its own field: its first 128 characters, each outside
 * printable ASCII as `?`; undefined when none (or an empty one) was sent.
 */
export function clientRequestIdOf(incoming: string | string[] | undefined): string | undefined {
  if (typeof incoming !== 'string' || incoming === '') return undefined;
  return incoming.slice(0, MAX_CLIENT_REQUEST_ID_CHARS).replace(/[^\x20-\x7e]/g, '?');
}
