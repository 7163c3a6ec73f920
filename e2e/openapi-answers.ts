import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Whether an answer is one an OpenAPI document describes: its JSON body against the schema of
 * its operation's status (docs/guide/versioning.md#openapi-documents), checked with Ajv
 * (draft 2020-12, the dialect of OpenAPI 3.1). Each message names where the body differs.
 */
export function answerChecker(document: {
  paths: Record<string, Record<string, { operationId?: string }>>;
}): (operationId: string, status: number, body: unknown) => string[] {
  // OpenAPI adds keywords JSON Schema does not know (example, discriminator...): not strict.
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  // ajv-formats is CommonJS: its plugin is the module's default export.
  addFormats.default(ajv);
  ajv.addSchema(document, 'openapi');
  const escape = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');
  const compiled = new Map<string, ValidateFunction>();
  return (operationId, status, body) => {
    const found = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, operation]) => operation.operationId === operationId)
        .map(([method]) => `#/paths/${escape(path)}/${method}`),
    );
    if (found.length !== 1) return [`the document has no operation ${operationId}`];
    const pointer = `${found[0]}/responses/${status}/content/application~1json/schema`;
    let validate = compiled.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi${pointer}` });
      compiled.set(pointer, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      ({ instancePath, message, params }) =>
        `${operationId} ${status} ${instancePath || '/'}: ${message} ${JSON.stringify(params)}`,
    );
  };
}
