// `npm run nats:auth`: renders the NATS users and permissions of
// packages/contracts/src/nats-permissions.ts into deploy/nats/values.yaml (the NATS Helm
// chart's values). Run it after changing who calls or publishes what; the drift test
// (e2e/nats-permissions.test.ts) fails until the file matches.
import { readFile, writeFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { renderValues, valuesPath } from './values.js';

const before = await readFile(valuesPath, 'utf8');
const after = await renderValues(before);
await writeFile(valuesPath, after);
process.stdout.write(
  `${before === after ? 'unchanged' : 'wrote'} ${relative(process.cwd(), valuesPath)}\n`,
);
