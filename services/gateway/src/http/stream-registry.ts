import { storeDeletionNotice, storeDeletionNotices, type Session } from '@pcp/contracts';
import { AppError, tryParseJson, type Logger } from '@pcp/service-kit';
import type { NatsConnection } from 'nats';
import type { Authenticator, Principal } from '../auth/authenticator.js';
import { sessionIdOf, type SessionStore } from '../auth/session-store.js';
import type { StreamFamily, StreamLeases } from './stream-leases.js';

/** Who an open stream acts for, and what it streams. */
export interface StreamHolder {
  readonly principal: Principal;
  /** The console session it was opened with (by cookie), if it was. */
  readonly consoleSession: { readonly token: string; readonly session: Session } | null;
  /** The store of a store's stream: its deletion ends the stream. */
  readonly storeId?: string;
  /** The route's own check that what it streams is still there (false ends the stream). */
  readonly stillServed?: () => Promise<boolean>;
}

/** What an invalidation message names (plugins/auth.ts): a partner, a key, or sessions. */
export interface AuthorityChange {
  readonly partnerId?: string;
  readonly keyId?: string;
  readonly sessions?: readonly string[];
}

interface OpenStream {
  readonly holder: StreamHolder;
  readonly sessionId: string | undefined;
  readonly end: () => void;
}

/**
 * Every open event stream of this replica with the authority it was opened under, so each
 * ends at once when that authority does (docs/guide/live-events.md#limits): its key revoked or
 * its partner suspended (the invalidation message every replica hears), its console session
 * ended or expired, its store deleted (stores' deletion notice), or its maximum age reached.
 * Those messages are at most once: every `recheckMs` each stream is checked again (and its
 * cap lease renewed), so a lost one still ends it within that interval.
 */
export function createStreamRegistry(options: {
  readonly leases: StreamLeases;
  readonly authenticator: Pick<Authenticator, 'activeKey'>;
  readonly sessions: Pick<SessionStore, 'resolve'>;
  readonly nc: NatsConnection;
  readonly subjectPrefix: string;
  readonly maxAgeMs: number;
  readonly recheckMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}) {
  const now = options.now ?? Date.now;
  const open = new Set<OpenStream>();

  /** Whether its key (or session) still authenticates and the route still serves it. */
  async function stillAuthorized({ holder }: OpenStream): Promise<boolean> {
    if (holder.consoleSession) {
      if (!(await options.sessions.resolve(holder.consoleSession.token, 'check'))) return false;
    } else if (!(await options.authenticator.activeKey(holder.principal.keyId))) return false;
    return holder.stillServed ? holder.stillServed() : true;
  }

  async function recheck(stream: OpenStream): Promise<void> {
    try {
      if (!(await stillAuthorized(stream))) stream.end();
    } catch (error) {
      // Unknown (the database or a service is down): it stays, and is checked again.
      options.logger.warn({ err: error }, 'an open stream could not be checked again');
    }
  }

  let rechecking = false;
  const sweeper = setInterval(() => {
    // Leases are renewed on time even while a slow re-check (a service timing out) runs.
    void options.leases.renew();
    if (rechecking) return;
    rechecking = true;
    void Promise.all([...open].map(recheck)).finally(() => {
      rechecking = false;
    });
  }, options.recheckMs);
  sweeper.unref();

  const deletions = options.nc.subscribe(
    `${options.subjectPrefix}.${storeDeletionNotices.subject}`,
    {
      callback: (error, msg) => {
        if (error) return;
        const notice = storeDeletionNotice.safeParse(tryParseJson(msg.data));
        if (!notice.success) {
          options.logger.warn('ignored a malformed store deletion notice');
          return;
        }
        const storeIds = new Set(notice.data.storeIds);
        for (const stream of open) {
          if (stream.holder.storeId !== undefined && storeIds.has(stream.holder.storeId)) {
            stream.end();
          }
        }
      },
    },
  );

  return {
    /**
     * A place for a stream of the request's partner, at most `cap` of this kind across its
     * modes and every replica (429 RATE_LIMITED beyond); the returned release gives it back.
     */
    async admit(
      family: StreamFamily,
      principal: Principal,
      limit: { readonly cap: number; readonly what: string },
    ): Promise<() => void> {
      const release = await options.leases.acquire(family, principal.accountId, limit.cap);
      if (release) return release;
      throw new AppError(
        'RATE_LIMITED',
        `At most ${limit.cap} ${limit.what} of a partner may be open at once, across its ` +
          'live and test modes; close one first',
        { retryAfterSeconds: 5 },
      );
    },

    /** Watch an open stream: `end` closes it when its authority ends. Returns the unwatch. */
    watch(holder: StreamHolder, end: () => void): () => void {
      const sessionExpiry = holder.consoleSession
        ? Date.parse(holder.consoleSession.session.expiresAt)
        : Infinity;
      const endsAt = Math.min(now() + options.maxAgeMs, sessionExpiry);
      const stream: OpenStream = {
        holder,
        sessionId: holder.consoleSession ? sessionIdOf(holder.consoleSession.token) : undefined,
        end,
      };
      open.add(stream);
      const timer = setTimeout(end, Math.max(0, endsAt - now()));
      timer.unref();
      return () => {
        clearTimeout(timer);
        open.delete(stream);
      };
    },

    /**
     * After an admin change or a session's end (every replica hears it): the streams of a
     * revoked key or an ended session end now; the partner's others are checked now (the
     * caches were just cleared), so a suspension ends them and a rate-limit change does not.
     */
    invalidate(change: AuthorityChange): void {
      const sessions = new Set(change.sessions);
      for (const stream of open) {
        const { principal } = stream.holder;
        if (
          principal.keyId === change.keyId ||
          (stream.sessionId !== undefined && sessions.has(stream.sessionId))
        ) {
          stream.end();
        } else if (principal.accountId === change.partnerId) void recheck(stream);
      }
    },

    close(): void {
      clearInterval(sweeper);
      deletions.unsubscribe();
    },
  };
}

export type StreamRegistry = ReturnType<typeof createStreamRegistry>;
