import { runService } from '@pcp/service-kit';
import { createPaymentsService } from './app.js';

await runService({
  name: 'payments',
  version: '0.1.0',
  defaultOpsPort: 9104,
  create: (deps) => createPaymentsService(deps),
});
