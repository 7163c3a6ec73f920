import { describe, expect, it } from 'vitest';
import { createShutdown } from '../src/shutdown.js';
import { capturingLogger } from '@pcp/testing/capturing-logger';

describe('shutdown', () => {
  it('closes steps in the order of their marks, each told the time to its own mark of the deadline', async () => {
    const { logger } = capturingLogger();
    const shutdown = createShutdown(logger, 1_000);
    const given: [string, number][] = [];
    const step = (name: string) => (timeLeftMs: number) => {
      given.push([name, timeLeftMs]);
      return Promise.resolve();
    };
    shutdown.add('database', step('database'), 0.95);
    shutdown.add('nats', step('nats'), 0.85);
    shutdown.add('service', step('service'), 0.6);
    await shutdown.run('test');
    expect(given.map(([name]) => name)).toEqual(['service', 'nats', 'database']);
    const [service, nats, database] = given.map(([, ms]) => ms);
    expect(service).toBeGreaterThan(550);
    expect(service).toBeLessThanOrEqual(600);
    expect(nats).toBeGreaterThan(800);
    expect(database).toBeGreaterThan(900);
  });

  it('stops waiting for a step at its mark, so the steps after it still get their time', async () => {
    const { logger, lines } = capturingLogger();
    const shutdown = createShutdown(logger, 1_000);
    const closed: string[] = [];
    shutdown.add('database', () => {
      closed.push('database');
      return Promise.resolve();
    });
    // Never finishes (a handler that ignores its deadline).
    shutdown.add('service', () => new Promise(() => undefined), 0.3);
    const started = Date.now();
    await shutdown.run('test');
    const took = Date.now() - started;
    expect(closed).toEqual(['database']);
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(600);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'shutdown step ran out of time', step: 'service' }),
    );
  });

  it('closes by mark, whatever the order of registration: the ops port at 1 closes last', async () => {
    const { logger } = capturingLogger();
    const shutdown = createShutdown(logger, 1_000);
    const closed: string[] = [];
    const step = (name: string) => () => {
      closed.push(name);
      return Promise.resolve();
    };
    shutdown.add('tracing', step('tracing'));
    shutdown.add('database', step('database'), 0.95);
    shutdown.add('nats', step('nats'), 0.85);
    shutdown.add('service', step('service'), 0.6);
    // Registered last (it starts last), closed last: probes see 503, not a refused port.
    shutdown.add('ops server', step('ops server'), 1);
    await shutdown.run('test');
    expect(closed).toEqual(['service', 'nats', 'database', 'ops server', 'tracing']);
  });

  it('on SIGTERM turns unready first and keeps serving for the delay, then starts the deadline', async () => {
    const { logger } = capturingLogger();
    const shutdown = createShutdown(logger, 1_000);
    const events: [string, number][] = [];
    const started = Date.now();
    shutdown.unreadyFirst(() => events.push(['unready', Date.now() - started]), 300);
    shutdown.add(
      'http',
      (timeLeftMs) => {
        events.push(['http', Date.now() - started]);
        // The deadline starts after the delay: the step still has its whole share.
        expect(timeLeftMs).toBeGreaterThan(550);
        return Promise.resolve();
      },
      0.6,
    );
    await shutdown.run('SIGTERM');
    expect(events.map(([name]) => name)).toEqual(['unready', 'http']);
    expect(events[0]![1]).toBeLessThan(100);
    expect(events[1]![1]).toBeGreaterThanOrEqual(290);
  });

  it('on SIGINT (a developer’s Ctrl-C) turns unready without waiting', async () => {
    const { logger } = capturingLogger();
    const shutdown = createShutdown(logger, 1_000);
    const events: string[] = [];
    shutdown.unreadyFirst(() => events.push('unready'), 60_000);
    shutdown.add('http', () => {
      events.push('http');
      return Promise.resolve();
    });
    const started = Date.now();
    await shutdown.run('SIGINT');
    expect(events).toEqual(['unready', 'http']);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('runs once: a second signal waits for the same shutdown', async () => {
    const { logger } = capturingLogger();
    const shutdown = createShutdown(logger, 1_000);
    let closes = 0;
    shutdown.add('service', () => {
      closes += 1;
      return new Promise((resolve) => setTimeout(resolve, 50));
    });
    await Promise.all([shutdown.run('SIGTERM'), shutdown.run('SIGINT')]);
    expect(closes).toBe(1);
  });
});
