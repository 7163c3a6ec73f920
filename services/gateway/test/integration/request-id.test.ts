import type { RequestLogEntry } from '@pcp/contracts';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartner } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// An incoming X-Request-Id (docs/guide/errors.md#request-ids): the request's id is always one
// of the gateway's; the partner's value is its clientRequestId in the request log.

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db, { REQUEST_LOG_FLUSH_MS: '20' });
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

/**
 * A GET with `requestId` as X-Request-Id, sent as raw bytes (latin1) as a client may;
 * answers the response's X-Request-Id and the body's requestId.
 */
function get(
  path: string,
  apiKey: string,
  requestId: string,
): Promise<{ header: string; bodyRequestId: string }> {
  const url = new URL(gateway.url());
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path,
        headers: { authorization: `Bearer ${apiKey}`, 'x-request-id': requestId },
        insecureHTTPParser: true,
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () =>
          resolve({
            header: String(response.headers['x-request-id']),
            bodyRequestId: (JSON.parse(body) as { requestId: string }).requestId,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('an incoming X-Request-Id', () => {
  it('is replaced unless it is one of ours, and kept as the clientRequestId', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: `Ids ${randomUUID()}` });
    const ours = randomUUID();
    const hostile = {
      tooLong: `a${'b'.repeat(5_000)}`,
      controlChars: 'abc\tdef\xe9\xffghi',
      notOurs: `req-${randomUUID()}`,
      upperCaseUuid: randomUUID().toUpperCase(),
      internalLooking: 'nats:ordering.v1.place:1',
    };
    const answers = new Map<string, { header: string; bodyRequestId: string }>();
    for (const [name, value] of Object.entries({ ours, ...hostile })) {
      answers.set(name, await get(`/v1/commerce/no-such-${name}`, partner.apiKey, value));
    }
    expect(answers.get('ours')).toEqual({ header: ours, bodyRequestId: ours });
    for (const name of Object.keys(hostile)) {
      const answer = answers.get(name)!;
      expect(answer.header, name).toMatch(UUID_V4);
      expect(answer.bodyRequestId, name).toBe(answer.header);
    }

    const expectedClientIds = {
      ours,
      tooLong: hostile.tooLong.slice(0, 128),
      controlChars: 'abc?def??ghi',
      notOurs: hostile.notOurs,
      upperCaseUuid: hostile.upperCaseUuid,
      internalLooking: hostile.internalLooking,
    };
    await expect
      .poll(async () => {
        const response = await fetch(`${gateway.url()}/v1/commerce/requests?status=404`, {
          headers: { authorization: `Bearer ${partner.apiKey}` },
        });
        const { requests } = (await response.json()) as { requests: RequestLogEntry[] };
        return Object.fromEntries(
          requests.map((entry) => [
            entry.path.replace('/v1/commerce/no-such-', ''),
            { requestId: entry.requestId, clientRequestId: entry.clientRequestId },
          ]),
        );
      })
      .toEqual(
        Object.fromEntries(
          Object.entries(expectedClientIds).map(([name, clientRequestId]) => [
            name,
            { requestId: answers.get(name)!.header, clientRequestId },
          ]),
        ),
      );
  });
});
