import fastifySwagger from '@fastify/swagger';
import { testResetResult } from '@pcp/contracts';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api.js';
import { plainSerializerCompiler, zodValidatorCompiler } from '../../src/http/validation.js';
import { openApiOptions } from '../../src/openapi/document.js';
import { jsonResponse } from '../../src/openapi/responses.js';
import { SANDBOX_TAG, TEST_ONLY_EXTENSION } from '../../src/openapi/test-only.js';

const docsUrl = 'https://api.partner-commerce.test/docs';
const methods = ['get', 'put', 'post', 'delete', 'patch'] as const;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document as rendered
type Json = any;

/** A document of two routes, one only test keys may call, rendered as the gateway renders it. */
async function documentOf(): Promise<Json> {
  const app = Fastify({ logger: false });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(plainSerializerCompiler);
  await app.register(fastifySwagger, openApiOptions({ publicBaseUrl: 'http://x', docsUrl }));
  await app.register(async (routes) => {
    for (const [url, testOnly] of [
      ['/v1/test/reset', true],
      ['/v1/marketfront/other', false],
    ] as const) {
      routes.post(
        url,
        {
          config: { area: 'distribution', ...(testOnly ? { testOnly } : {}) },
          schema: {
            tags: ['Marketfront: webhooks'],
            operationId: testOnly ? 'testOnly' : 'everyMode',
            summary: url,
            description: url,
            response: { 200: jsonResponse(testResetResult, 'Done') },
          },
        },
        () => ({ deleted: {} }),
      );
    }
  });
  try {
    await app.ready();
    return app.swagger();
  } finally {
    await app.close();
  }
}

describe('test-only operations in the OpenAPI document', () => {
  it('marks a testOnly route with x-pcp-test-only and the Sandbox tag, beside its own tag', async () => {
    const document = await documentOf();
    const marked = document.paths['/v1/test/reset'].post;
    expect(marked[TEST_ONLY_EXTENSION]).toBe(true);
    expect(marked.tags).toEqual(['Marketfront: webhooks', SANDBOX_TAG]);
    const plain = document.paths['/v1/marketfront/other'].post;
    expect(plain).not.toHaveProperty(TEST_ONLY_EXTENSION);
    expect(plain.tags).toEqual(['Marketfront: webhooks']);
  });

  it('declares the Sandbox tag, linked to the sandbox guide', async () => {
    const document = await documentOf();
    const tag = document.tags.find((entry: Json) => entry.name === SANDBOX_TAG);
    expect(tag.externalDocs.url).toBe(`${docsUrl}/guide/sandbox`);
    expect(tag.description).toContain(TEST_ONLY_EXTENSION);
  });

  it('the served document marks exactly /v1/test/* and the webhook stream', async () => {
    const document = await buildOpenApiDocument({ docsUrl });
    const operations = Object.entries(document.paths as Record<string, Json>).flatMap(
      ([path, item]) =>
        methods
          .filter((method) => item[method])
          .map((method) => ({ name: `${method.toUpperCase()} ${path}`, operation: item[method] })),
    );
    const testOnlyPath = (name: string) =>
      / \/v1\/test\//.test(name) || name === 'GET /v1/marketfront/webhooks/stream';
    const marked = operations.filter(({ operation }) => operation[TEST_ONLY_EXTENSION] === true);
    expect(marked.map(({ name }) => name).sort()).toEqual(
      operations
        .map(({ name }) => name)
        .filter(testOnlyPath)
        .sort(),
    );
    for (const { operation } of marked) expect(operation.tags).toContain(SANDBOX_TAG);
  });
});
