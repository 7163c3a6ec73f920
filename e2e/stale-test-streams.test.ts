import { RetentionPolicy } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { removeStaleStreams, TEST_STREAM_NAME } from '@pcp/testing/test-run';

// A test file that dies skips its cleanup and leaves its streams; the next run's global setup
// removes them once they are an hour old. Here the cut-off moves instead of the clock.
describe('stale test streams', () => {
  let env: TestEnvironment;
  beforeAll(async () => {
    env = await createTestEnvironment();
  });
  afterAll(() => env.cleanup());

  const addStream = async (name: string) => {
    const jsm = await env.nc.jetstreamManager();
    await jsm.streams.add({
      name,
      subjects: [`${name}.>`],
      retention: RetentionPolicy.Limits,
    });
    return jsm;
  };

  it('removes the streams under the prefix created before the cut-off, with their consumers', async () => {
    const crashed = `${env.prefix}_crashed_`;
    const stale = `${crashed}events`;
    const otherPrefix = `${env.prefix}_alive_events`;
    const jsm = await addStream(stale);
    await jsm.consumers.add(stale, { durable_name: 'projector' });
    await addStream(otherPrefix);

    const removed = await removeStaleStreams(jsm, {
      isTestStream: (name) => name.startsWith(crashed),
      createdBefore: new Date(Date.now() + 60_000),
    });

    expect(removed).toEqual([stale]);
    await expect(jsm.streams.info(stale)).rejects.toThrow(/stream not found/i);
    await expect(jsm.consumers.info(stale, 'projector')).rejects.toThrow(/not found/i);
    expect((await jsm.streams.info(otherPrefix)).config.name).toBe(otherPrefix);
  });

  it('keeps the streams created after the cut-off', async () => {
    const recent = `${env.prefix}_recent_events`;
    const jsm = await addStream(recent);

    const removed = await removeStaleStreams(jsm, {
      isTestStream: (name) => name.startsWith(`${env.prefix}_recent_`),
      createdBefore: new Date(Date.now() - 60_000),
    });

    expect(removed).toEqual([]);
    expect((await jsm.streams.info(recent)).config.name).toBe(recent);
  });

  it("by default takes the streams of test files, not a deployment's named test", () => {
    expect(TEST_STREAM_NAME.test(`${env.prefix}_events`)).toBe(true);
    expect(TEST_STREAM_NAME.test('test_events')).toBe(false);
    expect(TEST_STREAM_NAME.test('pcp_events')).toBe(false);
  });
});
