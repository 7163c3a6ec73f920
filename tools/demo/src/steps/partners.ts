// The platform answers, and an operator creates the two partners with the admin command.
import { createPlatformClient, type PlatformClient } from '@pcp/client';
import { root } from '@pcp/setup';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { recordingFetch } from '../exchanges.js';
import { DemoFailure, check, cyan, dim, green, out, red, short, step } from '../output.js';

interface CreatedPartner {
  partnerId: string;
  apiKey: string;
}

/** `npm run admin -- …` (the built admin command): its last stdout line is JSON. */
function admin(...args: string[]): CreatedPartner {
  const quoted = args.map((arg) => (/\s/.test(arg) ? `"${arg}"` : arg)).join(' ');
  out(`   ${dim('$')} npm run admin -- ${quoted}`);
  const cli = join(root, 'services/gateway/dist/admin/cli.js');
  check(existsSync(cli), 'the built admin command (npm start builds it)', `no ${cli}`);
  const run = spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8' });
  check(run.status === 0, 'the admin command to succeed', () => run.stderr.trim() || run.status);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as CreatedPartner;
  const keyHint = `${result.apiKey.split('_').slice(0, 2).join('_')}_…`;
  out(`   ${dim('⇒')} partnerId ${short(result.partnerId)}, API key ${keyHint} (shown once)`);
  return result;
}

export async function platformAnswers(baseUrl: string): Promise<void> {
  step(`The platform answers at ${baseUrl}`);
  out(`   ${cyan('→')} GET /health/live`);
  let status;
  try {
    const response = await fetch(`${baseUrl}/health/live`, { signal: AbortSignal.timeout(5_000) });
    status = response.status;
  } catch (caught) {
    const error = caught as Error & { cause?: { code?: string } };
    out(`   ${cyan('←')} ${red(error.cause?.code ?? error.name)}`);
    throw new DemoFailure(
      `the platform to answer at ${baseUrl}`,
      error.cause?.code ?? error.message,
      'Run npm start first (or point DEMO_BASE_URL at a running gateway).',
    );
  }
  out(`   ${cyan('←')} ${status === 200 ? green(status) : red(status)}`);
  check(status === 200, 'GET /health/live to answer 200', status);
}

export interface Partners {
  /** The commerce partner's client (its store, catalog and orders). */
  commerce: PlatformClient;
  /** The distribution partner's client (discovery, carts, payments, orders, webhooks). */
  market: PlatformClient;
}

/** The sandbox's keys are test keys, `pcp_test_…`. */
function checkTestKey(partner: CreatedPartner): void {
  check(
    partner.apiKey.startsWith('pcp_test_'),
    'a test key (pcp_test_…)',
    `${partner.apiKey.split('_').slice(0, 2).join('_')}_…`,
  );
}

export function createPartners(
  baseUrl: string,
  storeName: string,
  tag: string,
  mode: 'live' | 'test',
): Partners {
  step(`An operator creates the two partners and their ${mode} API keys`);
  // The default mode is live; the sandbox asks for test keys (docs/guide/sandbox.md#modes).
  const modeArgs = mode === 'test' ? ['--mode', 'test'] : [];
  const commerce = admin('create-partner', '--kind', 'commerce', '--name', storeName, ...modeArgs);
  const distribution = admin(
    'create-partner',
    '--kind',
    'distribution',
    '--name',
    `Demo Market ${tag}`,
    '--payment-types',
    'CARD',
    ...modeArgs,
  );
  if (mode === 'test') {
    checkTestKey(commerce);
    checkTestKey(distribution);
  }
  const options = { baseUrl, fetch: recordingFetch, userAgent: 'pcp-demo' };
  return {
    commerce: createPlatformClient({ ...options, apiKey: commerce.apiKey }),
    market: createPlatformClient({ ...options, apiKey: distribution.apiKey }),
  };
}
