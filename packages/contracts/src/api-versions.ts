import { z } from 'zod';
import { changes20261201 } from './api-changes-2026-12-01.js';
import {
  mapMediaExamples,
  mediaOf,
  operationsOf,
  removeOperations,
  type OpenApiObject,
} from './api-document.js';
import type {
  ApiVersionChange,
  JsonValue,
  RequestUp,
  VersionedEvent,
} from './api-version-change.js';
import {
  API_VERSIONS,
  apiVersion,
  compareApiVersions,
  type ApiVersion,
} from './api-version-list.js';
import type { ProblemDetail } from './common.js';

export * from './api-version-list.js';
export type { OpenApiObject } from './api-document.js';
export type {
  ApiVersionChange,
  JsonValue,
  RequestUp,
  VersionedEvent,
} from './api-version-change.js';

/** Body of `POST /v1/{commerce|marketfront}/api-version`: the version to move the pin to. */
export const apiVersionChangeInput = z
  .strictObject({
    version: apiVersion.describe(
      'The version to pin your partner to: yours or a newer one (never an older one)',
    ),
  })
  .meta({ id: 'ApiVersionChangeInput', examples: [{ version: '2026-12-01' }] });
export type ApiVersionChangeInput = z.infer<typeof apiVersionChangeInput>;

/** The answer of a pin's change: the pin now, and the one it replaced (equal when unchanged). */
export const apiVersionChangeResult = z
  .object({
    version: apiVersion.describe('The version your partner is pinned to now'),
    previousVersion: apiVersion.describe('The version it was pinned to before this request'),
  })
  .meta({
    id: 'ApiVersionChangeResult',
    examples: [{ version: '2026-12-01', previousVersion: '2026-11-01' }],
  });
export type ApiVersionChangeResult = z.infer<typeof apiVersionChangeResult>;

/** A partner's pin and what it may move to (`GET /v1/{commerce|marketfront}/api-version`). */
export const apiVersionPin = z
  .object({
    apiVersion: apiVersion.describe(
      'The version your partner is pinned to: your requests without PCP-Version use it',
    ),
    latestVersion: apiVersion.describe('The newest version'),
    newerVersions: z
      .array(apiVersion)
      .describe('The versions after your pin, oldest first: what you may upgrade to'),
    changes: z
      .array(
        z.object({
          version: apiVersion.describe('The version that made the change'),
          name: z.string().describe("The change's name: its anchor in the changelog"),
          description: z.string().describe('What changed, in one line'),
        }),
      )
      .describe(
        'What upgrading to the newest version changes for you: the changes of each version ' +
          'after your pin, oldest version first (docs/guide/changelog.md)',
      ),
  })
  .meta({
    id: 'ApiVersionPin',
    examples: [
      {
        apiVersion: '2026-11-01',
        latestVersion: '2026-12-01',
        newerVersions: ['2026-12-01'],
        changes: [
          {
            version: '2026-12-01',
            name: 'order-accept-by',
            description:
              'Orders carry acceptBy, when a pending order is cancelled if its store has not accepted it; before, orders have no acceptBy.',
          },
        ],
      },
    ],
  });
export type ApiVersionPin = z.infer<typeof apiVersionPin>;

/** The versions after `version`, oldest first. */
export function apiVersionsAfter(version: ApiVersion): ApiVersion[] {
  return API_VERSIONS.filter((later) => compareApiVersions(later, version) > 0);
}

/**
 * Each version's changes against the version before it (docs/guide/changelog.md), in one
 * place: the first version has none. The gateway translates with them at the edge.
 */
export const API_VERSION_CHANGES: Readonly<Record<ApiVersion, readonly ApiVersionChange[]>> = {
  '2026-11-01': [],
  '2026-12-01': changes20261201,
};

/** The changes between `version` and the newest, newest version first: a response walks down them. */
function changesAfter(version: ApiVersion): ApiVersionChange[] {
  return API_VERSIONS.filter((later) => later > version)
    .reverse()
    .flatMap((later) => [...API_VERSION_CHANGES[later]].reverse());
}

const changesAfterVersion = new Map(
  API_VERSIONS.map((version) => [version, changesAfter(version)]),
);
const changesDown = (version: ApiVersion) => changesAfterVersion.get(version) ?? [];

