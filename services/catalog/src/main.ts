import { runService } from '@pcp/service-kit';
import { createCatalogService } from './app.js';

await runService({
  name: 'catalog',
  version: '0.1.0',
  defaultOpsPort: 9102,
  create: (deps) => createCatalogService(deps),
});
