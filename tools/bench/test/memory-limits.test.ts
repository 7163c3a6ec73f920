import { describe, expect, it } from 'vitest';
import { failing, heapFlags, limitRows } from '../src/benches/memory/limits.js';
import { deploymentMemory, memoryBytes } from '../src/benches/memory/manifests.js';

const MiB = 1024 ** 2;

const deployment = (name: string, limit: string, nodeOptions?: string) => ({
  kind: 'Deployment',
  metadata: { name },
  spec: {
    template: {
      spec: {
        containers: [
          {
            name,
            env: nodeOptions === undefined ? [] : [{ name: 'NODE_OPTIONS', value: nodeOptions }],
            resources: { requests: { memory: '128Mi' }, limits: { memory: limit } },
          },
        ],
      },
    },
  },
});

describe('memory limits from the manifests', () => {
  it('reads Kubernetes memory quantities', () => {
    expect(memoryBytes('384Mi')).toBe(384 * MiB);
    expect(memoryBytes('1Gi')).toBe(1024 * MiB);
    expect(memoryBytes('512M')).toBe(512e6);
    expect(memoryBytes('268435456')).toBe(256 * MiB);
    expect(() => memoryBytes('lots')).toThrow('not a memory quantity');
  });

  it("reads each Deployment's first container, its limit, request and NODE_OPTIONS", () => {
    const memory = deploymentMemory([
      deployment('gateway', '384Mi', '--max-old-space-size=200'),
      { kind: 'Service', metadata: { name: 'gateway' } },
      deployment('stores', '256Mi'),
    ]);
    expect([...memory]).toEqual([
      [
        'gateway',
        { limitBytes: 384 * MiB, requestBytes: 128 * MiB, nodeOptions: '--max-old-space-size=200' },
      ],
      ['stores', { limitBytes: 256 * MiB, requestBytes: 128 * MiB }],
    ]);
  });

  it('fails a process above 80 % of its base limit, and gives the production share beside', () => {
    const limits = {
      base: deploymentMemory([deployment('gateway', '384Mi'), deployment('stores', '256Mi')]),
      production: deploymentMemory([deployment('gateway', '512Mi')]),
    };
    const rows = limitRows(
      new Map([
        ['gateway', 462 * MiB],
        ['stores', 204 * MiB],
        ['nats', 50 * MiB],
      ]),
      limits,
    );
    expect(rows).toEqual([
      {
        process: 'gateway',
        'peak RSS MiB': 462,
        'base limit MiB': 384,
        '% of base limit': 120,
        'production limit MiB': 512,
        '% of production limit': 90,
        verdict: 'FAIL',
      },
      // 204 of 256 MiB is 79.7 %: within.
      {
        process: 'stores',
        'peak RSS MiB': 204,
        'base limit MiB': 256,
        '% of base limit': 80,
        verdict: 'ok',
      },
    ]);
    expect(failing(rows).map((row) => row.process)).toEqual(['gateway']);
  });

  it("gives a process the heap its container's limit would, and nothing else of NODE_OPTIONS", () => {
    const options = '--import @pcp/service-kit/instrument --max-old-space-size-percentage=50';
    expect(heapFlags(options, 384 * MiB)).toEqual(['--max-old-space-size=192']);
    expect(heapFlags('--max-old-space-size=200 --max-semi-space-size=8', 384 * MiB)).toEqual([
      '--max-old-space-size=200',
      '--max-semi-space-size=8',
    ]);
    expect(heapFlags(undefined, 384 * MiB)).toEqual([]);
  });
});
