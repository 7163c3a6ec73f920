import fc, { type Arbitrary } from 'fast-check';
import {
  errorStorm,
  hostileHeaderValue,
  hostilePathSegment,
  hostileQueryValue,
  mutatedBody,
  rawHostileBody,
  type RawBody,
} from './hostile.js';
import { arbitraryFor, type JsonSchema } from './schema-arbitrary.js';

/** One operation of the OpenAPI document, as the fuzzer needs it. */
export interface Operation {
  /** `METHOD /path/{param}`, as the document names it. */
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly parameters: readonly Parameter[];
  readonly bodySchema: JsonSchema | undefined;
  /** Whose keys the route is for, from its path. */
  readonly area: 'commerce' | 'distribution';
}

interface Parameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly required: boolean;
  readonly schema: JsonSchema;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, Record<string, unknown>>;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

/** Every operation of the document (hidden routes are not in it, so not here). */
export function operationsOf(document: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, raw] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const operation = raw as {
        parameters?: (Parameter | { $ref: string })[];
        requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
      };
      const parameters = (operation.parameters ?? []).map(
        (parameter) =>
          ('$ref' in parameter ? resolvePointer(document, parameter.$ref) : parameter) as Parameter,
      );
      const content = operation.requestBody?.content;
      if (content && !content['application/json']) {
        throw new Error(`fuzz: ${method} ${path} takes a body that is not JSON`);
      }
      operations.push({
        id: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        parameters,
        bodySchema: content?.['application/json']?.schema,
        area: path.startsWith('/v1/commerce/') ? 'commerce' : 'distribution',
      });
    }
  }
  return operations;
}

