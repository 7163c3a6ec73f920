// `npm run generate:client`: renders the OpenAPI document the gateway serves (without
// connecting to anything) into packages/client/openapi.json and generates the client's
// types from it (packages/client/src/generated/openapi.ts). Run it after changing a route;
// the client's drift test (test/generated-drift.test.ts) fails until both files match.
import { buildOpenApiDocument } from '@pcp/gateway';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, relative } from 'node:path';
import { documentPath, documentText, typesPath, typesText } from './client-generation.js';

const document = await documentText(await buildOpenApiDocument());
const types = await typesText(document);
await writeFile(documentPath, document);
await mkdir(dirname(typesPath), { recursive: true });
await writeFile(typesPath, types);
for (const path of [documentPath, typesPath]) {
  process.stdout.write(`wrote ${relative(process.cwd(), path)}\n`);
}
