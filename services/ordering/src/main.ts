import { platformOpsPorts } from '@pcp/contracts';
import {
  adminCommand,
  deadLetterCommands,
  integerOption,
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
import { listOwedRefunds, OWED_REFUNDS_LIST_MAX } from './lifecycle/order-refunds.js';

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
      usage: '[--rotate-data-keys]',
      summary:
        're-wrap every stored secret with the first key of SECRETS_KEYS (and re-seal it under a fresh data key)',
      options: { 'rotate-data-keys': { type: 'boolean' } },
      run: ({ db, args }) =>
        rewrapWebhookSecrets(db, keyring, { rotateDataKey: args['rotate-data-keys'] === true }),
    }),
    'refunds-owed': adminCommand({
      usage: '[--limit N]',
      summary: `refunds cancels owe and payments has not made, raised ones first (N ≤ ${OWED_REFUNDS_LIST_MAX})`,
      options: { limit: { type: 'string' } },
      check: (args) => integerOption(args, 'limit', { min: 1, max: OWED_REFUNDS_LIST_MAX }, 50),
      run: ({ db, args: limit }) => listOwedRefunds(db, limit),
    }),
  },
  create: (deps) => createOrderingService({ ...deps, config, keyring }),
});
