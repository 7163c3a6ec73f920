import { Ajv } from 'ajv';
import { z } from 'zod';

/** A GUID as the contracts return it (`guid` lowercases): only such a one passes as it is. */
const LOWERCASE_GUID = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/**
 * A compiled check of a cart request against its contract's JSON Schema as it parses
 * (`io: 'output'`: no key beyond the contract's), with GUIDs lowercase only: a body it accepts is
 * one the zod contract returns unchanged, so the contract's parse (and its NUL scan: such a body
 * holds no string but GUIDs) can be skipped. It refuses more than the contract does; those
 * bodies go through the contract, which accepts or explains them as ever.
 */
export function compileAcceptsAsIs<S extends z.ZodType>(
  schema: S,
): (body: unknown) => body is z.output<S> {
  const jsonSchema = lowercaseGuids(z.toJSONSchema(schema, { io: 'output', target: 'draft-7' }));
  if (typeof jsonSchema !== 'object' || jsonSchema === null) throw new Error('no JSON Schema');
  const ajv = new Ajv({ allErrors: false, validateFormats: false, strict: true });
  const validate = ajv.compile(jsonSchema);
  return (body): body is z.output<S> => validate(body);
}

function lowercaseGuids(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(lowercaseGuids);
  if (typeof node !== 'object' || node === null) return node;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key !== '$schema') copy[key] = lowercaseGuids(value);
  }
  if (copy.format === 'uuid') {
    delete copy.format;
    copy.pattern = LOWERCASE_GUID;
  }
  return copy;
}
