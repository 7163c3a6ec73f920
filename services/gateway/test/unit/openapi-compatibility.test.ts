import { apiCompare } from 'api-smart-diff';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api.js';

/**
 * The breaking-change check: the document the gateway renders now must not break clients
 * written against the last release's (services/gateway/openapi/release.json) unless its
 * info.version has a new major. api-smart-diff classifies each difference of two OpenAPI
 * 3.1 documents (a removed path, operation, response status or property, a new required
 * parameter or property, a narrowed type or enum, a changed content type... are breaking);
 * Atlassian's openapi-diff refuses 3.1 documents.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- OpenAPI documents as rendered
type Document = any;

const releasePath = join(import.meta.dirname, '..', '..', 'openapi', 'release.json');

const majorOf = (document: Document) => Number(String(document.info.version).split('.')[0]);

/**
 * api-smart-diff counts any change of the security schemes as breaking; a new one is another
 * way to authenticate (the console's session cookie), which no client of the release needs.
 */
const isNewSecurityScheme = (diff: { action: string; path: readonly unknown[] }) =>
  diff.action === 'add' && diff.path[0] === 'components' && diff.path[1] === 'securitySchemes';

/** The changes of `current` that break clients of `release`, each as a readable line. */
function breakingChanges(release: Document, current: Document): string[] {
  if (majorOf(current) > majorOf(release)) return [];
  return apiCompare(release, current)
    .diffs.filter((diff) => diff.type === 'breaking' && !isNewSecurityScheme(diff))
    .map((diff) => `${diff.description ?? diff.action} at /${diff.path.join('/')}`);
}

let release: Document;
let current: Document;

beforeAll(async () => {
  release = JSON.parse(await readFile(releasePath, 'utf8'));
  current = await buildOpenApiDocument();
});

describe('the OpenAPI document against the last release', () => {
  it('breaks no client of the release (or info.version has a new major)', () => {
    // To release a breaking change: bump API_VERSION's major in src/openapi/document.ts and
    // cut a release (docs/operations.md#api-releases).
    expect(breakingChanges(release, current)).toEqual([]);
  });
});

describe('the breaking-change check', () => {
  const changed = (change: (document: Document) => void) => {
    const document = structuredClone(current);
    change(document);
    return document;
  };

  it('catches a removed response property', () => {
    const broken = changed((document) => {
      const order = document.components.schemas.Order;
      delete order.properties.cancelReason;
      order.required = order.required.filter((name: string) => name !== 'cancelReason');
    });
    const changes = breakingChanges(current, broken);
    expect(changes.some((line) => line.includes('cancelReason'))).toBe(true);
  });

  it('catches a new required request parameter', () => {
    const broken = changed((document) => {
      document.paths['/v1/marketfront/orders/{orderId}'].get.parameters.push({
        in: 'query',
        name: 'expand',
        required: true,
        schema: { type: 'string' },
      });
    });
    expect(breakingChanges(current, broken)).toEqual([
      expect.stringContaining('required query parameter `expand`'),
    ]);
  });

  it('catches a removed operation, a removed response status and a changed content type', () => {
    const broken = changed((document) => {
      delete document.paths['/v1/commerce/stores'].get;
      delete document.paths['/v1/marketfront/orders/{orderId}'].get.responses['404'];
      const body = document.paths['/v1/marketfront/orders/validate'].post.requestBody.content;
      body['application/x-www-form-urlencoded'] = body['application/json'];
      delete body['application/json'];
    });
    const changes = breakingChanges(current, broken).join('\n');
    expect(changes).toContain('operation GET /v1/commerce/stores');
    expect(changes).toContain('Response 404');
    expect(changes).toContain('application/json');
  });

  it('catches a narrowed enum in a request and a new required request property', () => {
    const broken = changed((document) => {
      const status = document.paths['/v1/commerce/stores/{storeId}/orders'].get.parameters.find(
        (parameter: { name: string }) => parameter.name === 'status',
      );
      status.schema.enum = status.schema.enum.slice(0, 2);
      const notification =
        document.paths['/v1/commerce/catalogset-notification'].post.requestBody.content[
          'application/json'
        ].schema;
      notification.properties.priority = { type: 'integer' };
      notification.required.push('priority');
    });
    const changes = breakingChanges(current, broken).join('\n');
    expect(changes).toContain('query parameter `status`');
    expect(changes).toContain('priority');
  });

  it('lets additive changes through: a new operation, an optional parameter or property', () => {
    const extended = changed((document) => {
      document.paths['/v1/marketfront/orders/{orderId}'].get.parameters.push({
        in: 'query',
        name: 'expand',
        required: false,
        schema: { type: 'string' },
      });
      document.paths['/v1/marketfront/orders/{orderId}/receipt'] = {
        get: structuredClone(document.paths['/v1/marketfront/orders/{orderId}'].get),
      };
      document.components.schemas.Order.properties.notes = { type: 'string' };
    });
    expect(breakingChanges(current, extended)).toEqual([]);
  });

  it('lets a breaking change through when info.version has a new major', () => {
    const next = changed((document) => {
      delete document.paths['/v1/commerce/stores'].get;
      document.info.version = `${majorOf(current) + 1}.0.0`;
    });
    expect(breakingChanges(current, next)).toEqual([]);
  });
});
