import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartner } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// Every request with a principal spends the partner's budget (docs/guide/authentication.md
// #rate-limits), those refused after authentication too: on a gateway alone, small budgets.

const READS_PER_MIN = 4;
const WRITES_PER_MIN = 3;

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db, {
    RATE_LIMIT_READS_PER_MIN: String(READS_PER_MIN),
    RATE_LIMIT_WRITES_PER_MIN: String(WRITES_PER_MIN),
  });
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

interface Answer {
  status: number;
  errorCode: string | undefined;
  remaining: string | null;
}

async function send(method: string, path: string, apiKey: string): Promise<Answer> {
  const response = await fetch(`${gateway.url()}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(method === 'GET' ? {} : { 'content-type': 'application/json' }),
    },
    body: method === 'GET' ? undefined : '{}',
  });
  const body = (await response.json()) as { errorCode?: string };
  return {
    status: response.status,
    errorCode: body.errorCode,
    remaining: response.headers.get('x-ratelimit-remaining'),
  };
}

/** `times` calls one after another, their answers' statuses and codes. */
async function repeat(times: number, call: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < times; i++) answers.push(await call(i));
  return answers;
}

const newPartner = (kind: 'commerce' | 'distribution') =>
  createPartner(db, { kind, name: `Refused ${randomUUID()}` });

describe('requests refused after authentication', () => {
  it('spend the reads budget on unknown /v1 paths until 429', async () => {
    const partner = await newPartner('commerce');
    const answers = await repeat(READS_PER_MIN + 2, (i) =>
      send('GET', `/v1/zz${i}`, partner.apiKey),
    );
    expect(answers.slice(0, READS_PER_MIN).map((answer) => answer.errorCode)).toEqual(
      Array(READS_PER_MIN).fill('NOT_FOUND'),
    );
    expect(answers.slice(0, READS_PER_MIN).map((answer) => answer.remaining)).toEqual([
      '3',
      '2',
      '1',
      '0',
    ]);
    expect(answers.slice(READS_PER_MIN).map((answer) => [answer.status, answer.errorCode])).toEqual(
      [
        [429, 'RATE_LIMITED'],
        [429, 'RATE_LIMITED'],
      ],
    );
  });

  it('spend the budget of a distribution key calling commerce routes until 429', async () => {
    const market = await newPartner('distribution');
    const answers = await repeat(READS_PER_MIN + 1, () =>
      send('GET', '/v1/commerce/stores', market.apiKey),
    );
    expect(answers.map((answer) => answer.errorCode)).toEqual([
      ...Array(READS_PER_MIN).fill('FORBIDDEN'),
      'RATE_LIMITED',
    ]);
    // A write of the other kind counts as a write.
    const writes = await repeat(WRITES_PER_MIN + 1, () =>
      send('PUT', `/v1/commerce/stores/${randomUUID()}`, market.apiKey),
    );
    expect(writes.map((answer) => answer.errorCode)).toEqual([
      ...Array(WRITES_PER_MIN).fill('FORBIDDEN'),
      'RATE_LIMITED',
    ]);
  });

  it('spend the writes budget of a live key calling a test helper until 429, as its usage shows', async () => {
    const partner = await newPartner('commerce');
    const answers = await repeat(WRITES_PER_MIN + 1, () =>
      send('POST', `/v1/test/orders/${randomUUID()}/advance`, partner.apiKey),
    );
    expect(answers.map((answer) => answer.errorCode)).toEqual([
      ...Array(WRITES_PER_MIN).fill('FORBIDDEN'),
      'RATE_LIMITED',
    ]);
    const usage = await fetch(`${gateway.url()}/v1/commerce/rate-limits`, {
      headers: { authorization: `Bearer ${partner.apiKey}` },
    });
    expect(usage.status).toBe(200);
    const { limits } = (await usage.json()) as { limits: { bucket: string; used: number }[] };
    expect(limits.find((limit) => limit.bucket === 'writes')?.used).toBe(WRITES_PER_MIN + 1);
    expect(limits.find((limit) => limit.bucket === 'reads')?.used).toBe(1);
  });
});
