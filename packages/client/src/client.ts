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
}

/**
 * A client of the platform with the key set on every request:
 * `client.POST('/v1/marketfront/orders/validate', { body })` answers `{ data }` on success
 * and `{ error }` (the ProblemDetail) otherwise. A request's own `headers` override these.
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}` };
  if (options.userAgent !== undefined) headers['user-agent'] = options.userAgent;
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
