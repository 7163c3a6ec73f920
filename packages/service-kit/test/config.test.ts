import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { baseEnvSchema, loadConfig, natsCredentials } from '../src/config.js';

describe('loadConfig', () => {
  it('applies the defaults of an empty environment', () => {
    const config = loadConfig(baseEnvSchema, {});
    expect(config).toEqual({
      NATS_URL: 'nats://127.0.0.1:4222',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/pcp',
      REDIS_URL: 'redis://127.0.0.1:6379',
      NATS_SUBJECT_PREFIX: 'pcp',
      NATS_REQUEST_TIMEOUT_MS: 5_000,
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: 10_000,
      OPS_HOST: '0.0.0.0',
      JETSTREAM_REPLICAS: 1,
      JETSTREAM_EVENTS_MAX_AGE_HOURS: 168,
      JETSTREAM_EVENTS_MAX_BYTES: -1,
      JETSTREAM_INGEST_MAX_AGE_HOURS: 168,
      JETSTREAM_INGEST_MAX_BYTES: -1,
      JETSTREAM_DEAD_LETTERS_MAX_AGE_HOURS: 720,
      JETSTREAM_DEAD_LETTERS_MAX_BYTES: 1024 * 1024 * 1024,
    });
    // No NATS user: local runs connect anonymously.
    expect(natsCredentials(config)).toBeUndefined();
  });

  it('takes a NATS user and password together, never one alone', () => {
    const both = loadConfig(baseEnvSchema, { NATS_USER: 'stores', NATS_PASSWORD: 's3cret' });
    expect(natsCredentials(both)).toEqual({ user: 'stores', password: 's3cret' });
    expect(() => natsCredentials(loadConfig(baseEnvSchema, { NATS_USER: 'stores' }))).toThrow(
      /NATS_PASSWORD: required when NATS_USER is set/,
    );
    expect(() => natsCredentials(loadConfig(baseEnvSchema, { NATS_PASSWORD: 's3cret' }))).toThrow(
      /NATS_USER: required when NATS_PASSWORD is set/,
    );
    expect(() => loadConfig(baseEnvSchema, { NATS_USER: 'a.b' })).toThrow(/NATS_USER/);
  });

  it('production (NODE_ENV=production) refuses a DATABASE_URL that does not verify the server', () => {
    const production = { NODE_ENV: 'production' };
    for (const url of [
      undefined, // the local default: no TLS at all
      'postgres://pcp_stores:pw@pcp-db-rw.pcp-postgres.svc:5432/pcp',
      'postgres://pcp_stores:pw@pcp-db-rw.pcp-postgres.svc:5432/pcp?sslmode=require',
      'postgres://pcp_stores:pw@pcp-db-rw.pcp-postgres.svc:5432/pcp?sslmode=verify-ca',
      'postgres://pcp_stores:pw@db:5432/pcp?sslmode=verify-full&sslmode=disable',
    ]) {
      expect(() => loadConfig(baseEnvSchema, { ...production, DATABASE_URL: url })).toThrow(
        /DATABASE_URL: production \(NODE_ENV=production\) requires sslmode=verify-full/,
      );
    }
    expect(() =>
      loadConfig(baseEnvSchema, { ...production, DATABASE_URL: 'host=db sslmode=verify-full' }),
    ).toThrow(/DATABASE_URL: not a URL/);
    const verified =
      'postgres://pcp_stores:pw@pcp-db-rw.pcp-postgres.svc:5432/pcp?sslmode=verify-full&sslrootcert=/etc/pcp/postgres-ca/ca.crt';
    expect(loadConfig(baseEnvSchema, { ...production, DATABASE_URL: verified }).DATABASE_URL).toBe(
      verified,
    );
    // Outside production the local servers' plain connections stay allowed.
    expect(loadConfig(baseEnvSchema, { NODE_ENV: 'test' }).DATABASE_URL).toBe(
      'postgres://postgres@127.0.0.1:5432/pcp',
    );
  });

  it('reads and coerces given values', () => {
    const config = loadConfig(baseEnvSchema, {
      NATS_SUBJECT_PREFIX: 'stage-1_a',
      NATS_REQUEST_TIMEOUT_MS: '250',
      LOG_LEVEL: 'debug',
      UNRELATED: 'ignored',
    });
    expect(config.NATS_SUBJECT_PREFIX).toBe('stage-1_a');
    expect(config.NATS_REQUEST_TIMEOUT_MS).toBe(250);
    expect(config.LOG_LEVEL).toBe('debug');
    expect(config).not.toHaveProperty('UNRELATED');
  });

  it('returns a frozen object', () => {
    const config = loadConfig(baseEnvSchema, {});
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as { NATS_URL: string }).NATS_URL = 'nats://elsewhere:4222';
    }).toThrow(TypeError);
    expect(config.NATS_URL).toBe('nats://127.0.0.1:4222');
  });

  it.each(['pcp.prod', 'a b', '', 'x'.repeat(65), 'pcp>', 'pcp*'])(
    'refuses NATS_SUBJECT_PREFIX %j with a message naming the variable',
    (prefix) => {
      expect(() => loadConfig(baseEnvSchema, { NATS_SUBJECT_PREFIX: prefix })).toThrow(
        /NATS_SUBJECT_PREFIX/,
      );
    },
  );

  it('names every bad variable', () => {
    let message = '';
    try {
      loadConfig(baseEnvSchema, {
        NATS_SUBJECT_PREFIX: 'a.b',
        NATS_REQUEST_TIMEOUT_MS: '10',
        LOG_LEVEL: 'loud',
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^Invalid configuration:/);
    expect(message).toContain('NATS_SUBJECT_PREFIX: letters, digits, _ and - only');
    expect(message).toContain('NATS_REQUEST_TIMEOUT_MS');
    expect(message).toContain('LOG_LEVEL');
  });

  it('works with extended schemas', () => {
    const schema = baseEnvSchema.extend({ PORT: z.coerce.number().int().default(8080) });
    expect(loadConfig(schema, { PORT: '9000' }).PORT).toBe(9000);
    expect(() => loadConfig(schema, { PORT: 'eighty' })).toThrow(/PORT/);
  });
});
