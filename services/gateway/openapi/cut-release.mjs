// Cut an API release: render the OpenAPI document the gateway serves and keep it as the
// baseline the breaking-change check compares with (services/gateway/test/unit/
// openapi-compatibility.test.ts). Run it after `npm run build`:
//   node services/gateway/openapi/cut-release.mjs
import { buildOpenApiDocument } from '@pcp/gateway';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';

const target = fileURLToPath(new URL('release.json', import.meta.url));
const document = await buildOpenApiDocument();
const options = (await prettier.resolveConfig(target)) ?? {};
await writeFile(
  target,
  await prettier.format(JSON.stringify(document), { ...options, parser: 'json' }),
);
console.log(`${target}: OpenAPI ${document.info.version}`);
