import { loadConfig, runService } from '@pcp/service-kit';
import { createOrderingService } from './app.js';
import { orderingEnvSchema } from './config.js';

const config = loadConfig(orderingEnvSchema);

await runService({
  name: 'ordering',
  version: '0.1.0',
  defaultOpsPort: 9103,
  create: (deps) => createOrderingService({ ...deps, config }),
});
