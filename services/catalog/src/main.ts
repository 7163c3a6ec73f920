import { loadConfig, runService } from '@pcp/service-kit';
import {
  CATALOG_SCHEMA,
  catalogEnvSchema,
  catalogMigrations,
  createCatalogService,
  type CatalogDatabase,
} from './app.js';

const config = loadConfig(catalogEnvSchema);

await runService<CatalogDatabase>({
  name: 'catalog',
  version: '0.1.0',
  defaultOpsPort: 9102,
  database: { schema: CATALOG_SCHEMA, migrations: catalogMigrations },
  create: (deps) => createCatalogService({ ...deps, config }),
});
