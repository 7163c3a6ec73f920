/** Hosts plain http may reach with a key: this machine only (URL.hostname brackets IPv6). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Why the commands that send the API key (`pcp listen`, `pcp trigger`) refuse `baseUrl`, or
 * undefined when it is fine: https anywhere, plain http only to this machine, where nobody on
 * the network can read the key.
 */
export function unsafeBaseUrl(baseUrl: string): string | undefined {
  const url = new URL(baseUrl);
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (url.protocol !== 'http:') return `The base URL ${baseUrl} is neither https nor http`;
  return (
    `Refusing to send your API key over plain http to ${url.hostname}: use an https base URL ` +
    `(plain http only to localhost, 127.0.0.1 or ::1)`
  );
}
