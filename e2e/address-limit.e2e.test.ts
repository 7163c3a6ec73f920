import { createPlatformClient, type PlatformClient } from '@pcp/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';

let env: TestEnvironment;
let platform: TestPlatform;
let market: PlatformClient;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    orderingEnv: { ORDERING_MAX_ADDRESSES_PER_END_USER: '2' },
  });
  const distribution = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
  market = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: distribution.apiKey });
});

afterAll(async () => {
  await platform?.stop();
  await env?.cleanup();
});

const header = { 'X-End-User-Id': 'collector' };
const save = (address1: string) =>
  market.POST('/v1/marketfront/addresses', {
    body: { address1, city: 'Chicago', state: 'IL', postalCode: '60606' },
    params: { header },
  });

describe('saved addresses per end user', () => {
  it('caps them at ORDERING_MAX_ADDRESSES_PER_END_USER; saving one held again or after a delete works', async () => {
    const first = await save('100 S Wacker Dr');
    expect((await save('200 S Wacker Dr')).response.status).toBe(201);
    const refused = await save('300 S Wacker Dr');
    expect(refused.response.status).toBe(409);
    expect(refused.error?.errorCode).toBe('ADDRESS_LIMIT_REACHED');
    // The same address again is the one held, not a new one.
    expect((await save('100 S Wacker Dr')).response.status).toBe(200);
    await market.DELETE('/v1/marketfront/addresses/{addressId}', {
      params: { path: { addressId: first.data!.addressId }, header },
    });
    expect((await save('300 S Wacker Dr')).response.status).toBe(201);
  });
});
