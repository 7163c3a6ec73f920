import { loadConfig, runService } from '@pcp/service-kit';
import {
  createStoresService,
  storesEnvSchema,
  STORES_SCHEMA,
  storesMigrations,
  type StoresDatabase,
} from './app.js';

const config = loadConfig(storesEnvSchema);

await runService<StoresDatabase>({
  name: 'stores',
  version: '0.1.0',
  defaultOpsPort: 9101,
  jetStream: true,
  database: { schema: STORES_SCHEMA, migrations: storesMigrations },
  create: (deps) => createStoresService({ ...deps, config }),
});
