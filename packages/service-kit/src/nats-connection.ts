import { natsInboxPrefix } from '@pcp/contracts';
import { connect, type NatsConnection } from 'nats';
import type { NatsTls } from './config.js';
import type { Logger } from './logger.js';
import { userInboxPrefixes } from './reply-inbox.js';

/**
 * Connect to NATS as the user `credentials` names (`natsCredentials(config)`) or
 * anonymously (local runs). A user's replies come to its own inbox prefix, the only one its
 * permissions let it read. The options set here are the ones measured to matter (see
 * docs/messaging.md).
 */
export async function connectNats(options: {
  url: string;
  name: string;
  logger: Logger;
  credentials?: { user: string; password: string } | undefined;
  /** TLS (`natsTls(config)`): the connection then is TLS or fails. */
  tls?: NatsTls | undefined;
}): Promise<NatsConnection> {
  const { credentials } = options;
  const inboxPrefix = credentials ? natsInboxPrefix(credentials.user) : undefined;
  const nc = await connect({
    servers: options.url,
    name: options.name,
    // nats.js otherwise builds two Errors with stack traces per request (16% of gateway CPU).
    noAsyncTraces: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...(credentials ? { user: credentials.user, pass: credentials.password, inboxPrefix } : {}),
    ...(options.tls ? { tls: { ...options.tls } } : {}),
  });
  if (inboxPrefix) userInboxPrefixes.set(nc, inboxPrefix);
  void (async () => {
    for await (const status of nc.status()) {
      // A permission violation names the subject: the permissions (nats-permissions.ts) or
      // the code is wrong, and the operation was dropped.
      if (status.permissionContext) {
        options.logger.error(
          { nats: status.type, data: status.data, permission: status.permissionContext },
          'nats permission violation',
        );
      } else {
        options.logger.info({ nats: status.type, data: status.data }, 'nats connection status');
      }
    }
  })();
  return nc;
}

/** Close a NATS connection after its subscriptions drain, but never wait past `timeoutMs`. */
export async function drainNats(nc: NatsConnection, timeoutMs: number): Promise<void> {
  if (nc.isClosed()) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const outcome = await Promise.race([nc.drain().then(() => 'drained' as const), deadline]);
  clearTimeout(timer);
  if (outcome === 'timeout' && !nc.isClosed()) await nc.close();
}
