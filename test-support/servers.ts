/** Addresses of the real servers tests use: the same variables and defaults as the services. */
export const servers = {
  natsUrl: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pcp',
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
};

/** The same server URL with another database name. */
export function databaseUrlFor(database: string): string {
  const url = new URL(servers.databaseUrl);
  url.pathname = `/${database}`;
  return url.toString();
}
