import { createDatabase } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestEnvironment,
  type TestEnvironment,
} from '../../../../test-support/environment.js';
import { createPartner } from '../../src/admin/partner-admin.js';
import { createAuthenticator } from '../../src/auth/authenticator.js';
import { GATEWAY_SCHEMA } from '../../src/db/migrations/index.js';
import type { GatewayDatabase } from '../../src/db/partner.table.js';

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
/** Key lookups that reached Postgres. */
let lookups = 0;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<GatewayDatabase>({
    url: env.databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: 'test',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

/** The database, counting the key lookups that reach it. */
const counting = () =>
  db.withPlugin({
    transformQuery(args) {
      if (JSON.stringify(args.node).includes('api_keys')) lookups++;
      return args.node;
    },
    transformResult: (args) => Promise.resolve(args.result),
  });

/** A key of the right shape that no partner holds. */
const madeUpKey = () =>
  `pcp_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;

describe('the key cache under a flood of made-up keys', () => {
  it("never evicts a partner's verified key, so its requests stay off the database", async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Flooded' });
    const authenticator = createAuthenticator(counting(), 60_000);
    expect((await authenticator.authenticate(partner.apiKey))?.partnerId).toBe(partner.partnerId);
    const before = lookups;

    // More made-up keys than either cache holds, each looked up once.
    for (let n = 0; n < 12_000; n++) {
      expect(await authenticator.authenticate(madeUpKey())).toBeNull();
    }
    expect(lookups - before).toBe(12_000);

    // The partner's key is still verified from memory.
    expect(authenticator.cached(partner.apiKey)?.partnerId).toBe(partner.partnerId);
    expect((await authenticator.authenticate(partner.apiKey))?.partnerId).toBe(partner.partnerId);
    expect(lookups - before).toBe(12_000);
  });

  it('looks a made-up key up once while it is remembered as unknown', async () => {
    const authenticator = createAuthenticator(counting(), 60_000);
    const key = madeUpKey();
    const before = lookups;
    for (let n = 0; n < 5; n++) expect(await authenticator.authenticate(key)).toBeNull();
    expect(lookups - before).toBe(1);
  });
});