function resolvePointer(document: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`fuzz: external $ref ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, token) => {
      const next = (node as Record<string, unknown> | undefined)?.[token];
      if (next === undefined) throw new Error(`fuzz: dangling $ref ${ref}`);
      return next;
    }, document);
}

/** A request as it goes on the wire. */
export interface FuzzRequest {
  readonly method: string;
  /** The path and query, already encoded (possibly badly, on purpose). */
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: RawBody | undefined;
  /** Which key it carried: its own area's, the other area's, a made-up one or none. */
  readonly key: KeyChoice;
}

export type KeyChoice = 'own' | 'other' | 'none' | 'malformed' | 'unknown';

export interface RequestContext {
  /** Real ids the platform knows, by property or parameter name (storeId, itemId…). */
  readonly known: Readonly<Record<string, readonly string[]>>;
  readonly bodyLimit: number;
  readonly keys: { commerce: string; distribution: string };
}

/** A made-up key that has the right form (so the lookup runs) and one that does not. */
const UNKNOWN_KEY = `pcp_${'0'.repeat(16)}_${'A'.repeat(43)}`;

/**
 * Requests for `operation`: valid-shaped from its schemas, then mutated beyond them in
 * every part (path, query, headers, body, key).
 */
export function requestsFor(
  document: OpenApiDocument,
  operation: Operation,
  context: RequestContext,
): Arbitrary<FuzzRequest> {
  const resolveRef = (ref: string) => resolvePointer(document, ref) as JsonSchema;
  const valueOf = (name: string, schema: JsonSchema): Arbitrary<unknown> => {
    const generated = arbitraryFor(schema, resolveRef, 0, context.known);
    const known = context.known[name];
    return known && known.length > 0
      ? fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...known) },
          { weight: 1, arbitrary: generated },
        )
      : generated;
  };

  const pathParts = operation.parameters
    .filter((parameter) => parameter.in === 'path')
    .map((parameter) =>
      fc
        .oneof(
          {
            weight: 3,
            arbitrary: valueOf(parameter.name, parameter.schema).map((value) =>
              encodeURIComponent(String(value)),
            ),
          },
          { weight: 2, arbitrary: hostilePathSegment },
        )
        .map((segment) => [parameter.name, segment] as const),
    );

  const queryParts = operation.parameters
    .filter((parameter) => parameter.in === 'query')
    .map((parameter) =>
      fc.oneof(
        { weight: parameter.required ? 1 : 2, arbitrary: fc.constant<string[]>([]) },
        {
          weight: 3,
          arbitrary: valueOf(parameter.name, parameter.schema).map((value) => [
            `${parameter.name}=${encodeURIComponent(String(value))}`,
          ]),
        },
        { weight: 2, arbitrary: hostileQueryValue.map((value) => [`${parameter.name}=${value}`]) },
        // Given twice, or in the bracket form some frameworks turn into arrays or objects.
        {
          weight: 1,
          arbitrary: fc
            .tuple(hostileQueryValue, hostileQueryValue)
            .map(([a, b]) => [`${parameter.name}=${a}`, `${parameter.name}=${b}`]),
        },
        {
          weight: 1,
          arbitrary: hostileQueryValue.map((value) => [
            `${parameter.name}[]=${value}`,
            `${parameter.name}[__proto__]=1`,
          ]),
        },
      ),
    );
  const extraQuery = fc.oneof(
    { weight: 4, arbitrary: fc.constant<string[]>([]) },
    { weight: 1, arbitrary: fc.constant(['__proto__[x]=1', 'constructor=1']) },
    { weight: 1, arbitrary: hostileQueryValue.map((value) => [`${value}=${value}`]) },
  );

  const headerParts = operation.parameters
    .filter((parameter) => parameter.in === 'header')
    .map((parameter) =>
      fc
        .oneof(
          { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
          {
            weight: 3,
            // fetch sends Latin-1 header values only; the rest of a generated value stays.
            arbitrary: valueOf(parameter.name, parameter.schema).map((value) =>
              String(value).replace(/[^\x20-\x7e\xa0-\xff]/g, ''),
            ),
          },
          { weight: 2, arbitrary: hostileHeaderValue },
        )
        .map((value) => [parameter.name, value] as const),
    );

  const takesBody = operation.method !== 'GET';
  const body: Arbitrary<RawBody | undefined> = operation.bodySchema
    ? (() => {
        const valid = valueOf('', operation.bodySchema);
        return fc.oneof(
          { weight: 4, arbitrary: valid.map((value) => JSON.stringify(value)) },
          { weight: 6, arbitrary: mutatedBody(valid, context.bodyLimit) },
          { weight: 1, arbitrary: errorStorm(valid) },
          { weight: 2, arbitrary: rawHostileBody(context.bodyLimit) },
          { weight: 1, arbitrary: fc.constant(undefined) },
        );
      })()
    : takesBody
      ? fc.oneof(
          { weight: 3, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: rawHostileBody(context.bodyLimit) },
        )
      : fc.constant(undefined);

  const contentType = fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'application/json; charset=utf-8',
        'application/json; charset=utf-16',
        'APPLICATION/JSON',
        'application/problem+json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        '',
        'application/json, text/html',
        `application/json; ${'a=b; '.repeat(200)}`,
      ),
    },
  );

  const key = fc.oneof(
    { weight: 6, arbitrary: fc.constant<KeyChoice>('own') },
    { weight: 1, arbitrary: fc.constantFrom<KeyChoice>('other', 'none', 'malformed', 'unknown') },
  );

  return fc
    .record({
      path: fc.tuple(...pathParts),
      query: fc.tuple(...queryParts, extraQuery),
      headers: fc.tuple(...headerParts),
      body,
      contentType,
      key,
      requestId: fc.option(hostileHeaderValue, { nil: undefined }),
    })
    .map((parts): FuzzRequest => {
      let path = operation.path;
      for (const [name, segment] of parts.path) path = path.replace(`{${name}}`, segment);
      const query = parts.query.flat();
      const headers: Record<string, string> = {};
      for (const [name, value] of parts.headers) if (value !== undefined) headers[name] = value;
      if (parts.requestId !== undefined) headers['x-request-id'] = parts.requestId;
      const keys = context.keys;
      const other = operation.area === 'commerce' ? keys.distribution : keys.commerce;
      const own = operation.area === 'commerce' ? keys.commerce : keys.distribution;
      const authorization = {
        own: `Bearer ${own}`,
        other: `Bearer ${other}`,
        none: undefined,
        malformed: `Bearer ${own.slice(0, -3)}`,
        unknown: `Bearer ${UNKNOWN_KEY}`,
      }[parts.key];
      if (authorization) headers.authorization = authorization;
      if (parts.body !== undefined && parts.contentType !== '') {
        headers['content-type'] = parts.contentType;
      }
      return {
        method: operation.method,
        url: query.length > 0 ? `${path}?${query.join('&')}` : path,
        headers,
        body: takesBody ? parts.body : undefined,
        key: parts.key,
      };
    });
}
