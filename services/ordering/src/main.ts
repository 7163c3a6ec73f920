import { platformOpsPorts } from '@pcp/contracts';
import {
  adminCommand,
  deadLetterCommands,
  keyringFromEnv,
  loadConfig,
  outboxCommands,
  runService,
} from '@pcp/service-kit';
import {
  createOrderingService,
  rewrapWebhookSecrets,
  ORDERING_SCHEMA,
  orderingMigrations,
  type OrderingDatabase,
} from './app.js';
import { orderingEnvSchema } from './config.js';

const config = loadConfig(orderingEnvSchema);
// Read at start, so production without SECRETS_KEYS refuses to start.
const keyring = keyringFromEnv();

await runService<OrderingDatabase>({
  name: 'ordering',
  version: '0.1.0',
  defaultOpsPort: platformOpsPorts.ordering,
  jetStream: true,
  database: { schema: ORDERING_SCHEMA, migrations: orderingMigrations },
  // Operators' commands: node services/ordering/dist/main.js admin <command>
  admin: {
    ...outboxCommands(),
    ...deadLetterCommands(),
    'rewrap-secrets': adminCommand({
      usage: '',
      summary: 're-wrap every stored secret with the first key of SECRETS_KEYS',
      options: {},
      run: ({ db }) => rewrapWebhookSecrets(db, keyring),
    }),
  },
  create: (deps) => createOrderingService({ ...deps, config, keyring }),
});
