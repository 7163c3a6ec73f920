// Cut an API release: render each API version's OpenAPI document, as the gateway serves it at
// /openapi.json?version=DATE, and keep it as the baseline the breaking-change check compares
// that version's document with (services/gateway/test/unit/openapi-compatibility.test.ts,
// docs/operations.md#api-releases). Run it after `npm run build`, once the check passes:
//   node services/gateway/openapi/cut-release.mjs
import { API_VERSIONS } from '@pcp/contracts';
import { buildOpenApiDocument } from '@pcp/gateway';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';

for (const version of API_VERSIONS) {
  const target = fileURLToPath(new URL(`releases/${version}.json`, import.meta.url));
  const document = await buildOpenApiDocument({ version });
  const options = (await prettier.resolveConfig(target)) ?? {};
  await writeFile(
    target,
    await prettier.format(JSON.stringify(document), { ...options, parser: 'json' }),
  );
  console.log(`${target}: API version ${document.info.version}`);
}
