import { API_VERSIONS, LATEST_API_VERSION, type ApiVersion } from '@pcp/contracts';
import { apiCompare } from 'api-smart-diff';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api.js';

/**
 * The breaking-change check: each API version's document, as the gateway renders it now, must
 * not break clients written against that version's last release
 * (services/gateway/openapi/releases/<version>.json). Within a version the API only grows; a
 * breaking change is a new dated version, whose change modules bring the newest document down
 * to each older one (docs/guide/versioning.md). So there is no escape by a new major: a
 * version's number is its date, and its partners are pinned to it. api-smart-diff classifies
 * each difference of two OpenAPI 3.1 documents (a removed path, operation, response status or
 * property, a new required parameter or property, a narrowed type or enum, a changed content
 * type... are breaking); Atlassian's openapi-diff refuses 3.1 documents.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- OpenAPI documents as rendered
type Document = any;

const releasesPath = join(import.meta.dirname, '..', '..', 'openapi', 'releases');

/**
 * api-smart-diff counts any change of the security schemes as breaking; a new one is another
 * way to authenticate (the console's session cookie), which no client of the release needs.
 */
const isNewSecurityScheme = (diff: { action: string; path: readonly unknown[] }) =>
  diff.action === 'add' && diff.path[0] === 'components' && diff.path[1] === 'securitySchemes';

/** The changes of `current` that break clients of `release`, each as a readable line. */
function breakingChanges(release: Document, current: Document): string[] {
  return apiCompare(release, current)
    .diffs.filter((diff) => diff.type === 'breaking' && !isNewSecurityScheme(diff))
    .map((diff) => `${diff.description ?? diff.action} at /${diff.path.join('/')}`);
}

const releases = new Map<ApiVersion, Document>();
const documents = new Map<ApiVersion, Document>();
let current: Document;

beforeAll(async () => {
  for (const version of API_VERSIONS) {
    documents.set(version, await buildOpenApiDocument({ version }));
    const path = join(releasesPath, `${version}.json`);
    releases.set(version, JSON.parse(await readFile(path, 'utf8').catch(() => 'null')));
  }
  current = documents.get(LATEST_API_VERSION);
});

describe('each version’s OpenAPI document against its last release', () => {
  it('has a release of every version, and of versions only', async () => {
    // A new version's first release: `node services/gateway/openapi/cut-release.mjs`.
    expect((await readdir(releasesPath)).toSorted()).toEqual(
      API_VERSIONS.map((version) => `${version}.json`),
    );
    for (const version of API_VERSIONS) expect(releases.get(version)?.info.version).toBe(version);
  });

  it.each(API_VERSIONS.map((version) => [version]))(
    '%s breaks no client of its release',
    (version) => {
      // To break one: add a version, with a change module that brings the document down to
      // this one (docs/operations.md#adding-a-version).
      expect(breakingChanges(releases.get(version), documents.get(version))).toEqual([]);
    },
  );
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

  it('catches a change module that stops bringing a change down in an older version', () => {
    // As if store-busy-status stopped removing busy from 2026-11-01's store answers.
    const older = documents.get('2026-11-01');
    const leaked = structuredClone(older);
    const status =
      leaked.paths['/v1/commerce/stores/{storeId}/status'].get.responses['200'].content[
        'application/json'
      ].schema.properties.status;
    status.enum.push('busy');
    expect(breakingChanges(older, leaked)).toEqual([expect.stringContaining('status')]);
  });
});
