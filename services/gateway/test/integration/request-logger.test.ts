import { capturingLogger } from '@pcp/testing/capturing-logger';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// A request's lines carry its request id through the log context; the gateway builds no
// pino child per request (with redaction on, each child costs a bindings serialization).

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;
const captured = capturingLogger();
const loggers: unknown[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db, {}, env.redis, captured.logger);
  gateway.app.get('/logging-probe', (request) => {
    loggers.push(request.log);
    request.log.warn({ probe: true }, 'probe line');
    return { ok: true };
  });
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

describe('the logger of a request', () => {
  it('writes the request id once, from the log context, with no per-request child', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${gateway.url()}/logging-probe`);
      expect(response.status).toBe(200);
      ids.push(response.headers.get('x-request-id')!);
    }
    const lines = captured.lines.filter((line) => line.msg === 'probe line');
    expect(lines.map((line) => line.requestId)).toEqual(ids);
    for (const line of lines) expect(line).not.toHaveProperty('reqId');
    expect(loggers[0]).toBe(loggers[1]);
  });
});
