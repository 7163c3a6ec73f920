// `npm run admin -- <command>`: partners and API keys (the gateway's admin CLI), parked outbox
// rows and dead letters (a service's `main.js admin`); see docs/operations.md#admin-commands.
// Builds first.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  ensureDependencies,
  fail,
  onBundledNode,
  root,
  run,
} from '../packages/setup/src/index.mjs';

const usage = `Usage: npm run admin -- <command> [options]
Partners and API keys (the gateway):
  create-partner --kind commerce|distribution --name NAME [--payment-types CARD,PAY_AT_STORE]
  create-key --partner PARTNER_ID
  revoke-key --key-id KEY_ID | --key-stdin   (a whole key only on stdin, never as an argument)
  list-partners
  set-rate-limits --partner PARTNER_ID [--reads N] [--writes N] [--discovery N]
  set-payment-types --partner PARTNER_ID --payment-types CARD,PAY_AT_STORE (or '' for none)
  suspend-partner --partner PARTNER_ID    (every key of the partner refused: 401)
  resume-partner --partner PARTNER_ID
  set-api-version --partner PARTNER_ID --version DATE   (back or forward; prints the change)
  api-version-usage [--version DATE] [--since ISO-DATE]
                 (each partner's requests per API version in the request log, most first)
Parked outbox rows (catalog or ordering):
  outbox-list --service catalog|ordering|stores [--limit N]
  outbox-republish --service catalog|ordering|stores --sequence N | --all
Dead letters (run by the service that may publish them again, found from --consumer):
  dead-letters-list [--consumer DURABLE] [--limit N] [--from SEQUENCE]
  dead-letters-republish --consumer DURABLE --sequence N | --consumer DURABLE --all [--limit N]
The ledger (payments) and the refunds cancels owe (ordering):
  reconcile
  reconciler-actions [--limit N]   (what the reconciler released or withheld on its own)
  refunds-owed [--limit N]         (refunds not yet made, raised ones first)
Stored secrets (after adding a key in front of SECRETS_KEYS, before dropping the old one):
  rewrap-secrets --service stores|ordering
Each command prints its result as JSON on the last line of stdout.`;

const partnerCommands = [
  'create-partner',
  'create-key',
  'revoke-key',
  'list-partners',
  'set-rate-limits',
  'set-payment-types',
  'suspend-partner',
  'resume-partner',
  'set-api-version',
  'api-version-usage',
];
/** The services with admin commands (an outbox, and the dead letters they may republish). */
const adminServices = ['catalog', 'ordering'];
/** The services with an outbox (stores' holds its store events). */
const outboxServices = [...adminServices, 'stores'];

function refuse(message) {
  process.stderr.write(`${message}\n${usage}\n`);
  process.exit(2);
}

/** `--service` and `--consumer` of the arguments, and the arguments without `--service`. */
function routing(args) {
  const { values, tokens } = parseArgs({
    args,
    options: { service: { type: 'string' }, consumer: { type: 'string' } },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const dropped = new Set();
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name !== 'service') continue;
    dropped.add(token.index);
    if (!token.inlineValue) dropped.add(token.index + 1);
  }
  return { ...values, rest: args.filter((_, index) => !dropped.has(index)) };
}

const [command, ...args] = process.argv.slice(2);
if (!command) refuse('no command given');
let target;
if (partnerCommands.includes(command)) {
  target = { script: 'services/gateway/dist/admin/cli.js', args: [command, ...args] };
} else if (command === 'reconcile' || command === 'reconciler-actions') {
  target = { script: 'services/payments/dist/main.js', args: ['admin', command, ...args] };
} else if (command === 'refunds-owed') {
  target = { script: 'services/ordering/dist/main.js', args: ['admin', command, ...args] };
} else if (command === 'outbox-list' || command === 'outbox-republish') {
  const { service, rest } = routing(args);
  if (!outboxServices.includes(service)) {
    refuse(`${command}: give --service catalog|ordering|stores`);
  }
  target = { script: `services/${service}/dist/main.js`, args: ['admin', command, ...rest] };
} else if (command === 'rewrap-secrets') {
  const { service, rest } = routing(args);
  if (service !== 'stores' && service !== 'ordering') {
    refuse(`${command}: give --service stores|ordering`);
  }
  target = { script: `services/${service}/dist/main.js`, args: ['admin', command, ...rest] };
} else if (command === 'dead-letters-list' || command === 'dead-letters-republish') {
  const deadLetters = routing(args);
  if (deadLetters.service !== undefined && !adminServices.includes(deadLetters.service)) {
    refuse(`${command}: --service is catalog or ordering`);
  }
  if (command === 'dead-letters-republish' && !deadLetters.consumer && !deadLetters.service) {
    refuse(`${command}: give --consumer DURABLE (it picks the service that may republish them)`);
  }
  target = { deadLetters };
} else {
  refuse(`unknown command ${command}`);
}

try {
  ensureDependencies();
  await onBundledNode();
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-b']);
} catch (error) {
  fail(error);
}

if (target.deadLetters) {
  // The service whose NATS user may publish the consumer's subject republishes its letters;
  // any of them can list the stream.
  const { service, consumer, rest } = target.deadLetters;
  const { deadLetterRepublisher } = await import(
    pathToFileURL(join(root, 'packages/contracts/dist/index.js')).href
  );
  const chosen = service ?? (consumer ? deadLetterRepublisher(consumer) : 'ordering');
  if (!chosen) refuse(`${command}: no service of the platform consumes as ${consumer}`);
  target = { script: `services/${chosen}/dist/main.js`, args: ['admin', command, ...rest] };
}

const child = spawnSync(process.execPath, [join(root, target.script), ...target.args], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(child.status ?? 1);
