import { afterEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  fixtureStoreIds,
  fixtureStoreOrder,
  PlatformProblem,
} from '../src/index.js';
import {
  problem,
  startScriptedServer,
  type ScriptedAnswer,
  type ScriptedRequest,
  type ScriptedServer,
} from './scripted-server.js';

/**
 * fixtureStoreOrder (what `pcp trigger` orders) against a scripted stand-in of the platform:
 * its reads and validates are asked again when the answer is retryable (a cold catalog's
 * timeout), and thrown at once when it is not.
 */

const [newYork] = fixtureStoreIds;
const store = { storeId: newYork, name: 'Hudson Street Diner (test)', isOpenNow: true };
const catalogSet = {
  catalogSetId: 'set-1',
  catalogs: { all: { sectionIds: ['mains'] } },
  sections: { mains: { itemIds: ['fries'] } },
  items: { fries: { itemId: 'fries', name: 'Fries' } },
  modifierGroups: {},
};
const valid = { isValid: true, errors: [], amounts: { total: 2.72 } };
const timeout: ScriptedAnswer = {
  status: 504,
  headers: { 'retry-after': '0' },
  body: problem(504, 'UPSTREAM_TIMEOUT', true),
};

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The platform answering validate with `validate(n)` for its n-th validate (from 0). */
async function platformAnswering(validate: (index: number) => ScriptedAnswer) {
  let validates = 0;
  server = await startScriptedServer((request: ScriptedRequest) => {
    if (request.url.endsWith('/catalogset')) return { status: 200, body: catalogSet };
    if (request.url.endsWith('/orders/validate')) return validate(validates++);
    return { status: 200, body: store };
  });
  return createPlatformClient({ baseUrl: server.baseUrl, apiKey: 'pcp_test_x_y' });
}

const validatesOf = (scripted: ScriptedServer) =>
  scripted.requests.filter((request) => request.url.endsWith('/orders/validate')).length;

describe('fixtureStoreOrder', () => {
  it('asks a validate the platform answered 504 (retryable) again, and orders', async () => {
    const client = await platformAnswering((index) =>
      index === 0 ? timeout : { status: 200, body: valid },
    );
    const { storeId, body } = await fixtureStoreOrder(client, { endUserId: 'pcp-cli' });
    expect(storeId).toBe(newYork);
    expect(body.amounts).toEqual({ total: 2.72 });
    // The timed-out probe, the probe again, then the pricing of the chosen item.
    expect(validatesOf(server!)).toBe(3);
  });

  it('gives up after three retryable answers, and throws a refusal at once', async () => {
    let client = await platformAnswering(() => timeout);
    await expect(fixtureStoreOrder(client, { endUserId: 'pcp-cli' })).rejects.toMatchObject({
      status: 504,
      errorCode: 'UPSTREAM_TIMEOUT',
    });
    expect(validatesOf(server!)).toBe(3);
    await server!.close();

    client = await platformAnswering(() => ({
      status: 400,
      body: problem(400, 'REQUEST_INVALID'),
    }));
    const refused = fixtureStoreOrder(client, { endUserId: 'pcp-cli' });
    await expect(refused).rejects.toBeInstanceOf(PlatformProblem);
    expect(validatesOf(server!)).toBe(1);
  });
});
