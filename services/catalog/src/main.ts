import { platformOpsPorts } from '@pcp/contracts';
import { deadLetterCommands, loadConfig, outboxCommands, runService } from '@pcp/service-kit';
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
  defaultOpsPort: platformOpsPorts.catalog,
  jetStream: true,
  database: { schema: CATALOG_SCHEMA, migrations: catalogMigrations },
  // Operators' commands: node services/catalog/dist/main.js admin <command>
  admin: { ...outboxCommands(), ...deadLetterCommands() },
  create: (deps) => createCatalogService({ ...deps, config }),
});
