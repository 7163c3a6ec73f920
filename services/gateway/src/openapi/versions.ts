import {
  API_VERSIONS,
  LATEST_API_VERSION,
  documentDown,
  isApiVersion,
  type ApiVersion,
} from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import { referencesIn, withoutUnusedSchemas } from './document.js';

type JsonObject = Record<string, unknown>;

/**
 * The shared headers and examples some operation still refers to: an older version lacks the
 * operations that alone used some (redocly refuses unused components).
 */
function withoutUnusedComponents(document: JsonObject): JsonObject {
  const components = (document.components ?? {}) as Record<string, JsonObject | undefined>;
  const used = referencesIn(
    { ...document, components: { schemas: components.schemas } },
    new Set(),
  );
  const kept = (kind: 'headers' | 'examples') =>
    Object.fromEntries(
      Object.entries(components[kind] ?? {}).filter(([name]) =>
        used.has(`#/components/${kind}/${name}`),
      ),
    );
  return {
    ...document,
    components: { ...components, headers: kept('headers'), examples: kept('examples') },
  };
}

/**
 * The OpenAPI document of `version` (docs/guide/versioning.md#openapi-documents): the newest
 * one, which the routes render, brought down by the change modules of the versions after it.
 */
export function documentInVersion(newest: JsonObject, version: ApiVersion): JsonObject {
  if (version === LATEST_API_VERSION) return newest;
  const older = withoutUnusedComponents(withoutUnusedSchemas(documentDown(version, newest)));
  return { ...older, info: { ...(older.info as JsonObject), version } };
}

/** Each version's document, rendered the first time it is asked for and kept. */
export function versionedDocuments(newest: () => JsonObject): (version: ApiVersion) => JsonObject {
  const documents = new Map<ApiVersion, JsonObject>();
  return (version) => {
    let document = documents.get(version);
    if (!document) {
      document = documentInVersion(newest(), version);
      documents.set(version, document);
    }
    return document;
  };
}

/**
 * The version `GET /openapi.json?version=DATE` asks for: the newest without one; anything but
 * one version (an unknown date, two values) is 400 API_VERSION_INVALID, never echoed.
 */
export function documentVersionOf(query: unknown): ApiVersion {
  const version = (query as { version?: unknown } | undefined)?.version;
  if (version === undefined) return LATEST_API_VERSION;
  if (isApiVersion(version)) return version;
  throw new AppError(
    'API_VERSION_INVALID',
    `version must be one of the API versions: ${API_VERSIONS.join(', ')}`,
  );
}
