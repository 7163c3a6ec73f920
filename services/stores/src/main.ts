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
  createStoresService,
  rewrapSubmissionSecrets,
  storesEnvSchema,
  STORES_SCHEMA,
  storesMigrations,
  type StoresDatabase,
} from './app.js';

const config = loadConfig(storesEnvSchema);
// Read at start, so production without SECRETS_KEYS refuses to start.
const keyring = keyringFromEnv();

await runService<StoresDatabase>({
  name: 'stores',
  version: '0.1.0',
  defaultOpsPort: platformOpsPorts.stores,
  jetStream: true,
  database: { schema: STORES_SCHEMA, migrations: storesMigrations },
  create: (deps) => createStoresService({ ...deps, config, keyring }),
  // Operators' commands: node services/stores/dist/main.js admin <command>
  admin: {
    // Store events leave through an outbox (docs/operations.md#admin-commands).
    ...outboxCommands(),
    'rewrap-secrets': adminCommand({
      usage: '[--rotate-data-keys]',
      summary:
        're-wrap every stored secret with the first key of SECRETS_KEYS (and re-seal it under a fresh data key)',
      options: { 'rotate-data-keys': { type: 'boolean' } },
      run: ({ db, args }) =>
        rewrapSubmissionSecrets(db, keyring, { rotateDataKey: args['rotate-data-keys'] === true }),
    }),
    // Ordering's store-event recorder dead-letters stores' events; only stores may publish them.
    ...deadLetterCommands(),
  },
});
