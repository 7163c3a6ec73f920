import { API_DEPRECATIONS, API_VERSION_CHANGES, API_VERSIONS } from '@pcp/contracts';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api.js';
import { headingAnchor, readGuide } from '../../src/docs/guides.js';

// The change registry (packages/contracts/src/api-versions.ts) against what the gateway serves:
// every operation a change names is one of the document's, and the changelog lists every change.

const changes = Object.entries(API_VERSION_CHANGES).flatMap(([version, list]) =>
  list.map((change) => ({ version, change })),
);

let operationIds: Set<string>;

beforeAll(async () => {
  const document = (await buildOpenApiDocument()) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  operationIds = new Set(
    Object.values(document.paths).flatMap((path) =>
      Object.values(path).flatMap((operation) => operation.operationId ?? []),
    ),
  );
});

describe('the change registry', () => {
  it.each(changes.map(({ version, change }) => [`${version} ${change.name}`, change] as const))(
    '%s names operations the API has',
    (_name, change) => {
      const named = [
        ...Object.keys(change.responseDown ?? {}),
        ...Object.keys(change.requestUp ?? {}),
        ...(change.addedOperations ?? []),
      ];
      expect(named.filter((operationId) => !operationIds.has(operationId))).toEqual([]);
    },
  );
});

describe('the changelog (docs/guide/changelog.md)', () => {
  const changelog = readGuide('changelog');

  it('has a section per version, newest first', () => {
    const headings = [...changelog.matchAll(/^## (\S+)$/gm)].map((match) => match[1]);
    expect(headings).toEqual([...API_VERSIONS].reverse());
  });

  it.each(changes.map(({ version, change }) => [version, change.name, change.description]))(
    'lists %s %s with its description, in its version',
    (version, name, description) => {
      const section = changelog.split(/^## /m).find((part) => part.startsWith(`${version}\n`));
      expect(section).toContain(`- \`${name}\`: ${description}`);
    },
  );
});

describe('the deprecation marks (packages/contracts/src/api-deprecations.ts)', () => {
  // A mark of an operation the API lacks would tell no one; one whose link has no heading
  // would send partners to the top of the changelog. Deprecated versions have their heading
  // by the test above.
  it('name operations the API has, each linked to a heading of the changelog', () => {
    const anchors = new Set(
      [...readGuide('changelog').matchAll(/^#{2,3} (.+)$/gm)].map((match) =>
        headingAnchor(match[1]!),
      ),
    );
    const problems = Object.entries(API_DEPRECATIONS.operations).flatMap(([operationId, mark]) => [
      ...(operationIds.has(operationId) ? [] : [`${operationId}: no such operation`]),
      ...(anchors.has(mark.changelogAnchor)
        ? []
        : [`${operationId}: no changelog heading #${mark.changelogAnchor}`]),
    ]);
    expect(problems).toEqual([]);
  });
});
