import fc, { type Arbitrary } from 'fast-check';

/** The subset of JSON Schema (draft 2020-12, as zod renders it) the gateway's document uses. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  not?: JsonSchema;
  $ref?: string;
  [keyword: string]: unknown;
}

/** Keywords that only describe; anything else unknown fails the build of an arbitrary. */
const ANNOTATIONS = new Set([
  'description',
  'examples',
  'example',
  'default',
  'title',
  'additionalProperties',
  'deprecated',
  'readOnly',
  'writeOnly',
]);
const HANDLED = new Set([
  'type',
  'properties',
  'required',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'pattern',
  'format',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'not',
  '$ref',
]);

/** Arrays of valid-shaped values stay short: the hostile sizes come from the mutators. */
const MAX_GENERATED_ITEMS = 3;
/** Recursive schemas ($ref cycles, nested modifier groups) stop growing here. */
const MAX_DEPTH = 4;

/**
 * Values valid against `schema`, as far as JSON Schema can say (refinements beyond it, such
 * as "the store's currency", are the gateway's to refuse); `known` values are preferred for
 * the properties they name. Throws on a keyword it does not understand, so a new kind of
 * contract fails the fuzz suite instead of going untested.
 */
export function arbitraryFor(
  schema: JsonSchema,
  resolveRef: (ref: string) => JsonSchema,
  depth = 0,
  known: Readonly<Record<string, readonly string[]>> = {},
): Arbitrary<unknown> {
  for (const keyword of Object.keys(schema)) {
    if (!HANDLED.has(keyword) && !ANNOTATIONS.has(keyword)) {
      throw new Error(`fuzz: unsupported JSON Schema keyword "${keyword}"`);
    }
  }
  if (schema.$ref) return arbitraryFor(resolveRef(schema.$ref), resolveRef, depth, known);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    // Past the depth, prefer the alternatives that end the recursion (null, scalars).
    const usable =
      depth >= MAX_DEPTH ? alternatives.filter((option) => option.type !== 'object') : [];
    const options = usable.length > 0 ? usable : alternatives;
    return fc.oneof(...options.map((option) => arbitraryFor(option, resolveRef, depth + 1, known)));
  }
  if (schema.not) return fc.constant(undefined);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object':
      return objectArbitrary(schema, resolveRef, depth, known);
    case 'array': {
      const min = schema.minItems ?? 0;
      if (!schema.items) return fc.constant([]);
      const max = depth >= MAX_DEPTH ? min : Math.max(min, MAX_GENERATED_ITEMS);
      return fc.array(arbitraryFor(schema.items, resolveRef, depth + 1, known), {
        minLength: min,
        maxLength: Math.min(max, schema.maxItems ?? max),
      });
    }
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1_000_000, Number.MIN_SAFE_INTEGER),
        max: Math.min(schema.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER),
      });
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1_000_000,
        max: schema.maximum ?? 1_000_000,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case undefined:
      return fc.jsonValue({ maxDepth: 2 });
    default:
      throw new Error(`fuzz: unsupported JSON Schema type "${String(type)}"`);
  }
}

function objectArbitrary(
  schema: JsonSchema,
  resolveRef: (ref: string) => JsonSchema,
  depth: number,
  known: Readonly<Record<string, readonly string[]>>,
): Arbitrary<unknown> {
  const entries = Object.entries(schema.properties ?? {}).filter(
    ([, property]) => property.not === undefined,
  );
  const required = new Set(schema.required ?? []);
  const shape: Record<string, Arbitrary<unknown>> = {};
  for (const [key, property] of entries) {
    const generated = arbitraryFor(property, resolveRef, depth + 1, known);
    // Real ids (the seeded store, its items) under their property names reach the handlers'
    // work instead of stopping at "not found".
    const values = property.type === 'string' ? known[key] : undefined;
    shape[key] =
      values && values.length > 0
        ? fc.oneof(
            { weight: 3, arbitrary: fc.constantFrom(...values) },
            { weight: 1, arbitrary: generated },
          )
        : generated;
  }
  return fc.record(shape, {
    requiredKeys: entries.map(([key]) => key).filter((key) => required.has(key)),
  });
}

function stringArbitrary(schema: JsonSchema): Arbitrary<string> {
  const { minLength = 0, maxLength = 64 } = schema;
  const fits = (value: string) => value.length >= minLength && value.length <= maxLength;
  switch (schema.format) {
    case 'uuid':
      return fc.uuid();
    case 'date-time':
      return fc
        .date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true })
        .map((date) => date.toISOString());
    case 'uri':
      return fc.webUrl().filter(fits);
    case 'email':
      return fc.emailAddress().filter(fits);
    default:
      break;
  }
  if (schema.pattern) {
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .map((value) => value.slice(0, maxLength))
      .filter((value) => fits(value) && new RegExp(schema.pattern!).test(value));
  }
  return fc.string({ minLength, maxLength: Math.min(maxLength, 64), unit: 'grapheme' });
}
