import { sessionCookieName } from '@pcp/contracts';

/**
 * The session cookie (docs/guide/authentication.md#console-sessions). `__Host-` makes the
 * browser keep it only when it is Secure, has Path=/ and no Domain, so no other host can set
 * or shadow it. Chromium treats http://localhost as secure and keeps it there too (checked
 * with Debian's chromium), so local runs need no other name.
 */
const ATTRIBUTES = 'HttpOnly; Secure; SameSite=Strict; Path=/';

/** The value of the session cookie in a Cookie header (the first, if sent twice), or undefined. */
export function sessionTokenFrom(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const prefix = `${sessionCookieName}=`;
  for (const pair of header.split(';')) {
    const trimmed = pair.trim();
    if (trimmed.startsWith(prefix)) return trimmed.slice(prefix.length);
  }
  return undefined;
}

/** Set-Cookie for a session that ends `maxAgeMs` from now. */
export function sessionCookie(token: string, maxAgeMs: number): string {
  return `${sessionCookieName}=${token}; ${ATTRIBUTES}; Max-Age=${Math.max(0, Math.floor(maxAgeMs / 1000))}`;
}

/** Set-Cookie that makes the browser drop the session cookie. */
export function clearedSessionCookie(): string {
  return `${sessionCookieName}=; ${ATTRIBUTES}; Max-Age=0`;
}
