import type { ApiVersion } from '@pcp/contracts';
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';

/** The openapi-fetch client of the platform: typed paths, parameters, bodies and responses. */
export type PlatformClient = Client<paths>;

export interface PlatformClientOptions {
  /** Where the platform answers, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** The partner's API key, sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** A fetch of your own (tests, proxies, custom agents); the global one otherwise. */
  fetch?: typeof fetch;
  /** Sent as `User-Agent`, so the platform's logs can tell your integration apart. */
  userAgent?: string;
  /**
   * The API version every request is read and answered in, sent as `PCP-Version`
   * (docs/guide/versioning.md); without it, your partner's pin. The client's types are the
   * newest version's: set an older one while moving an integration written against it.
   */
  apiVersion?: ApiVersion;
}

/**
 * A client of the platform with the key set on every request:
 * `client.POST('/v1/marketfront/orders/validate', { body })` answers `{ data }` on success
 * and `{ error }` (the ProblemDetail) otherwise. A request's own `headers` override these.
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}` };
  if (options.userAgent !== undefined) headers['user-agent'] = options.userAgent;
  if (options.apiVersion !== undefined) headers['pcp-version'] = options.apiVersion;
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

export interface SessionClientOptions {
  /** Where the platform answers: the page's own origin for the partner console. */
  baseUrl: string;
  /** A fetch of your own (tests); the global one otherwise. */
  fetch?: typeof fetch;
}

/** Methods that change something: a session sends its CSRF token with them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const SESSION_PATHS = new Set(['/v1/sessions', '/v1/sessions/current']);

/**
 * A client for a page signed in with a console session
 * (docs/guide/authentication.md#console-sessions) rather than a key: the browser sends the
 * session cookie, and the client sends the session's CSRF token as X-CSRF-Token on every
 * write once `POST /v1/sessions` (sign-in) or `GET /v1/sessions/current` answered it, and
 * forgets it at sign-out or when the session has ended (401 on either).
 */
export function createSessionClient(options: SessionClientOptions): PlatformClient {
  let csrfToken: string | undefined;
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    credentials: 'same-origin',
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  client.use({
    onRequest({ request }) {
      if (csrfToken !== undefined && !SAFE_METHODS.has(request.method)) {
        request.headers.set('x-csrf-token', csrfToken);
      }
      return request;
    },
    async onResponse({ schemaPath, request, response }) {
      if (!SESSION_PATHS.has(schemaPath)) return response;
      if (response.status === 401 || (request.method === 'DELETE' && response.ok)) {
        csrfToken = undefined;
      } else if (response.ok) {
        csrfToken = ((await response.clone().json()) as { csrfToken: string }).csrfToken;
      }
      return response;
    },
  });
  return client;
}
