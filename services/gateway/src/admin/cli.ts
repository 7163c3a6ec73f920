import {
  baseEnvSchema,
  connectNats,
  createDatabase,
  createLogger,
  loadConfig,
  migrateToLatest,
  natsCredentials,
  natsTls,
} from '@pcp/service-kit';
import { parseArgs } from 'node:util';
import {
  authInvalidationSubject,
  GATEWAY_SCHEMA,
  gatewayMigrations,
  type GatewayDatabase,
} from '../app.js';
import type { RateLimitOverrides } from '../db/partner.table.js';
import {
  AdminError,
  createKey,
  createPartner,
  listPartners,
  revokeKey,
  setRateLimits,
} from './partner-admin.js';

const usage = `Usage: npm run admin -- <command> [options]
  create-partner --kind commerce|distribution --name NAME [--payment-types CARD,PAY_AT_STORE]
  create-key --partner PARTNER_ID
  revoke-key --key KEY_ID_OR_KEY
  list-partners
  set-rate-limits --partner PARTNER_ID [--reads N] [--writes N] [--discovery N]
Each command prints its result as JSON on the last line of stdout.`;

const config = loadConfig(baseEnvSchema);
const [command, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: {
    kind: { type: 'string' },
    name: { type: 'string' },
    'payment-types': { type: 'string' },
    partner: { type: 'string' },
    key: { type: 'string' },
    reads: { type: 'string' },
    writes: { type: 'string' },
    discovery: { type: 'string' },
  },
  strict: true,
});

function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new AdminError(`--${name} is required`);
  return value;
}

/** Tell running gateways to drop cached keys of this partner; they also expire on their own. */
async function announceChange(target: { partnerId: string }) {
  const logger = createLogger('admin', 'silent');
  try {
    const nc = await connectNats({
      url: config.NATS_URL,
      name: 'admin',
      logger,
      credentials: natsCredentials(config),
      tls: natsTls(config),
    });
    nc.publish(authInvalidationSubject(config.NATS_SUBJECT_PREFIX), JSON.stringify(target));
    await nc.drain();
  } catch {
    process.stderr.write(
      'warning: NATS unreachable; gateways pick the change up when their cache expires\n',
    );
  }
}

const db = createDatabase<GatewayDatabase>({
  url: config.DATABASE_URL,
  schema: GATEWAY_SCHEMA,
  maxConnections: 2,
  applicationName: 'admin',
});
try {
  await migrateToLatest(db, GATEWAY_SCHEMA, gatewayMigrations);
  let result: unknown;
  switch (command) {
    case 'create-partner':
      result = await createPartner(db, {
        kind: required('kind'),
        name: required('name'),
        ...(values['payment-types'] ? { paymentTypes: values['payment-types'].split(',') } : {}),
      });
      break;
    case 'create-key':
      result = await createKey(db, required('partner'));
      break;
    case 'revoke-key': {
      const revoked = await revokeKey(db, required('key'));
      await announceChange({ partnerId: revoked.partnerId });
      result = revoked;
      break;
    }
    case 'list-partners':
      result = await listPartners(db);
      break;
    case 'set-rate-limits': {
      const limits: RateLimitOverrides = {};
      for (const rateClass of ['reads', 'writes', 'discovery'] as const) {
        const value = values[rateClass];
        if (value !== undefined) limits[rateClass] = Number(value);
      }
      if (Object.keys(limits).length === 0)
        throw new AdminError('give --reads, --writes or --discovery');
      const partnerId = required('partner');
      result = await setRateLimits(db, partnerId, limits);
      await announceChange({ partnerId });
      break;
    }
    default:
      throw new AdminError(command ? `unknown command ${command}\n${usage}` : usage);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof AdminError ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await db.destroy();
}
