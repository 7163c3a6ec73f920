import { runService } from '@pcp/service-kit';
import { createOrderingService } from './app.js';

await runService({
  name: 'ordering',
  version: '0.1.0',
  defaultOpsPort: 9103,
  create: (deps) => createOrderingService(deps),
});
