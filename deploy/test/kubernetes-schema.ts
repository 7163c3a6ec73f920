/**
 * Strict validation of rendered manifests against the Kubernetes API schemas: types, required
 * fields, enums where the schema has them, and no field the API does not define (a misspelled
 * `livenesProbe` is an error here, as it is for `kubectl apply --validate=strict`).
 *
 * The schemas are vendored in ./schemas (vendor-schemas.mjs says where from): the Kubernetes
 * 1.30 OpenAPI definitions of the built-in kinds the manifests use (1.30 is the oldest release
 * the manifests support, so a field only a later release knows fails here), and the
 * CloudNativePG 1.30.0 `Cluster` CRD's openAPIV3Schema.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';

type Json = Record<string, unknown>;

interface KubernetesSchemas {
  readonly version: string;
  readonly source: string;
  readonly roots: Record<string, string>;
  readonly definitions: Record<string, Json>;
}
interface CrdSchema {
  readonly version: string;
  readonly source: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly schema: Json;
}

const load = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`schemas/${name}`, import.meta.url), 'utf8')) as T;

const KUBERNETES = load<KubernetesSchemas>('kubernetes-1.30.json');
const CNPG_CLUSTER = load<CrdSchema>('cnpg-1.30.0-cluster.json');

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Types the OpenAPI document describes as strings that the API also takes as numbers. */
const NUMBER_OR_STRING = new Set([
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString',
  'io.k8s.apimachinery.pkg.api.resource.Quantity',
]);

/**
 * An OpenAPI schema made strict for ajv: objects with declared properties refuse any other,
 * `x-kubernetes-*` hints become what they mean, formats are dropped (ajv does not know
 * Kubernetes' `int-or-string` or `quantity`; the API server checks those values).
 */
function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict);
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'format' || key.startsWith('x-kubernetes-')) continue;
    out[key] =
      key === 'properties' && isObject(value)
        ? Object.fromEntries(Object.entries(value).map(([name, child]) => [name, strict(child)]))
        : strict(value);
  }
  if (schema['x-kubernetes-int-or-string'] === true) {
    delete out.anyOf;
    out.type = ['integer', 'string'];
  }
  const openEnded = schema['x-kubernetes-preserve-unknown-fields'] === true;
  if (isObject(schema.properties) && schema.additionalProperties === undefined && !openEnded) {
    out.additionalProperties = false;
  }
  return out;
}

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
ajv.addSchema({
  $id: 'kubernetes',
  definitions: Object.fromEntries(
    Object.entries(KUBERNETES.definitions).map(([name, definition]) => [
      name,
      NUMBER_OR_STRING.has(name) ? { type: ['string', 'number'] } : strict(definition),
    ]),
  ),
});
const OBJECT_META = {
  $ref: 'kubernetes#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
};

const validators = new Map<string, ValidateFunction>();
for (const [gvk, definition] of Object.entries(KUBERNETES.roots)) {
  validators.set(gvk, ajv.compile({ $ref: `kubernetes#/definitions/${definition}` }));
}
{
  // A CRD's schema leaves metadata to the API server: validate it as any object's metadata.
  const schema = strict(CNPG_CLUSTER.schema) as Json;
  const properties = schema.properties as Json;
  validators.set(
    `${CNPG_CLUSTER.apiVersion}/${CNPG_CLUSTER.kind}`,
    ajv.compile({ ...schema, properties: { ...properties, metadata: OBJECT_META } }),
  );
}

/** Where the vendored schemas come from, for messages and the README. */
export const SCHEMA_SOURCES = {
  kubernetes: `${KUBERNETES.version} (${KUBERNETES.source})`,
  cloudnativePg: `${CNPG_CLUSTER.version} (${CNPG_CLUSTER.source})`,
} as const;

function describe(error: ErrorObject): string {
  const at = error.instancePath || '/';
  if (error.keyword === 'additionalProperties') {
    const { additionalProperty } = error.params as { additionalProperty: string };
    return `${at}: unknown field "${additionalProperty}"`;
  }
  return `${at}: ${error.message ?? error.keyword}`;
}

/**
 * Problems of one object against its kind's schema; an empty list when it is valid. A kind
 * without a vendored schema is itself a problem, so nothing is left unchecked.
 */
export function schemaErrors(doc: Json): string[] {
  const gvk = `${String(doc.apiVersion)}/${String(doc.kind)}`;
  const validate = validators.get(gvk);
  if (!validate) return [`no schema for ${gvk}: add it to deploy/test/schemas/vendor-schemas.mjs`];
  if (validate(doc)) return [];
  // anyOf/oneOf branches repeat what their members said; keep the specific messages.
  const errors = (validate.errors ?? []).filter((e) => !['anyOf', 'oneOf'].includes(e.keyword));
  return [...new Set(errors.map(describe))];
}
