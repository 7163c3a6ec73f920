// `npm run nats:auth`: renders the NATS users and permissions of
// packages/contracts/src/nats-permissions.ts into deploy/nats/values.yaml (the NATS Helm
// chart's values). Run it after changing who calls or publishes what; the drift test fails
// until the file matches.
import { readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { renderValues, valuesPath } from './lib/nats-values.mjs';
import { root, run } from './lib/setup.mjs';

run(join(root, 'node_modules', '.bin', 'tsc'), ['-b', 'packages/contracts']);
const contracts = await import(
  pathToFileURL(join(root, 'packages', 'contracts', 'dist', 'index.js')).href
);
const before = await readFile(valuesPath, 'utf8');
const after = await renderValues(before, contracts);
await writeFile(valuesPath, after);
process.stdout.write(`${before === after ? 'unchanged' : 'wrote'} ${relative(root, valuesPath)}\n`);
