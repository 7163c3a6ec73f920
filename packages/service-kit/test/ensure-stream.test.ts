import { nanos, RetentionPolicy, StorageType, type JetStreamManager } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturingLogger } from '@pcp/testing/capturing-logger';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { baseEnvSchema, jetStreamSettings, loadConfig } from '../src/config.js';
import { ensureStream, streamName } from '../src/streams.js';
import { applyJetStreamTopology, jetStreamTopology } from '../src/topology.js';

/**
 * ensureStream runs at every migration (the JetStream topology): it creates a missing stream
 * with the configured replicas and limits, and otherwise changes nothing an operator owns.
 */

let env: TestEnvironment;
let jsm: JetStreamManager;
const HOUR_MS = 3_600_000;

beforeAll(async () => {
  env = await createTestEnvironment();
  jsm = await env.nc.jetstreamManager();
});

afterAll(async () => {
  await env?.cleanup();
});

describe('ensureStream', () => {
  it('creates the events stream with the configured replicas and limits', async () => {
    const prefix = `${env.prefix}_cfg`;
    const settings = jetStreamSettings(
      loadConfig(baseEnvSchema, {
        JETSTREAM_EVENTS_MAX_AGE_HOURS: '48',
        JETSTREAM_EVENTS_MAX_BYTES: String(64 * 1024 * 1024),
      }),
    );
    await applyJetStreamTopology(jsm, jetStreamTopology(prefix, { jetstream: settings }));
    const name = streamName(prefix, 'events');
    const { config } = await jsm.streams.info(name);
    expect(config).toMatchObject({
      num_replicas: 1,
      max_age: nanos(48 * HOUR_MS),
      max_bytes: 64 * 1024 * 1024,
      subjects: [`${prefix}.events.>`],
    });
  });

  it('keeps what an operator changed when a service starts again, and says so', async () => {
    const { logger, lines } = capturingLogger();
    const name = streamName(env.prefix, 'operated');
    const config = {
      name,
      subjects: [`${env.prefix}.operated.a`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(24 * HOUR_MS),
      max_bytes: 8 * 1024 * 1024,
    };
    await ensureStream(jsm, config, logger);
    expect(lines.map((line) => line.msg)).toEqual(['stream created']);

    // The operator: `nats stream edit` (a longer retention, a larger size, a subject added).
    const live = (await jsm.streams.info(name)).config;
    await jsm.streams.update(name, {
      ...live,
      max_age: nanos(72 * HOUR_MS),
      max_bytes: 32 * 1024 * 1024,
      subjects: [...live.subjects, `${env.prefix}.operated.extra`],
    });

    // A restarting service whose code now also needs `operated.b`.
    lines.length = 0;
    await ensureStream(
      jsm,
      { ...config, subjects: [...config.subjects, `${env.prefix}.operated.b`] },
      logger,
    );
    const after = (await jsm.streams.info(name)).config;
    expect(after.max_age).toBe(nanos(72 * HOUR_MS));
    expect(after.max_bytes).toBe(32 * 1024 * 1024);
    expect(after.subjects).toEqual([
      `${env.prefix}.operated.a`,
      `${env.prefix}.operated.extra`,
      `${env.prefix}.operated.b`,
    ]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 30,
        msg: 'stream subjects added',
        stream: name,
        added: [`${env.prefix}.operated.b`],
      }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        stream: name,
        differences: [
          { setting: 'max_age', configured: nanos(24 * HOUR_MS), live: nanos(72 * HOUR_MS) },
          { setting: 'max_bytes', configured: 8 * 1024 * 1024, live: 32 * 1024 * 1024 },
        ],
      }),
    );

    // Once its subjects are there, a start changes nothing and adds nothing.
    lines.length = 0;
    await ensureStream(
      jsm,
      { ...config, subjects: [...config.subjects, `${env.prefix}.operated.b`] },
      logger,
    );
    expect((await jsm.streams.info(name)).config).toMatchObject({
      max_age: nanos(72 * HOUR_MS),
      max_bytes: 32 * 1024 * 1024,
      subjects: after.subjects,
    });
    expect(lines.map((line) => line.msg)).not.toContain('stream subjects added');
  });

  it('creates a stream once when many replicas start at the same time', async () => {
    const name = streamName(env.prefix, 'raced');
    const config = { name, subjects: [`${env.prefix}.raced`], max_bytes: 4 * 1024 * 1024 };
    await Promise.all(Array.from({ length: 5 }, () => ensureStream(jsm, config)));
    expect((await jsm.streams.info(name)).config.subjects).toEqual([`${env.prefix}.raced`]);
  });
});

describe('the JetStream settings', () => {
  it('refuses replicas outside 1–5 and byte limits that are no limit', () => {
    expect(() => loadConfig(baseEnvSchema, { JETSTREAM_REPLICAS: '7' })).toThrow(
      /JETSTREAM_REPLICAS/,
    );
    expect(() => loadConfig(baseEnvSchema, { JETSTREAM_EVENTS_MAX_BYTES: '100' })).toThrow(
      /JETSTREAM_EVENTS_MAX_BYTES/,
    );
    expect(jetStreamSettings(loadConfig(baseEnvSchema, { JETSTREAM_REPLICAS: '3' }))).toMatchObject(
      {
        replicas: 3,
        events: { maxAgeMs: 168 * HOUR_MS, maxBytes: -1 },
        deadLetters: { maxAgeMs: 720 * HOUR_MS, maxBytes: 1024 * 1024 * 1024 },
      },
    );
  });
});
