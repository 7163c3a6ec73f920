import { natsStreams } from '@pcp/contracts';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamName } from '../src/streams.js';
import { requireStreams } from '../src/topology.js';

let env: TestEnvironment;

beforeAll(async () => {
  env = await createTestEnvironment();
});

afterAll(async () => {
  await env?.cleanup();
});

describe('requireStreams', () => {
  it('resolves at once for streams that exist', async () => {
    const jsm = await env.nc.jetstreamManager();
    await expect(
      requireStreams(jsm, [streamName(env.prefix, natsStreams.events)], { waitMs: 0 }),
    ).resolves.toBeUndefined();
  });

  it('says which stream is missing and how to create it, once its wait is over', async () => {
    const jsm = await env.nc.jetstreamManager();
    const missing = streamName(`${env.prefix}_none`, natsStreams.events);
    const started = Date.now();
    await expect(requireStreams(jsm, [missing], { waitMs: 400 })).rejects.toThrow(
      `stream ${missing} is missing: apply the JetStream topology`,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });
});
