import { describe, expect, it } from 'vitest';
import { orderingEnvSchema } from '../../src/config.js';
import { orderingMutants } from '../../src/mutants.js';

const parse = (env: Record<string, string>) => orderingEnvSchema.safeParse(env);

describe('ordering configuration', () => {
  it('takes the fault suite’s test-only settings outside production', () => {
    for (const mutant of orderingMutants) {
      expect(parse({ ORDERING_TEST_MUTANT: mutant }).success).toBe(true);
    }
    expect(parse({ ORDERING_TEST_OWNERS_READ_HOLD_MS: '300' }).success).toBe(true);
    expect(parse({ ORDERING_FAILPOINT: 'capturing' }).success).toBe(true);
    expect(parse({ ORDERING_TEST_MUTANT: 'no-such-defect' }).success).toBe(false);
  });

  it('refuses every test-only setting in production, naming it', () => {
    for (const [name, value] of [
      ['ORDERING_TEST_MUTANT', 'cancel-no-refund'],
      ['ORDERING_TEST_OWNERS_READ_HOLD_MS', '300'],
      ['ORDERING_FAILPOINT', 'capturing'],
      ['ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS', '3'],
    ] as const) {
      const result = parse({ NODE_ENV: 'production', [name]: value });
      expect(result.success, name).toBe(false);
      expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual([name]);
    }
  });

  it('asks for owed refunds every 5 s, again after 1 s doubling to an hour', () => {
    const config = orderingEnvSchema.parse({});
    expect(config.ORDERING_REFUND_SWEEP_INTERVAL_MS).toBe(5_000);
    expect(config.ORDERING_REFUND_RETRY_MS).toBe(1_000);
    expect(config.ORDERING_REFUND_RETRY_MAX_MS).toBe(3_600_000);
    expect(parse({ ORDERING_REFUND_RETRY_MS: '99' }).success).toBe(false);
  });
});
