/**
 * Every variable a service reads is in docs/operations.md's configuration table, so an
 * operator never meets a setting the docs do not name. The table may shorten a sibling to its
 * suffix (`PAYMENT_BREAKER_ERROR_PERCENT`, `_VOLUME_THRESHOLD`): a suffix counts when its row
 * names a full variable with the same stem.
 */
import { catalogEnvSchema } from '@pcp/catalog';
import { gatewayEnvSchema } from '@pcp/gateway';
import { orderingEnvSchema } from '@pcp/ordering';
import { paymentsEnvSchema } from '@pcp/payments';
import { processorSimulatorEnvSchema } from '@pcp/processor-simulator';
import { baseEnvSchema } from '@pcp/service-kit';
import { storesEnvSchema } from '@pcp/stores';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const operations = readFileSync(
  join(import.meta.dirname, '..', '..', 'docs', 'operations.md'),
  'utf8',
);

/** The variables each row of the table names, suffixes expanded against its full names. */
function documentedVariables(): Set<string> {
  const names = new Set<string>();
  for (const row of operations.split('\n').filter((line) => line.startsWith('| `'))) {
    const cell = row.split('|')[1] ?? '';
    const full = [...cell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1] ?? '');
    full.forEach((name) => names.add(name));
    for (const [, suffix = ''] of cell.matchAll(/`(_[A-Z0-9_]+)`/g)) {
      for (const name of full) {
        // Every stem of a full name: PAYMENT_BREAKER_ERROR_PERCENT → PAYMENT_BREAKER_ERROR, …
        const parts = name.split('_');
        for (let keep = parts.length - 1; keep > 0; keep--) {
          names.add(`${parts.slice(0, keep).join('_')}${suffix}`);
        }
      }
    }
  }
  return names;
}

const schemas = {
  'service-kit': baseEnvSchema,
  gateway: gatewayEnvSchema,
  stores: storesEnvSchema,
  catalog: catalogEnvSchema,
  ordering: orderingEnvSchema,
  payments: paymentsEnvSchema,
  'processor-simulator': processorSimulatorEnvSchema,
};

describe('docs/operations.md', () => {
  it.each(Object.entries(schemas))('names every variable %s reads', (_service, schema) => {
    const documented = documentedVariables();
    const read = Object.keys(schema.shape).filter((key) => /^[A-Z][A-Z0-9_]+$/.test(key));
    expect(read.length).toBeGreaterThan(0);
    expect(read.filter((name) => !documented.has(name))).toEqual([]);
  });
});
