// `npm run generate:client`: renders the OpenAPI document the gateway serves (without
// connecting to anything) into packages/client/openapi.json and generates the client's
// types from it (packages/client/src/generated/openapi.ts). Run it after changing a route;
// the client's drift test fails until both files match the routes.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { documentPath, documentText, typesPath, typesText } from './lib/client-generation.mjs';
import { root, run } from './lib/setup.mjs';

// The document comes from the gateway's build: bring it (and what it imports) up to date.
run(join(root, 'node_modules', '.bin', 'tsc'), ['-b', 'services/gateway']);
const { buildOpenApiDocument } = await import(
  pathToFileURL(join(root, 'services', 'gateway', 'dist', 'app.js')).href
);

const document = await documentText(await buildOpenApiDocument());
const types = await typesText(document);
await writeFile(documentPath, document);
await mkdir(dirname(typesPath), { recursive: true });
await writeFile(typesPath, types);
for (const path of [documentPath, typesPath]) {
  process.stdout.write(`wrote ${relative(root, path)}\n`);
}
