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
  it('has no live processor by default, and the simulator as the sandbox processor', () => {
    const config = loadConfig(paymentsEnvSchema, {});
    expect(config.PAYMENT_PROCESSOR_URL).toBeUndefined();
    expect(config.SANDBOX_PROCESSOR_URL).toBe('http://127.0.0.1:4010');
    expect(config.SANDBOX_PROCESSOR_API_KEY).toBe('sk_test_simulator');
  });

  it('production refuses the simulator as the live processor, naming both variables', () => {
    expect(() =>
      loadConfig(paymentsEnvSchema, {
        ...production,
        PAYMENTS_CARD_HASH_KEY: realProcessor.PAYMENTS_CARD_HASH_KEY,
        PAYMENT_PROCESSOR_URL: 'http://127.0.0.1:4010',
      }),
    ).toThrow(
      /PAYMENT_PROCESSOR_URL: production \(NODE_ENV=production\) requires an https URL\n\s+PAYMENT_PROCESSOR_API_KEY: production/,
    );
  });

  it('production starts without a live processor (live payments refused), the sandbox being the simulator', () => {
    const config = loadConfig(paymentsEnvSchema, {
      ...production,
      PAYMENTS_CARD_HASH_KEY: realProcessor.PAYMENTS_CARD_HASH_KEY,
      SANDBOX_PROCESSOR_URL: 'http://processor-simulator:4010',
    });
    expect(config.PAYMENT_PROCESSOR_URL).toBeUndefined();
    expect(config.SANDBOX_PROCESSOR_URL).toBe('http://processor-simulator:4010');
  });

  it("production refuses a sandbox processor holding the live processor's key", () => {
    expect(() =>
      loadConfig(paymentsEnvSchema, {
        ...production,
        ...realProcessor,
        SANDBOX_PROCESSOR_API_KEY: realProcessor.PAYMENT_PROCESSOR_API_KEY,
      }),
    ).toThrow(/SANDBOX_PROCESSOR_API_KEY: the sandbox processor's key must not be the live/);
  });

  it('production refuses a sandbox processor URL naming the live processor, however it is spelled', () => {
    for (const url of [
      'https://api.processor.example',
      'https://api.processor.example/',
      'https://API.Processor.Example',
      'https://api.processor.example:443',
      'https://api.processor.example./v1/',
      'http://api.processor.example',
      'http://api.processor.example:8080/sandbox',
      'https://user@api.processor.example',
    ]) {
      expect(() =>
        loadConfig(paymentsEnvSchema, {
          ...production,
          ...realProcessor,
          SANDBOX_PROCESSOR_URL: url,
        }),
      ).toThrow(/SANDBOX_PROCESSOR_URL: the sandbox processor must not be the live processor/);
    }
  });

  it('production refuses both a sandbox URL and a key that are the live processor’s, naming each', () => {
    expect(() =>
      loadConfig(paymentsEnvSchema, {
        ...production,
        ...realProcessor,
        SANDBOX_PROCESSOR_URL: realProcessor.PAYMENT_PROCESSOR_URL,
        SANDBOX_PROCESSOR_API_KEY: realProcessor.PAYMENT_PROCESSOR_API_KEY,
      }),
    ).toThrow(/SANDBOX_PROCESSOR_API_KEY: [^\n]+\n\s+SANDBOX_PROCESSOR_URL: /);
  });

  it('production takes a sandbox processor on another host, and any sandbox URL outside production', () => {
    const sandbox = 'https://sandbox.processor.example';
    expect(
      loadConfig(paymentsEnvSchema, {
        ...production,
        ...realProcessor,
        SANDBOX_PROCESSOR_URL: sandbox,
      }).SANDBOX_PROCESSOR_URL,
    ).toBe(sandbox);
    const local = { PAYMENT_PROCESSOR_URL: 'http://127.0.0.1:4010' };
    expect(
      loadConfig(paymentsEnvSchema, { ...local, SANDBOX_PROCESSOR_URL: 'http://127.0.0.1:4010' })
        .SANDBOX_PROCESSOR_URL,
    ).toBe('http://127.0.0.1:4010');
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

  it('production starts with an https processor and a real key, the sandbox being the simulator', () => {
    const config = loadConfig(paymentsEnvSchema, { ...production, ...realProcessor });
    expect(config.PAYMENT_PROCESSOR_URL).toBe('https://api.processor.example');
    expect(config.PAYMENT_PROCESSOR_API_KEY).toBe('sk_live_4f9a2c');
    expect(config.SANDBOX_PROCESSOR_API_KEY).toBe('sk_test_simulator');
  });

  it('production refuses the local card-hash key', () => {
    const { PAYMENTS_CARD_HASH_KEY: _ownKey, ...withoutHashKey } = realProcessor;
    expect(() => loadConfig(paymentsEnvSchema, { ...production, ...withoutHashKey })).toThrow(
      /PAYMENTS_CARD_HASH_KEY: production \(NODE_ENV=production\) requires a card-hash key of its own/,
    );
  });
});

describe('test-only settings', () => {
  it('plant the fault suite’s defects and crash points outside production, never in it', () => {
    const testOnly = {
      PAYMENTS_TEST_MUTANT: 'refund-twice',
      PAYMENTS_FAILPOINT: 'authorized-unrecorded',
    };
    expect(loadConfig(paymentsEnvSchema, testOnly).PAYMENTS_TEST_MUTANT).toBe('refund-twice');
    for (const [name, value] of Object.entries(testOnly)) {
      expect(() =>
        loadConfig(paymentsEnvSchema, {
          ...production,
          PAYMENTS_CARD_HASH_KEY: realProcessor.PAYMENTS_CARD_HASH_KEY,
          [name]: value,
        }),
      ).toThrow(new RegExp(`${name}: production \\(NODE_ENV=production\\) refuses a test-only`));
    }
  });
});
