import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';

export interface ServerUrls {
  natsUrl: string;
  databaseUrl: string;
  redisUrl: string;
}

/** Addresses of the real servers: the same variables and defaults as the services. */
export const configuredServers: ServerUrls = {
  natsUrl: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pcp',
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
};

/** The same server URL with another database name. */
export function databaseUrlFor(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

function answers(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({
      host: hostname.replace(/^\[|\]$/g, ''),
      port: Number(port || defaultPort),
    });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

const dockerAnswers = () => spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0;

/**
 * The servers the run uses: the configured ones where they answer; where one does not and
 * a Docker engine does, a throwaway container started with testcontainers (a developer's
 * laptop without local servers). Returns the URLs and a function that stops the containers.
 */
export async function resolveServers(): Promise<{ urls: ServerUrls; stop(): Promise<void> }> {
  const urls = { ...configuredServers };
  const missing = {
    nats: !(await answers(urls.natsUrl, 4222)),
    postgres: !(await answers(urls.databaseUrl, 5432)),
    redis: !(await answers(urls.redisUrl, 6379)),
  };
  const names = Object.entries(missing)
    .filter(([, isMissing]) => isMissing)
    .map(([name]) => name);
  if (names.length === 0) return { urls, stop: () => Promise.resolve() };
  if (!dockerAnswers()) {
    throw new Error(
      `${names.join(', ')} not reachable and no Docker engine to start them; run \`npm test\` (it starts local servers) or set NATS_URL, DATABASE_URL, REDIS_URL`,
    );
  }
  // Ryuk's reaper container is known to hang vitest's teardown; the teardown stops ours.
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  const { GenericContainer, Wait } = await import('testcontainers');
  const started: { stop(): Promise<unknown> }[] = [];
  if (missing.nats) {
    const nats = await new GenericContainer('nats:2.10-alpine')
      .withCommand(['-js'])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage('Server is ready'))
      .start();
    started.push(nats);
    urls.natsUrl = `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`;
  }
  if (missing.postgres) {
    const postgres = await new GenericContainer('postgres:16-alpine')
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start();
    started.push(postgres);
    urls.databaseUrl = `postgres://postgres@${postgres.getHost()}:${postgres.getMappedPort(5432)}/postgres`;
  }
  if (missing.redis) {
    const redis = await new GenericContainer('redis:7-alpine')
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .start();
    started.push(redis);
    urls.redisUrl = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`;
  }
  return {
    urls,
    stop: async () => {
      await Promise.all(started.map((container) => container.stop()));
    },
  };
}
