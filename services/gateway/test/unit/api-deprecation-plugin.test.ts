import { API_DEPRECATIONS, type ApiDeprecations } from '@pcp/contracts';
import { AppError, createLogger } from '@pcp/service-kit';
import Fastify, { type FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installErrorHandling } from '../../src/http/problem.js';
import apiDeprecation from '../../src/plugins/api-deprecation.js';
import apiVersion, { apiVersionHeaderPlugin } from '../../src/plugins/api-version.js';

// The deprecation headers (docs/guide/versioning.md#deprecation) on a bare Fastify app with
// marks of its own: nothing is deprecated in the registry, which the plugin takes by default.

const docsUrl = 'https://api.partner-commerce.test/docs';

/** 2026-12-01T00:00:00Z and 2026-12-15T12:00:00Z in Unix seconds. */
const DEC_1 = 1_796_083_200;
const DEC_15_NOON = 1_797_336_000;

const marks: ApiDeprecations = {
  versions: { '2026-11-01': { since: '2026-12-01', sunset: '2027-06-01' } },
  operations: {
    getOrder: { since: '2026-12-15T12:00:00Z', changelogAnchor: 'order-read-deprecated' },
    getStore: {
      since: '2026-12-15T12:00:00Z',
      sunset: '2027-01-31T00:00:00Z',
      changelogAnchor: 'store-read-deprecated',
      versions: ['2026-11-01'],
    },
  },
};

const versionLink = `<${docsUrl}/guide/changelog#2026-11-01>; rel="deprecation"`;
const orderLink = `<${docsUrl}/guide/changelog#order-read-deprecated>; rel="deprecation"`;
const storeLink = `<${docsUrl}/guide/changelog#store-read-deprecated>; rel="deprecation"`;

async function appWith(deprecations?: ApiDeprecations): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  installErrorHandling(app, docsUrl, createLogger('test', 'silent'));
  await app.register(apiVersionHeaderPlugin);
  await app.register(
    fp(
      async (scope) => {
        scope.decorateRequest('principal', null);
      },
      { name: 'auth' },
    ),
  );
  await app.register(fp(async () => undefined, { name: 'rate-limit' }));
  await app.register(apiVersion);
  await app.register(apiDeprecation, { docsUrl, ...(deprecations ? { deprecations } : {}) });
  app.get('/store', { schema: { operationId: 'getStore' } }, async () => ({ storeId: 's' }));
  app.get('/order', { schema: { operationId: 'getOrder' } }, async () => ({ orderId: 'o' }));
  app.get('/missing-order', { schema: { operationId: 'getOrder' } }, async () => {
    throw new AppError('ORDER_NOT_FOUND', 'No order o');
  });
  app.get('/catalogs', { schema: { operationId: 'listCatalogs' } }, async (_request, reply) => {
    reply.header('link', '<https://api.partner-commerce.test/v1/catalogs?page=2>; rel="next"');
    return { catalogs: [] };
  });
  await app.ready();
  return app;
}

let app: FastifyInstance;
beforeAll(async () => {
  app = await appWith(marks);
});
afterAll(async () => {
  await app.close();
});

const get = (url: string, version?: string) =>
  app.inject({ method: 'GET', url, headers: version ? { 'pcp-version': version } : {} });

const deprecationHeaders = (headers: Record<string, unknown>) => ({
  deprecation: headers.deprecation,
  sunset: headers.sunset,
  link: headers.link,
});

describe('a deprecated version', () => {
  it('answers with Deprecation, Sunset and a Link to its changelog entry', async () => {
    const answer = await get('/catalogs', '2026-11-01');
    expect(answer.statusCode).toBe(200);
    expect(answer.headers.deprecation).toBe(`@${DEC_1}`);
    expect(answer.headers.sunset).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
    // The route's own Link is kept, ours appended.
    expect(answer.headers.link).toBe(
      `<https://api.partner-commerce.test/v1/catalogs?page=2>; rel="next", ${versionLink}`,
    );
  });

  it('says so on errors too: an unknown route', async () => {
    const unknown = await get('/nowhere', '2026-11-01');
    expect(unknown.statusCode).toBe(404);
    expect(deprecationHeaders(unknown.headers)).toEqual({
      deprecation: `@${DEC_1}`,
      sunset: 'Tue, 01 Jun 2027 00:00:00 GMT',
      link: versionLink,
    });
  });

  it('leaves the newest version’s answers without the headers', async () => {
    const answer = await get('/catalogs');
    expect(answer.headers['pcp-version']).toBe('2026-12-01');
    expect(deprecationHeaders(answer.headers)).toEqual({
      deprecation: undefined,
      sunset: undefined,
      link: '<https://api.partner-commerce.test/v1/catalogs?page=2>; rel="next"',
    });
  });
});

describe('a deprecated operation', () => {
  it('answers with Deprecation and its Link, and no Sunset before one is set', async () => {
    const answer = await get('/order');
    expect(answer.statusCode).toBe(200);
    expect(deprecationHeaders(answer.headers)).toEqual({
      deprecation: `@${DEC_15_NOON}`,
      sunset: undefined,
      link: orderLink,
    });
  });

  it('says so on its errors', async () => {
    const answer = await get('/missing-order');
    expect(answer.statusCode).toBe(404);
    expect(answer.json()).toMatchObject({ errorCode: 'ORDER_NOT_FOUND' });
    expect(answer.headers.deprecation).toBe(`@${DEC_15_NOON}`);
    expect(answer.headers.link).toBe(orderLink);
  });

  it('is told only in the versions its mark names', async () => {
    const newest = await get('/store', '2026-12-01');
    expect(deprecationHeaders(newest.headers)).toEqual({
      deprecation: undefined,
      sunset: undefined,
      link: undefined,
    });
    const older = await get('/store', '2026-11-01');
    expect(older.headers.deprecation).toBe(`@${DEC_1}`);
    // The earliest of the version's and the operation's dates; both links.
    expect(older.headers.sunset).toBe('Sun, 31 Jan 2027 00:00:00 GMT');
    expect(older.headers.link).toBe(`${versionLink}, ${storeLink}`);
  });
});

describe('the marks', () => {
  it('are the registry’s by default, where nothing is deprecated', async () => {
    expect(API_DEPRECATIONS).toEqual({ versions: {}, operations: {} });
    const plain = await appWith();
    try {
      const answer = await plain.inject({
        method: 'GET',
        url: '/order',
        headers: { 'pcp-version': '2026-11-01' },
      });
      expect(answer.statusCode).toBe(200);
      expect(answer.headers.deprecation).toBeUndefined();
      expect(answer.headers.sunset).toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  it('refuse a date that is not one, at start', async () => {
    for (const since of ['2026-13-01', 'soon', '']) {
      await expect(
        appWith({ versions: { '2026-11-01': { since } }, operations: {} }),
      ).rejects.toThrow(/2026-11-01/);
    }
    await expect(
      appWith({
        versions: {},
        operations: { getOrder: { since: '2026-12-01', sunset: 'never', changelogAnchor: 'x' } },
      }),
    ).rejects.toThrow(/getOrder/);
  });
});
