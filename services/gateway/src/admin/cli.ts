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
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { authInvalidationSubject } from '@pcp/contracts';
import { GATEWAY_SCHEMA, gatewayMigrations, type GatewayDatabase } from '../app.js';
import type { RateLimitOverrides } from '../db/partner.table.js';
import {
  AdminError,
  apiVersionUsage,
  createKey,
  createPartner,
  keyIdOf,
  listPartners,
  revokeKey,
  setApiVersion,
  setPaymentTypes,
  setRateLimits,
  setSuspended,
} from './partner-admin.js';

const usage = `Usage: npm run admin -- <command> [options]
  create-partner --kind commerce|distribution --name NAME [--payment-types CARD,PAY_AT_STORE]
                 [--mode live|test]   (the first key's mode; default live)
  create-key --partner PARTNER_ID [--mode live|test]
  revoke-key --key-id KEY_ID | --key-stdin   (a whole key only on stdin, never as an argument)
  list-partners
  set-rate-limits --partner PARTNER_ID [--reads N] [--writes N] [--discovery N]
  set-payment-types --partner PARTNER_ID --payment-types CARD,PAY_AT_STORE (or '' for none)
  suspend-partner --partner PARTNER_ID    (every key of the partner refused: 401)
  resume-partner --partner PARTNER_ID
  set-api-version --partner PARTNER_ID --version DATE   (back or forward; prints the change)
  api-version-usage [--version DATE] [--since ISO-DATE]
                 (each partner's requests per API version in the request log, most first)
Each command prints its result as JSON on the last line of stdout.`;

const config = loadConfig(baseEnvSchema);
const [command, ...rest] = process.argv.slice(2);
const options = {
  kind: { type: 'string' },
  name: { type: 'string' },
  mode: { type: 'string' },
  'payment-types': { type: 'string' },
  partner: { type: 'string' },
  'key-id': { type: 'string' },
  'key-stdin': { type: 'boolean' },
  reads: { type: 'string' },
  writes: { type: 'string' },
  discovery: { type: 'string' },
  version: { type: 'string' },
  since: { type: 'string' },
} as const;
let values: ReturnType<typeof parseArgs<{ args: string[]; options: typeof options }>>['values'];
try {
  ({ values } = parseArgs({ args: rest, options, strict: true }));
} catch {
  // Not echoed: the argument may be a whole key (given to the removed `--key`, say).
  process.stderr.write(`unknown option or argument\n${usage}\n`);
  process.exit(1);
}

function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new AdminError(`--${name} is required`);
  return value;
}

/** A whole key from stdin, so it stays out of shell history and the process list. */
async function keyIdFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('API key: ');
  return keyIdOf(await text(process.stdin));
}

/** Tell running gateways to drop cached keys of this partner; they also expire on their own. */
async function announceChange(target: { partnerId: string; keyId?: string }) {
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
        ...(values.mode ? { mode: values.mode } : {}),
        ...(values['payment-types'] ? { paymentTypes: values['payment-types'].split(',') } : {}),
      });
      break;
    case 'create-key':
      result = await createKey(db, required('partner'), values.mode ? { mode: values.mode } : {});
      break;
    case 'revoke-key': {
      if (values['key-stdin'] === (values['key-id'] !== undefined)) {
        throw new AdminError('give --key-id KEY_ID or --key-stdin (the whole key on stdin)');
      }
      const keyId = values['key-stdin'] ? await keyIdFromStdin() : required('key-id');
      const revoked = await revokeKey(db, keyId);
      await announceChange({ partnerId: revoked.partnerId, keyId: revoked.keyId });
      result = revoked;
      break;
    }
    case 'set-payment-types': {
      const types = values['payment-types'];
      if (types === undefined) throw new AdminError('--payment-types is required');
      const partnerId = required('partner');
      result = await setPaymentTypes(db, partnerId, types === '' ? [] : types.split(','));
      await announceChange({ partnerId });
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
    case 'suspend-partner':
    case 'resume-partner': {
      const partnerId = required('partner');
      result = await setSuspended(db, partnerId, command === 'suspend-partner');
      await announceChange({ partnerId });
      break;
    }
    case 'set-api-version': {
      const partnerId = required('partner');
      const change = await setApiVersion(db, partnerId, required('version'));
      if (change.changed) await announceChange({ partnerId });
      result = change;
      break;
    }
    case 'api-version-usage':
      result = await apiVersionUsage(db, {
        ...(values.version === undefined ? {} : { version: values.version }),
        ...(values.since === undefined ? {} : { since: values.since }),
      });
      break;
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
