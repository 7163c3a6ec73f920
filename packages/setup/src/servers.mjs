// Making NATS, PostgreSQL and Redis answer and serve the platform, and its database exist.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { answers, hostPort, isLocal, waitUntilAnswers } from './network.mjs';
import { startOwnNats } from './own-nats.mjs';
import { postgresBinaries, startOwnPostgres } from './own-postgres.mjs';
import { refusalHints, refusals } from './refusals.mjs';
import { envNames, origins, serverUrls, useOwnServer } from './server-urls.mjs';
import { INSTALL_HINT, dataDir, log, which } from './shell.mjs';
import { systemStarters } from './system-servers.mjs';

const ownStarters = { postgres: startOwnPostgres, nats: startOwnNats };
const ownInstalled = {
  postgres: () => Boolean(postgresBinaries()),
  nats: () => Boolean(which('nats-server')),
};
const defaultPorts = { nats: 4222, postgres: 5432, redis: 6379 };

async function waitForStart(name, address) {
  if (!(await waitUntilAnswers(address, 30))) {
    throw new Error(`${name} did not start; see ${join(dataDir, `${name}.log`)}`);
  }
}

/** Start the server `name` that does not answer at `address`; false to leave it to Docker. */
async function startMissing(name, address, dockerFallback) {
  if (!isLocal(address.host)) {
    throw new Error(`${name} at ${serverUrls[name]} does not answer`);
  }
  log(`${name} is not running on ${address.host}:${address.port}; starting it`);
  if (systemStarters[name](address)) return true;
  if (origins[name] === 'default' && ownInstalled[name]?.()) {
    useOwnServer(name, (await ownStarters[name]()).port);
    return true;
  }
  if (dockerFallback && spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0) {
    log(`${name} is not installed; the tests will start it in Docker`);
    return false;
  }
  throw new Error(`${name} is not installed. Install the servers with:\n  ${INSTALL_HINT}`);
}

/** When the server `name` answers but refuses the platform, switch to the project's own. */
async function replaceRefusing(name) {
  const refusal = await refusals[name](serverUrls[name]);
  if (!refusal) return;
  if (origins[name] === 'own') {
    throw new Error(`the project's own ${name} at ${serverUrls[name]} ${refusal}`);
  }
  if (origins[name] === 'user') {
    throw new Error(
      `${name} at ${serverUrls[name]} ${refusal}.\n  ${refusalHints[name]}, or unset ${envNames[name]} to let the set-up run the project's own`,
    );
  }
  log(`${name} at ${serverUrls[name]} ${refusal}; using the project's own instead`);
  const own = await ownStarters[name]();
  useOwnServer(name, own.port);
  await waitForStart(name, own);
  const ownRefusal = await refusals[name](serverUrls[name]);
  if (ownRefusal) {
    throw new Error(`the project's own ${name} at ${serverUrls[name]} ${ownRefusal}`);
  }
}

/**
 * Make sure NATS, PostgreSQL and Redis answer and serve the platform. A local one that does
 * not answer is started from the binary on this machine; with no binary, say the one command
 * that installs it. Where the default PostgreSQL refuses the connection or the default NATS
 * has no JetStream, the project runs its own under .data/ and every child process gets its
 * URL. A server whose URL the user set must serve as it is. With `dockerFallback` (tests), a
 * missing binary is left to the test run's testcontainers path when a Docker engine answers.
 */
export async function ensureServers({ dockerFallback = false } = {}) {
  for (const name of ['nats', 'postgres', 'redis']) {
    const address = hostPort(serverUrls[name], defaultPorts[name]);
    if (origins[name] === 'own') {
      await ownStarters[name]();
    } else if (!(await answers(address))) {
      if (!(await startMissing(name, address, dockerFallback))) continue;
    }
    await waitForStart(name, hostPort(serverUrls[name], defaultPorts[name]));
    await replaceRefusing(name);
  }
  for (const name of ['nats', 'postgres']) {
    if (origins[name] === 'own') log(`${envNames[name]}=${serverUrls[name]} (the project's own)`);
  }
}

/** Create the platform's database when it does not exist yet (needs dependencies installed). */
export async function ensureDatabase() {
  const { default: pg } = await import('pg');
  const url = new URL(serverUrls.postgres);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      log(`creating database ${name}`);
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    }
  } finally {
    await client.end();
  }
}
