import {
  applyJetStreamTopology,
  connectNats,
  createLogger,
  createMetrics,
  jetStreamTopology,
  type Logger,
} from '@pcp/service-kit';
import type { NatsConnection } from 'nats';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createClient } from 'redis';
import { inject } from 'vitest';
import { databaseUrlFor } from './servers.js';

export interface TestEnvironment {
  /** A database of this test file alone, copied from the migrated template. */
  readonly databaseUrl: string;
  /** NATS subject prefix and Redis key prefix of this test file alone. */
  readonly prefix: string;
  readonly redisKeyPrefix: string;
  readonly nc: NatsConnection;
  readonly redis: ReturnType<typeof createClient>;
  readonly logger: Logger;
  newMetrics(service: string): ReturnType<typeof createMetrics>;
  /** Close connections, drop the database and delete this file's Redis keys. */
  cleanup(): Promise<void>;
}

/** Everything a test file needs on the real servers, isolated from other runs and files. */
export async function createTestEnvironment(): Promise<TestEnvironment> {
  const id = `${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
  const database = `pcp_t_${id}`;
  const prefix = `test_${id}`;
  const redisKeyPrefix = `${prefix}:`;

  const servers = inject('servers');
  const adminUrl = databaseUrlFor(servers.databaseUrl, 'postgres');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database} TEMPLATE ${inject('templateDatabase')}`);
  await admin.end();

  const logger = createLogger('test', process.env.TEST_LOG_LEVEL ?? 'silent');
  const nc = await connectNats({ url: servers.natsUrl, name: `test-${id}`, logger });
  // What the migration step does in a deployment: services only check it at start.
  await applyJetStreamTopology(await nc.jetstreamManager(), jetStreamTopology(prefix));
  const redis = createClient({ url: servers.redisUrl });
  redis.on('error', () => undefined);
  await redis.connect();

  return {
    databaseUrl: databaseUrlFor(servers.databaseUrl, database),
    prefix,
    redisKeyPrefix,
    nc,
    redis,
    logger,
    newMetrics: (service) => createMetrics(service),
    async cleanup() {
      const jsm = await nc.jetstreamManager();
      for await (const stream of jsm.streams.list()) {
        if (stream.config.name.startsWith(`${prefix}_`))
          await jsm.streams.delete(stream.config.name);
      }
      for await (const keys of redis.scanIterator({ MATCH: `${redisKeyPrefix}*`, COUNT: 500 })) {
        if (keys.length > 0) await redis.del(keys);
      }
      redis.destroy();
      await nc.drain();
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await dropper.end();
    },
  };
}
