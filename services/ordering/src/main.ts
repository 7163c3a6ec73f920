import { deadLetterCommands, loadConfig, outboxCommands, runService } from '@pcp/service-kit';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingMigrations,
  type OrderingDatabase,
} from './app.js';
import { orderingEnvSchema } from './config.js';

const config = loadConfig(orderingEnvSchema);

await runService<OrderingDatabase>({
  name: 'ordering',
  version: '0.1.0',
  defaultOpsPort: 9103,
  jetStream: true,
  database: { schema: ORDERING_SCHEMA, migrations: orderingMigrations },
  // Operators' commands: node services/ordering/dist/main.js admin <command>
  admin: { ...outboxCommands(), ...deadLetterCommands() },
  create: (deps) => createOrderingService({ ...deps, config }),
});
