import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMetrics, type ConsumerBacklog } from '../src/metrics.js';

afterEach(() => {
  vi.useRealTimers();
});

/** The backlog gauge's values as `consumer/state` → value. */
async function backlog(metrics: ReturnType<typeof createMetrics>) {
  const json = await metrics.registry.getMetricsAsJSON();
  const gauge = json.find((metric) => metric.name === 'pcp_consumer_backlog_messages');
  return Object.fromEntries(
    (gauge?.values ?? []).map((value) => [
      `${String(value.labels.consumer)}/${String(value.labels.state)}`,
      value.value,
    ]),
  );
}

describe('the consumer backlog gauge', () => {
  it('reports each watched consumer by state, reading it at most once per few seconds', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const metrics = createMetrics('test');
    let reading: ConsumerBacklog = { pending: 7, ackPending: 2, redelivered: 1 };
    const read = vi.fn(() => Promise.resolve(reading));
    metrics.watchConsumer('orders', read);

    expect(await backlog(metrics)).toEqual({
      'orders/pending': 7,
      'orders/ack_pending': 2,
      'orders/redelivered': 1,
    });
    reading = { pending: 0, ackPending: 0, redelivered: 0 };
    // A second scrape within the window is served from the last reading.
    expect((await backlog(metrics))['orders/pending']).toBe(7);
    expect(read).toHaveBeenCalledTimes(1);

    vi.advanceTimersByTime(5_000);
    expect((await backlog(metrics))['orders/pending']).toBe(0);
    expect(read).toHaveBeenCalledTimes(2);
  });

  it('leaves out a consumer whose reading fails, and keeps the scrape working', async () => {
    const metrics = createMetrics('test');
    metrics.watchConsumer('broken', () => Promise.reject(new Error('nats is away')));
    metrics.watchConsumer('fine', () =>
      Promise.resolve({ pending: 1, ackPending: 0, redelivered: 0 }),
    );
    expect(await backlog(metrics)).toEqual({
      'fine/pending': 1,
      'fine/ack_pending': 0,
      'fine/redelivered': 0,
    });
    expect(await metrics.registry.metrics()).toContain('pcp_consumer_backlog_messages');
  });

  it('stops reporting a consumer once unwatched; a newer watch of the name survives an old unwatch', async () => {
    const metrics = createMetrics('test');
    const first = metrics.watchConsumer('orders', () =>
      Promise.resolve({ pending: 1, ackPending: 0, redelivered: 0 }),
    );
    const second = metrics.watchConsumer('orders', () =>
      Promise.resolve({ pending: 2, ackPending: 0, redelivered: 0 }),
    );
    first();
    expect((await backlog(metrics))['orders/pending']).toBe(2);
    second();
    expect(await backlog(metrics)).toEqual({});
  });
});
