import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMetrics, type ConsumerBacklog } from '../src/metrics.js';

afterEach(() => {
  vi.useRealTimers();
});

/** The backlog gauges' values as `consumer/state` → value (`dead_letters` for the other gauge). */
async function backlog(metrics: ReturnType<typeof createMetrics>) {
  const json = await metrics.registry.getMetricsAsJSON();
  return Object.fromEntries(
    json
      .filter((metric) => metric.name.startsWith('pcp_consumer_'))
      .flatMap((metric) => metric.values)
      .map((value) => [
        `${String(value.labels.consumer)}/${String(value.labels.state ?? 'dead_letters')}`,
        value.value,
      ]),
  );
}

const idle = { pending: 0, ackPending: 0, redelivered: 0, deadLetters: 0 };

describe('the consumer backlog gauge', () => {
  it('reports each watched consumer by state, reading it at most once per few seconds', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const metrics = createMetrics('test');
    let reading: ConsumerBacklog = { pending: 7, ackPending: 2, redelivered: 1, deadLetters: 3 };
    const read = vi.fn(() => Promise.resolve(reading));
    metrics.watchConsumer('orders', read);

    expect(await backlog(metrics)).toEqual({
      'orders/pending': 7,
      'orders/ack_pending': 2,
      'orders/redelivered': 1,
      'orders/dead_letters': 3,
    });
    reading = idle;
    // A second scrape within the window is served from the last reading.
    expect((await backlog(metrics))['orders/pending']).toBe(7);
    // Both gauges of one scrape share one reading.
    expect(read).toHaveBeenCalledTimes(1);

    vi.advanceTimersByTime(5_000);
    expect((await backlog(metrics))['orders/pending']).toBe(0);
    expect(read).toHaveBeenCalledTimes(2);
  });

  it('leaves out a consumer whose reading fails, and keeps the scrape working', async () => {
    const metrics = createMetrics('test');
    metrics.watchConsumer('broken', () => Promise.reject(new Error('nats is away')));
    metrics.watchConsumer('fine', () => Promise.resolve({ ...idle, pending: 1 }));
    expect(await backlog(metrics)).toEqual({
      'fine/pending': 1,
      'fine/ack_pending': 0,
      'fine/redelivered': 0,
      'fine/dead_letters': 0,
    });
    expect(await metrics.registry.metrics()).toContain('pcp_consumer_backlog_messages');
  });

  it('stops reporting a consumer once unwatched; a newer watch of the name survives an old unwatch', async () => {
    const metrics = createMetrics('test');
    const first = metrics.watchConsumer('orders', () => Promise.resolve({ ...idle, pending: 1 }));
    const second = metrics.watchConsumer('orders', () => Promise.resolve({ ...idle, pending: 2 }));
    first();
    expect((await backlog(metrics))['orders/pending']).toBe(2);
    second();
    expect(await backlog(metrics)).toEqual({});
  });
});
