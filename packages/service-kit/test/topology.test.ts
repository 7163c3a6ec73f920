import { jetStreamConsumers, natsPermissions, natsStreams, serviceNames } from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import { streamName } from '../src/streams.js';
import { assertNoCardCapture, jetStreamTopology, subjectsOverlap } from '../src/topology.js';

/**
 * The JetStream topology (what the migration step applies) against the NATS permissions (what
 * services may use), and the rule that keeps card data out of every stream.
 */
describe('the JetStream topology', () => {
  const topology = jetStreamTopology('pcp');

  it('declares the streams and durables the permissions grant, no more and no fewer', () => {
    expect(topology.streams.map((s) => s.name).sort()).toEqual(
      Object.values(natsStreams)
        .map((name) => streamName('pcp', name))
        .sort(),
    );
    expect(topology.consumers.map(({ stream, durable }) => ({ stream, durable }))).toEqual(
      expect.arrayContaining(
        jetStreamConsumers.map(({ stream, durable }) => ({
          stream: streamName('pcp', stream),
          durable,
        })),
      ),
    );
    expect(topology.consumers).toHaveLength(jetStreamConsumers.length);
  });

  it('gives no service the right to create or change a stream or consumer', () => {
    for (const service of serviceNames) {
      const allowed = natsPermissions('pcp', service).publish.allow;
      expect(
        allowed.filter((subject) =>
          /^\$JS\.API\.(STREAM\.(CREATE|UPDATE)|CONSUMER\.(DURABLE\.)?CREATE)/.test(subject),
        ),
        service,
      ).toEqual([]);
    }
  });

  it('refuses a stream that would capture the payments subjects', () => {
    for (const subjects of [
      ['pcp.payments.v1.cards.vault'],
      ['pcp.payments.>'],
      ['pcp.*.v1.cards.vault'],
      ['pcp.>'],
      ['>'],
      ['pcp.events.>', '*.payments.*.*.*'],
    ]) {
      expect(() =>
        assertNoCardCapture({
          prefix: 'pcp',
          streams: [...topology.streams, { name: 'pcp_loot', subjects }],
        }),
      ).toThrow(/would capture pcp\.payments\.>/);
    }
    expect(assertNoCardCapture(topology)).toBe(topology);
  });

  it('matches subjects token by token, wildcards on either side', () => {
    expect(subjectsOverlap('a.b.c', 'a.*.c')).toBe(true);
    expect(subjectsOverlap('a.>', 'a.b.c')).toBe(true);
    expect(subjectsOverlap('a.>', 'a')).toBe(false);
    expect(subjectsOverlap('a.b', 'a.b.c')).toBe(false);
    expect(subjectsOverlap('a.events.>', 'a.payments.>')).toBe(false);
  });
});
