// `npm run migrate`: bring every service's schema to its latest migration and apply the
// JetStream topology (streams and consumers, which services only check), then exit.
import {
  build,
  ensureDatabase,
  ensureDependencies,
  ensureServers,
  fail,
  onBundledNode,
  root,
  run,
} from '../packages/setup/src/index.mjs';
import { join } from 'node:path';

/** Services that own a database schema, in the order they migrate. */
const migratingServices = ['gateway', 'stores', 'catalog', 'ordering', 'payments'];

try {
  ensureDependencies();
  await onBundledNode();
  await ensureServers();
  await ensureDatabase();
  build();
  for (const service of migratingServices) {
    run(process.execPath, [join(root, 'services', service, 'dist', 'main.js'), 'migrate']);
  }
  run(process.execPath, [
    join(root, 'services', 'catalog', 'dist', 'main.js'),
    'jetstream-topology',
  ]);
} catch (error) {
  fail(error);
}
