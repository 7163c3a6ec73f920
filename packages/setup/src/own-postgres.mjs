// The project's own PostgreSQL cluster (trust on loopback, its own port), for where the
// default server refuses the platform; also what the fault suite uses to run its own.
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';
import { answers, firstFreePort } from './network.mjs';
import {
  OWN_POSTGRES_MARK,
  existingOwnPostgresDir,
  ownPostgresPlaces,
  ownServerPort,
} from './server-urls.mjs';
import { INSTALL_HINT, log, run, which } from './shell.mjs';

/**
 * `[command, args]` to run as the postgres user: through `runuser -u postgres --` when this
 * is root (initdb and postgres refuse to run as root).
 * @param {string} command
 * @param {readonly string[]} args
 * @returns {[string, string[]]}
 */
export function asPostgresUser(command, args) {
  if (process.getuid?.() !== 0) return [command, args];
  const runuser = which('runuser');
  if (!runuser) {
    throw new Error('running as root without `runuser` to start PostgreSQL as postgres');
  }
  return [runuser, ['-u', 'postgres', '--', command, ...args]];
}

/**
 * Make `path` the postgres user's when this is root.
 * @param {string} path
 */
export function giveToPostgresUser(path) {
  if (process.getuid?.() !== 0) return;
  const id = (flag) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error('running as root and there is no postgres user to run PostgreSQL as');
  }
  chownSync(path, Number(uid.stdout), Number(gid.stdout));
}

/**
 * initdb and pg_ctl: Debian keeps them off the PATH, in /usr/lib/postgresql/<version>/bin;
 * the version of the project's own cluster once it exists, else the newest.
 * @returns {{ initdb: string; pgCtl: string } | undefined}
 */
export function postgresBinaries() {
  const versionFile = join(existingOwnPostgresDir() ?? ownPostgresPlaces[0], 'PG_VERSION');
  const clusterVersion = existsSync(versionFile) ? readFileSync(versionFile, 'utf8').trim() : '';
  const versions = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b))
    : [];
  const version = versions.includes(clusterVersion) ? clusterVersion : versions.at(-1);
  const binDir = version ? join('/usr/lib/postgresql', version, 'bin') : undefined;
  const find = (binary) =>
    binDir && existsSync(join(binDir, binary)) ? join(binDir, binary) : which(binary);
  const [initdb, pgCtl] = [find('initdb'), find('pg_ctl')];
  return initdb && pgCtl ? { initdb, pgCtl } : undefined;
}

/** The first of the own cluster's places the postgres user can write, initdb'd there. */
function createOwnCluster(initdb) {
  const dir = ownPostgresPlaces.find((candidate) => {
    mkdirSync(candidate, { recursive: true });
    giveToPostgresUser(candidate);
    const [test, testArgs] = asPostgresUser('test', ['-w', candidate]);
    if (spawnSync(test, testArgs, { stdio: 'ignore' }).status === 0) return true;
    rmSync(candidate, { recursive: true, force: true });
    return false;
  });
  if (!dir) {
    throw new Error(
      `the postgres user can write neither ${ownPostgresPlaces.join(' nor ')}; set DATABASE_URL to a server that lets the platform in`,
    );
  }
  log(`creating the project's own PostgreSQL cluster in ${dir}`);
  run(...asPostgresUser(initdb, ['-D', dir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8']), {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return dir;
}

/** The project's own PostgreSQL cluster under .data/postgres: trust on loopback, its own port. */
export async function startOwnPostgres() {
  const binaries = postgresBinaries();
  if (!binaries) {
    throw new Error(`postgres is not installed. Install the servers with:\n  ${INSTALL_HINT}`);
  }
  const { initdb, pgCtl } = binaries;
  const ownPostgresDir = existingOwnPostgresDir() ?? createOwnCluster(initdb);
  let port = ownServerPort('postgres');
  if (!port) {
    port = await firstFreePort(5433);
    appendFileSync(
      join(ownPostgresDir, 'postgresql.conf'),
      `\n${OWN_POSTGRES_MARK}\nport = ${port}\nlisten_addresses = 'localhost'\nunix_socket_directories = ''\n`,
    );
  }
  const address = { host: '127.0.0.1', port };
  if (!(await answers(address))) {
    log(`starting the project's own PostgreSQL on port ${port}`);
    const logFile = `${ownPostgresDir}.log`;
    closeSync(openSync(logFile, 'a'));
    giveToPostgresUser(logFile);
    run(
      ...asPostgresUser(pgCtl, ['-D', ownPostgresDir, '-l', logFile, '-w', '-t', '60', 'start']),
      { cwd: ownPostgresDir, stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  return address;
}
