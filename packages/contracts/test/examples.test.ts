import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as contracts from '../src/index.js';

/** Every exported contract schema that carries examples, by its export name. */
const illustrated = Object.entries(contracts).flatMap(([name, value]) => {
  if (!(value instanceof z.ZodType)) return [];
  const examples = z.globalRegistry.get(value)?.examples;
  return Array.isArray(examples) ? [{ name, schema: value, examples: examples as unknown[] }] : [];
});

describe('the examples of the contract schemas (shown in the OpenAPI document)', () => {
  it('cover the request bodies and responses partners see', () => {
    expect(illustrated.map(({ name }) => name)).toEqual(
      expect.arrayContaining([
        'storeProfileInput',
        'setStoreStatusInput',
        'discoverStoresInput',
        'catalogSetNotification',
        'catalogSetDocument',
        'addCartItemInput',
        'orderRequest',
        'placeOrderRequest',
        'orderStatusChange',
        'vaultCardInput',
        'webhookEndpointInput',
        'commerceStore',
        'marketfrontStore',
        'pricedCart',
        'validatedOrder',
        'order',
        'webhookPayload',
      ]),
    );
  });

  it.each(illustrated)('$name: each example is valid', ({ schema, examples }) => {
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) {
      const parsed = contracts.parseContract(schema, example);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    }
  });

  it('would catch an example that is not valid', () => {
    const [order] = (z.globalRegistry.get(contracts.order)?.examples ?? []) as object[];
    expect(
      contracts.parseContract(contracts.order, { ...order, orderId: 'not-a-guid' }).success,
    ).toBe(false);
  });
});
