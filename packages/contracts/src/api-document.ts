/**
 * Edits of an OpenAPI 3.1 document as the gateway renders it (JSON), for the change modules'
 * `documentDown`: each brings the newer version's document down to the older one's, as
 * `responseDown` does an answer. They edit the document they are given in place: the caller
 * (`documentDown` in api-versions.ts) hands the changes its own copy.
 */

/** An OpenAPI document, or any of its objects, as parsed JSON. */
export type OpenApiObject = Record<string, unknown>;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const COMPONENT_SCHEMA = '#/components/schemas/';

const isObject = (value: unknown): value is OpenApiObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const objectOf = (value: unknown): OpenApiObject => (isObject(value) ? value : {});

/** Every operation of the document's paths, with where it is. */
export function operationsOf(
  document: OpenApiObject,
): { path: string; method: string; operation: OpenApiObject }[] {
  return Object.entries(objectOf(document.paths)).flatMap(([path, item]) =>
    HTTP_METHODS.flatMap((method) => {
      const operation = objectOf(item)[method];
      return isObject(operation) ? [{ path, method, operation }] : [];
    }),
  );
}

/** The document without the operations `operationIds` names (a path left empty goes too). */
export function removeOperations(document: OpenApiObject, operationIds: readonly string[]): void {
  const paths = objectOf(document.paths);
  for (const { path, method, operation } of operationsOf(document)) {
    if (!operationIds.includes(operation.operationId as string)) continue;
    const item = objectOf(paths[path]);
    delete item[method];
    if (!HTTP_METHODS.some((name) => name in item)) delete paths[path];
  }
}

/** The component schema a `$ref` names, when it is one of the document's. */
function referenced(document: OpenApiObject, node: OpenApiObject): OpenApiObject | undefined {
  const ref = node.$ref;
  if (typeof ref !== 'string' || !ref.startsWith(COMPONENT_SCHEMA)) return undefined;
  const schema = objectOf(objectOf(document.components).schemas)[
    ref.slice(COMPONENT_SCHEMA.length)
  ];
  return isObject(schema) ? schema : undefined;
}

const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SUBSCHEMAS = ['items', 'additionalProperties', 'not', 'contains'];

/**
 * `visit` on `schema` and each schema inside it (properties, items, alternatives), the
 * component schemas it refers to included, each once.
 */
export function eachSchemaIn(
  document: OpenApiObject,
  schema: unknown,
  visit: (schema: OpenApiObject) => void,
): void {
  const seen = new Set<OpenApiObject>();
  const pending = [schema];
  while (pending.length > 0) {
    const node = pending.pop();
    if (!isObject(node) || seen.has(node)) continue;
    seen.add(node);
    const target = referenced(document, node);
    if (target) pending.push(target);
    visit(node);
    pending.push(...Object.values(objectOf(node.properties)));
    for (const key of SUBSCHEMA_LISTS) {
      const list: unknown = node[key];
      if (Array.isArray(list)) pending.push(...(list as unknown[]));
    }
    for (const key of SUBSCHEMAS) pending.push(node[key]);
  }
}

/** The media types of the operation's 2xx answers (`response`) or of its body (`request`). */
export function mediaOf(operation: OpenApiObject, part: 'response' | 'request'): OpenApiObject[] {
  const holders =
    part === 'request'
      ? [objectOf(operation.requestBody)]
      : Object.entries(objectOf(operation.responses))
          .filter(([status]) => /^2(\d\d|XX)$/.test(status))
          .map(([, response]) => objectOf(response));
  return holders.flatMap((holder) => Object.values(objectOf(holder.content)).filter(isObject));
}

/**
 * `visit` on every schema of the 2xx answers (`response`) or the body (`request`) of the
 * operations `operationIds` names.
 */
export function eachOperationSchema(
  document: OpenApiObject,
  operationIds: readonly string[],
  part: 'response' | 'request',
  visit: (schema: OpenApiObject) => void,
): void {
  for (const { operation } of operationsOf(document)) {
    if (!operationIds.includes(operation.operationId as string)) continue;
    for (const media of mediaOf(operation, part)) eachSchemaIn(document, media.schema, visit);
  }
}

/** `schema` without the property `name` (from its properties, its required list and its examples). */
export function dropProperty(schema: OpenApiObject, name: string): void {
  if (!isObject(schema.properties) || !(name in schema.properties)) return;
  delete schema.properties[name];
  if (Array.isArray(schema.required)) {
    schema.required = schema.required.filter((required) => required !== name);
  }
  if (Array.isArray(schema.examples)) {
    schema.examples = schema.examples.map((example: unknown) => {
      if (!isObject(example)) return example;
      const { [name]: _dropped, ...rest } = example;
      return rest;
    });
  }
}

/**
 * The examples of a media type (its `example` and each of its `examples`) through `change`;
 * one `change` answers undefined for is dropped.
 */
export function mapMediaExamples(media: OpenApiObject, change: (value: unknown) => unknown): void {
  if ('example' in media) {
    const value = change(media.example);
    if (value === undefined) delete media.example;
    else media.example = value;
  }
  if (!isObject(media.examples)) return;
  for (const [name, example] of Object.entries(media.examples)) {
    if (!isObject(example) || !('value' in example)) continue;
    const value = change(example.value);
    if (value === undefined) delete media.examples[name];
    else example.value = value;
  }
  if (Object.keys(media.examples).length === 0) delete media.examples;
}

/** The enum of `schema` (when it has one) without `values`. */
export function dropEnumValues(schema: unknown, values: readonly string[]): void {
  if (!isObject(schema) || !Array.isArray(schema.enum)) return;
  schema.enum = schema.enum.filter((value) => !values.includes(value as string));
}

/** A property of `schema` that may be null, as it was before: never null. */
export function dropNullAlternative(schema: unknown): void {
  if (!isObject(schema) || !Array.isArray(schema.anyOf)) return;
  const alternatives = schema.anyOf.filter(
    (alternative) => !(isObject(alternative) && alternative.type === 'null'),
  );
  if (alternatives.length !== 1 || !isObject(alternatives[0])) {
    schema.anyOf = alternatives;
    return;
  }
  delete schema.anyOf;
  Object.assign(schema, alternatives[0]);
}
