import { loadConfig, runService } from '@pcp/service-kit';
import {
  createPaymentsService,
  paymentsEnvSchema,
  PAYMENTS_SCHEMA,
  paymentsMigrations,
  type PaymentsDatabase,
} from './app.js';

const config = loadConfig(paymentsEnvSchema);

await runService<PaymentsDatabase>({
  name: 'payments',
  version: '0.1.0',
  defaultOpsPort: 9104,
  database: { schema: PAYMENTS_SCHEMA, migrations: paymentsMigrations },
  create: (deps) => createPaymentsService({ ...deps, config }),
});
