import { loadConfig } from '@pcp/service-kit';
import { describe, expect, it } from 'vitest';
import { paymentsEnvSchema } from '../../src/config.js';

const production = { NODE_ENV: 'production' };
const realProcessor = {
  PAYMENT_PROCESSOR_URL: 'https://api.processor.example',
  PAYMENT_PROCESSOR_API_KEY: 'sk_live_4f9a2c',
  PAYMENTS_CARD_HASH_KEY: 'b7c1d0e4f5a6978812ab34cd56ef7890',
};

describe('payments configuration', () => {
  it('defaults to the local processor simulator outside production', () => {
    const config = loadConfig(paymentsEnvSchema, {});
    expect(config.PAYMENT_PROCESSOR_URL).toBe('http://127.0.0.1:4010');
    expect(config.PAYMENT_PROCESSOR_API_KEY).toBe('sk_test_simulator');
  });

  it('production refuses to start on the simulator defaults, naming both variables', () => {
    expect(() => loadConfig(paymentsEnvSchema, production)).toThrow(
      /PAYMENT_PROCESSOR_URL: production \(NODE_ENV=production\) requires an https URL\n\s+PAYMENT_PROCESSOR_API_KEY: production/,
    );
  });

  it('production refuses an http processor URL', () => {
    expect(() =>
      loadConfig(paymentsEnvSchema, {
        ...production,
        ...realProcessor,
        PAYMENT_PROCESSOR_URL: 'http://api.processor.example',
      }),
    ).toThrow(/PAYMENT_PROCESSOR_URL: .*https/);
  });

  it("production refuses the simulator's key, the example Secret's placeholder and an empty key", () => {
    for (const key of ['sk_test_simulator', 'sk_test_simulator_other', 'change-me', '']) {
      expect(() =>
        loadConfig(paymentsEnvSchema, {
          ...production,
          ...realProcessor,
          PAYMENT_PROCESSOR_API_KEY: key,
        }),
      ).toThrow(/PAYMENT_PROCESSOR_API_KEY: /);
    }
  });

  it('production starts with an https processor and a real key', () => {
    const config = loadConfig(paymentsEnvSchema, { ...production, ...realProcessor });
    expect(config.PAYMENT_PROCESSOR_URL).toBe('https://api.processor.example');
    expect(config.PAYMENT_PROCESSOR_API_KEY).toBe('sk_live_4f9a2c');
  });

  it('production refuses the local card-hash key', () => {
    const { PAYMENTS_CARD_HASH_KEY: _ownKey, ...withoutHashKey } = realProcessor;
    expect(() => loadConfig(paymentsEnvSchema, { ...production, ...withoutHashKey })).toThrow(
      /PAYMENTS_CARD_HASH_KEY: production \(NODE_ENV=production\) requires a card-hash key of its own/,
    );
  });
});
