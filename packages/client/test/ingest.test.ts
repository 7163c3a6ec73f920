import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CatalogIngestTimeoutError,
  createPlatformClient,
  ingestCatalog,
  PlatformProblem,
} from '../src/index.js';
import {
  problem,
  startScriptedServer,
  type ScriptedAnswer,
  type ScriptedRequest,
  type ScriptedServer,
} from './scripted-server.js';

/** ingestCatalog against a scripted stand-in of the platform: notify, then the status reads. */

const storeId = randomUUID();
const catalogIngestId = randomUUID();
const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${catalogIngestId}/status`;
const callbackUrl = 'https://partner.example.com/catalog.json';

const accepted: ScriptedAnswer = {
  status: 202,
  headers: { location: statusUrl, 'retry-after': '1' },
  body: { catalogIngestId, statusUrl },
};
const status = (value: string, extra: Record<string, unknown> = {}, retryAfter = '1') => ({
  status: 200,
  headers: { 'retry-after': retryAfter },
  body: { catalogIngestId, storeId, status: value, updatedAt: new Date().toISOString(), ...extra },
});

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A platform answering the notification with `notified`, then the reads in turn. */
async function platform(reads: ScriptedAnswer[], notified = accepted) {
  server = await startScriptedServer((_request: ScriptedRequest, index: number) =>
    index === 0 ? notified : reads[Math.min(index - 1, reads.length - 1)]!,
  );
  return {
    server,
    client: createPlatformClient({ baseUrl: server.baseUrl, apiKey: 'pk_commerce' }),
  };
}

const gaps = (server: ScriptedServer) =>
  server.requests.slice(1).map((request, i) => request.at - server.requests[i]!.at);

describe('ingestCatalog', () => {
  it('notifies, polls honouring Retry-After and returns a failed run with its errors', async () => {
    const errors = [{ message: 'Item 42 references a missing modifier group', path: '/items/42' }];
    const { server, client } = await platform([status('pulling'), status('failed', { errors })]);
    const result = await ingestCatalog(client, { storeId, callbackUrl });
    expect(result).toMatchObject({ catalogIngestId, status: 'failed', errors });

    const [notify, ...reads] = server.requests;
    expect(notify).toMatchObject({
      method: 'POST',
      url: `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    });
    expect(notify!.headers.authorization).toBe('Bearer pk_commerce');
    expect(JSON.parse(notify!.body)).toEqual({ callbackUrl });
    expect(reads.map((read) => `${read.method} ${read.url}`)).toEqual([
      `GET ${statusUrl}`,
      `GET ${statusUrl}`,
    ]);
    for (const gap of gaps(server)) expect(gap).toBeGreaterThanOrEqual(950);
  });

  it('reads again after a read that got no answer, a 503 or a 429', async () => {
    const { server, client } = await platform(
      [
        'drop',
        {
          status: 503,
          headers: { 'retry-after': '0' },
          body: problem(503, 'SERVICE_UNAVAILABLE', true),
        },
        { status: 429, headers: { 'retry-after': '0' }, body: problem(429, 'RATE_LIMITED', true) },
        status('succeeded', { summary: { items: 3 } }),
      ],
      { ...accepted, headers: { 'retry-after': '0' } },
    );
    const result = await ingestCatalog(client, { storeId, callbackUrl });
    expect(result).toMatchObject({ status: 'succeeded', summary: { items: 3 } });
    expect(server.requests).toHaveLength(5);
  });

  it('throws a refused notification and a refused read', async () => {
    const refused = { status: 400, body: problem(400, 'REQUEST_INVALID') };
    const { client } = await platform([], refused);
    await expect(ingestCatalog(client, { storeId, callbackUrl })).rejects.toMatchObject({
      status: 400,
      errorCode: 'REQUEST_INVALID',
    });
    await server!.close();

    const unknown = { status: 404, body: problem(404, 'CATALOG_INGEST_NOT_FOUND') };
    const { server: again, client: other } = await platform([unknown], {
      ...accepted,
      headers: { 'retry-after': '0' },
    });
    const error = await ingestCatalog(other, { storeId, callbackUrl }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformProblem);
    expect(error).toMatchObject({ status: 404, errorCode: 'CATALOG_INGEST_NOT_FOUND' });
    expect(again.requests).toHaveLength(2);
  });

  it('gives up after timeoutMs with the last status it read', async () => {
    const { server, client } = await platform([status('processing')]);
    const started = Date.now();
    const error = await ingestCatalog(client, { storeId, callbackUrl, timeoutMs: 1_500 }).catch(
      (caught: unknown) => caught,
    );
    const took = Date.now() - started;
    expect(error).toBeInstanceOf(CatalogIngestTimeoutError);
    expect(error).toMatchObject({ catalogIngestId, lastStatus: { status: 'processing' } });
    expect((error as Error).message).toMatch(/still processing after 1500 ms/);
    expect(took).toBeGreaterThanOrEqual(1_450);
    expect(took).toBeLessThan(2_000);
    // Read at one second (Retry-After); the next read would have come after the budget.
    expect(server.requests).toHaveLength(2);
  });

  it('gives up on a request that hangs when the time runs out', async () => {
    const { client } = await platform(['hang'], { ...accepted, headers: { 'retry-after': '0' } });
    const started = Date.now();
    const error = await ingestCatalog(client, { storeId, callbackUrl, timeoutMs: 500 }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(CatalogIngestTimeoutError);
    expect(error).toMatchObject({ catalogIngestId, lastStatus: undefined });
    expect((error as Error).message).toMatch(/still unread after 500 ms/);
    expect(Date.now() - started).toBeLessThan(1_500);
    await server!.close();

    const { client: silent } = await platform([], 'hang');
    await expect(
      ingestCatalog(silent, { storeId, callbackUrl, timeoutMs: 300 }),
    ).rejects.toMatchObject({
      name: 'CatalogIngestTimeoutError',
      catalogIngestId: undefined,
      message: 'catalog ingest notification not accepted within 300 ms',
    });
  });

  it('stops when the signal aborts', async () => {
    const { client } = await platform([status('processing', {}, '30')]);
    const started = Date.now();
    await expect(
      ingestCatalog(client, { storeId, callbackUrl, signal: AbortSignal.timeout(300) }),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});
