import { z } from 'zod';
import { dateTime, guid, partnerKind } from './common.js';
import { partnerMode } from './sandbox.js';

/**
 * Console sessions (docs/guide/authentication.md#console-sessions): an API key exchanged
 * once for a short-lived session cookie, so a browser never keeps the key.
 */

/** The name of the session cookie; the `__Host-` prefix pins it to the gateway's origin. */
export const sessionCookieName = '__Host-pcp_session';

/** The request header that carries a session's CSRF token on unsafe methods. */
export const csrfTokenHeader = 'X-CSRF-Token';

/** Body of `POST /v1/sessions`. */
export const sessionCreateInput = z
  .strictObject({
    apiKey: z
      .string()
      .max(200)
      .describe('Your API key (pcp_live_… or pcp_test_…): exchanged once, never stored'),
  })
  .meta({
    id: 'SessionCreateInput',
    examples: [{ apiKey: `pcp_test_3f9a0c1b2d4e5f60_${'x'.repeat(43)}` }],
  });
export type SessionCreateInput = z.infer<typeof sessionCreateInput>;

/** A console session: the key's partner, kind and mode, and the CSRF token of its writes. */
export const session = z
  .object({
    partnerId: guid.describe(
      'The tenant the session acts as: your partner id, or your test tenant id in test mode',
    ),
    accountId: guid.describe('Your partner id, whatever the mode'),
    kind: partnerKind,
    mode: partnerMode,
    keyId: z.string().describe('The public id of the key the session was made from'),
    expiresAt: dateTime.describe(
      'When the session ends at the latest; it ends earlier after an hour without a request',
    ),
    csrfToken: z
      .string()
      .describe('Send it as X-CSRF-Token on every POST, PUT, PATCH and DELETE of the session'),
  })
  .meta({
    id: 'Session',
    examples: [
      {
        partnerId: '6c2b7f0e-93a1-4d5e-8b2f-0a9c1d7e5f34',
        accountId: '6c2b7f0e-93a1-4d5e-8b2f-0a9c1d7e5f34',
        kind: 'commerce',
        mode: 'live',
        keyId: '3f9a0c1b2d4e5f60',
        expiresAt: '2026-11-27T04:00:00.000Z',
        csrfToken: 'R2q3yXzW0mB8c1Jf5kLp9sTg4vHn6dQe7aUo2iYr3xC',
      },
    ],
  });
export type Session = z.infer<typeof session>;
