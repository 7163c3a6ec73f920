// Starting this machine's installed servers where their default address does not answer.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { dataDir, run, startDetached, which } from './shell.mjs';

/** Start each server at `{host, port}` from its binary; false when it is not installed. */
export const systemStarters = {
  nats({ host, port }) {
    const binary = which('nats-server');
    if (!binary) return false;
    const store = join(dataDir, 'nats');
    mkdirSync(store, { recursive: true });
    startDetached('nats', binary, ['-a', host, '-p', String(port), '-js', '-sd', store]);
    return true;
  },
  redis({ host, port }) {
    const binary = which('redis-server');
    if (!binary) return false;
    const dir = join(dataDir, 'redis');
    mkdirSync(dir, { recursive: true });
    run(
      binary,
      [
        '--daemonize',
        'yes',
        '--bind',
        host,
        '--port',
        String(port),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    return true;
  },
  postgres({ port }) {
    // Debian's cluster (what apt-get installs) when it serves this port; whether it lets us in
    // is checked next.
    const ctl = which('pg_ctlcluster');
    if (!ctl || !existsSync('/etc/postgresql')) return false;
    const version = readdirSync('/etc/postgresql')
      .sort((a, b) => Number(a) - Number(b))
      .at(-1);
    const config = join('/etc/postgresql', version ?? '', 'main', 'postgresql.conf');
    if (!version || !existsSync(config)) return false;
    const mainPort = /^\s*port\s*=\s*(\d+)/m.exec(readFileSync(config, 'utf8'))?.[1] ?? '5432';
    if (Number(mainPort) !== port) return false;
    spawnSync(ctl, ['--skip-systemctl-redirect', version, 'main', 'start'], { stdio: 'inherit' });
    return true;
  },
};