/** Whether `operationId` exists in `version` (an operation added later answers 404 there). */
export function operationExistsIn(version: ApiVersion, operationId: string): boolean {
  return !changesDown(version).some((change) => change.addedOperations?.includes(operationId));
}

/** Whether an answer or request of `operationId` in `version` needs translating. */
export function translatesOperation(version: ApiVersion, operationId: string): boolean {
  return changesDown(version).some(
    (change) =>
      change.responseDown?.[operationId] !== undefined ||
      change.requestUp?.[operationId] !== undefined,
  );
}

/** A 2xx answer of `operationId`, as the newest code wrote it, brought down to `version`. */
export function responseDown(version: ApiVersion, operationId: string, body: JsonValue): JsonValue {
  let current = body;
  for (const change of changesDown(version)) {
    const down = change.responseDown?.[operationId];
    if (down) current = down(current);
  }
  return current;
}

/** A ProblemDetail, as the newest code wrote it, brought down to `version`. */
export function problemDown(
  version: ApiVersion,
  operationId: string | undefined,
  problem: ProblemDetail,
): ProblemDetail {
  let current = problem;
  for (const change of changesDown(version)) {
    if (change.problemDown) current = change.problemDown(current, operationId);
  }
  return current;
}

/**
 * The steps that bring a request body of `operationId` in `version` up to the newest, oldest
 * first: each older schema validates before its `up` runs.
 */
export function requestUpSteps(version: ApiVersion, operationId: string): RequestUp[] {
  return changesDown(version)
    .toReversed()
    .flatMap((change) => {
      const step = change.requestUp?.[operationId];
      return step ? [step] : [];
    });
}

/**
 * A webhook event, as the newest code writes it, rendered in `version`; undefined when that
 * version does not know it (then it is not delivered).
 */
export function eventDown(version: ApiVersion, event: VersionedEvent): VersionedEvent | undefined {
  let current: VersionedEvent | undefined = event;
  for (const change of changesDown(version)) {
    if (current === undefined) return undefined;
    if (change.eventDown) current = change.eventDown(current);
  }
  return current;
}

/** The changes of every version after `version`, oldest version first, as the changelog lists them. */
export function apiVersionChangesAfter(
  version: ApiVersion,
): { version: ApiVersion; name: string; description: string }[] {
  return apiVersionsAfter(version).flatMap((later) =>
    API_VERSION_CHANGES[later].map(({ name, description }) => ({
      version: later,
      name,
      description,
    })),
  );
}

/** The examples of a 2xx media type, its schema's (a component's when it refers to one) included. */
function bringExamplesDown(
  document: OpenApiObject,
  media: OpenApiObject,
  down: (body: JsonValue) => JsonValue,
): void {
  mapMediaExamples(media, down);
  let schema = media.schema as OpenApiObject | undefined;
  const ref = schema?.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
    const components = (document.components ?? {}) as { schemas?: Record<string, OpenApiObject> };
    schema = components.schemas?.[ref.slice('#/components/schemas/'.length)];
  }
  if (schema && Array.isArray(schema.examples)) {
    // Two examples may read the same once brought down (busy and online): each is kept once.
    const texts = new Set(schema.examples.map((example) => JSON.stringify(down(example))));
    schema.examples = [...texts].map((text) => JSON.parse(text) as JsonValue);
  }
}

/**
 * The newest version's OpenAPI document brought down to `version` (a new object; `document` is
 * left as it is): each change after it, newest first, removes the operations it added, edits
 * the schemas it changed (`documentDown`), brings down the examples of the answers it
 * translates with the same functions as the answers, and drops the request examples the older
 * version's request schema refuses. The caller drops the component schemas
 * nothing refers to any more and names the version in `info.version`.
 */
export function documentDown(version: ApiVersion, document: OpenApiObject): OpenApiObject {
  const older = structuredClone(document);
  for (const change of changesDown(version)) {
    if (change.addedOperations) removeOperations(older, change.addedOperations);
    change.documentDown?.(older);
    for (const { operation } of operationsOf(older)) {
      const down = change.responseDown?.[operation.operationId as string];
      if (down) {
        for (const media of mediaOf(operation, 'response')) bringExamplesDown(older, media, down);
      }
      const schema = change.requestUp?.[operation.operationId as string]?.schema;
      if (schema) {
        for (const media of mediaOf(operation, 'request')) {
          mapMediaExamples(media, (body) => (schema.safeParse(body).success ? body : undefined));
        }
      }
    }
  }
  return older;
}
