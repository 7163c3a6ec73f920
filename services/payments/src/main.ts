import { platformOpsPorts } from '@pcp/contracts';
import {
  adminCommand,
  createMetrics,
  integerOption,
  loadConfig,
  runService,
} from '@pcp/service-kit';
import {
  createPaymentsService,
  paymentsEnvSchema,
  PAYMENTS_SCHEMA,
  paymentsMigrations,
  type PaymentsDatabase,
} from './app.js';
import { listReconcilerActions, RECONCILER_ACTIONS_LIST_MAX } from './reconciler/reconciler.js';

const config = loadConfig(paymentsEnvSchema);

await runService<PaymentsDatabase>({
  name: 'payments',
  version: '0.1.0',
  defaultOpsPort: platformOpsPorts.payments,
  database: { schema: PAYMENTS_SCHEMA, migrations: paymentsMigrations },
  // Operators' commands: node services/payments/dist/main.js admin <command>
  admin: {
    reconcile: adminCommand({
      usage: '',
      summary: 'reconcile the ledger now: every charge explained, released or reported',
      options: {},
      async run({ db, nc, logger, prefix, config: kit }) {
        // The service's own parts, not serving: the reconciler and the processor it asks.
        const payments = createPaymentsService({
          nc,
          db,
          logger,
          metrics: createMetrics('payments'),
          subjectPrefix: prefix,
          requestTimeoutMs: kit.NATS_REQUEST_TIMEOUT_MS,
          config: { ...config, PAYMENTS_RECONCILE_INTERVAL_MS: 0 },
        });
        try {
          return await payments.reconcile();
        } finally {
          await payments.stop(1_000);
        }
      },
    }),
    'reconciler-actions': adminCommand({
      usage: '[--limit N]',
      summary: `what the reconciler released or withheld on its own, newest first (N ≤ ${RECONCILER_ACTIONS_LIST_MAX})`,
      options: { limit: { type: 'string' } },
      check: (args) =>
        integerOption(args, 'limit', { min: 1, max: RECONCILER_ACTIONS_LIST_MAX }, 50),
      run: ({ db, args: limit }) => listReconcilerActions(db, limit),
    }),
  },
  create: (deps) => createPaymentsService({ ...deps, config }),
});
