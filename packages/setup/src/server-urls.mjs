// Which NATS, PostgreSQL and Redis this checkout uses: the user's (its variable is set), the
// project's own (made by an earlier set-up under .data/) or the default. Importing this file
// puts the own servers' URLs into the environment.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataDir, root } from './shell.mjs';

export const envNames = { nats: 'NATS_URL', postgres: 'DATABASE_URL', redis: 'REDIS_URL' };
const defaultUrls = {
  nats: 'nats://127.0.0.1:4222',
  postgres: 'postgres://postgres@127.0.0.1:5432/pcp',
  redis: 'redis://127.0.0.1:6379',
};

// Where the default server refuses this project (a fresh Debian cluster asks for passwords
// over TCP; a NATS may run without JetStream), the set-up runs the project's own under .data/
// on another port, and records that port in the server's config there.
// As root, PostgreSQL runs as the postgres user, who cannot reach a checkout inside a private
// folder (`mktemp -d` makes them 0700): the cluster then lives in the system's temp folder,
// named after the checkout, so every command of this checkout finds the same one.
export const ownPostgresPlaces = [
  join(dataDir, 'postgres'),
  join(tmpdir(), `pcp-postgres-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`),
];
/** The project's own cluster, when an earlier set-up made one. */
export const existingOwnPostgresDir = () =>
  ownPostgresPlaces.find((dir) => existsSync(join(dir, 'PG_VERSION')));
export const OWN_POSTGRES_MARK = "# this project's own cluster, made by npm start and npm test";
export const ownNatsDir = join(dataDir, 'nats');
export const ownNatsConfig = join(ownNatsDir, 'nats.conf');

/** The port of the project's own server, when an earlier set-up made one. */
export function ownServerPort(name) {
  const [file, pattern] =
    name === 'postgres'
      ? [
          join(existingOwnPostgresDir() ?? ownPostgresPlaces[0], 'postgresql.conf'),
          new RegExp(`^${OWN_POSTGRES_MARK}\\nport = (\\d+)$`, 'm'),
        ]
      : [ownNatsConfig, /^listen: "127\.0\.0\.1:(\d+)"$/m];
  if (!existsSync(file)) return undefined;
  const port = pattern.exec(readFileSync(file, 'utf8'))?.[1];
  return port ? Number(port) : undefined;
}

export function ownServerUrl(name, port) {
  const url = new URL(defaultUrls[name]);
  url.port = String(port);
  return url.toString();
}

/**
 * Whose URL each server has: `user` (its variable is set), `own` (the project's own server,
 * made by an earlier set-up) or `default`. The own servers' URLs go into the environment here,
 * so every command that imports this file and every child process (services, vitest, the
 * admin command the demo runs) uses them.
 */
export const origins = {};
for (const name of ['nats', 'postgres']) {
  const ownPort = ownServerPort(name);
  const ownUrl = ownPort ? ownServerUrl(name, ownPort) : undefined;
  // A command started by another (smoke.mjs starts `npm start`) inherits the own URL.
  if (process.env[envNames[name]] && process.env[envNames[name]] !== ownUrl) {
    origins[name] = 'user';
  } else if (ownUrl) {
    origins[name] = 'own';
    process.env[envNames[name]] = ownUrl;
  } else origins[name] = 'default';
}
origins.redis = process.env.REDIS_URL ? 'user' : 'default';

/** The URLs of the NATS, PostgreSQL and Redis this checkout uses (the own ones once made). */
export const serverUrls = {
  nats: process.env.NATS_URL ?? defaultUrls.nats,
  postgres: process.env.DATABASE_URL ?? defaultUrls.postgres,
  redis: process.env.REDIS_URL ?? defaultUrls.redis,
};

/** From now on this process and its children use the project's own server on `port`. */
export function useOwnServer(name, port) {
  const url = ownServerUrl(name, port);
  serverUrls[name] = url;
  process.env[envNames[name]] = url;
  origins[name] = 'own';
}
