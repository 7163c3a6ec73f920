// `node gateway-cluster.js <gateway dist/main.js> [node flags for the workers…]`: one gateway
// per entry of GATEWAY_OPS_PORTS (comma-separated, each worker's own OPS_PORT), all sharing
// PORT through node:cluster (the primary accepts and hands connections round robin; Node 24's
// reusePort, which would let each worker accept, is not measured against it yet).
// launchPlatform runs it for `gatewayCluster` with several gateways.
// SIGTERM or SIGINT ends every worker with SIGTERM (their own graceful shutdown), then the
// primary; a worker that dies before that ends the rest and the primary with exit code 1.
import cluster from 'node:cluster';

const [main, ...execArgv] = process.argv.slice(2);
const opsPorts = (process.env.GATEWAY_OPS_PORTS ?? '').split(',').filter(Boolean).map(Number);
const port = Number(process.env.PORT);
if (!main || opsPorts.length === 0 || opsPorts.some((p) => !Number.isInteger(p)) || !port) {
  process.stderr.write(
    'usage: PORT=<port> GATEWAY_OPS_PORTS=<port,port,…> node gateway-cluster.js <main.js> [node flags]\n',
  );
  process.exit(2);
}

// args: [] rather than the default (this script's own arguments).
cluster.setupPrimary({ exec: main, args: [], execArgv });
let exitCode: number | undefined;

function stop(code: number): void {
  exitCode ??= code;
  const alive = Object.values(cluster.workers ?? {}).filter((worker) => !worker?.isDead());
  if (alive.length === 0) process.exit(exitCode);
  for (const worker of alive) worker?.process.kill('SIGTERM');
}

cluster.on('exit', (worker, code, signal) => {
  if (exitCode === undefined) {
    process.stderr.write(
      `[gateway-cluster] worker ${worker.process.pid} exited early (code ${code}, signal ${signal})\n`,
    );
    stop(1);
  } else if (Object.values(cluster.workers ?? {}).every((w) => !w || w.isDead())) {
    process.exit(exitCode);
  }
});
process.once('SIGTERM', () => stop(0));
process.once('SIGINT', () => stop(130));

/** Fork the worker for `opsPort`; resolves once it listens on the shared PORT. */
function fork(opsPort: number, env: Record<string, string> = {}): Promise<void> {
  const worker = cluster.fork({ OPS_PORT: String(opsPort), ...env });
  return new Promise((resolve) => {
    worker.on('listening', (address) => {
      if (address.port === port) resolve();
    });
  });
}

// The first migrates the schema; the others start after it and skip that, since concurrent
// migrations race on creating the migration tables.
const [first, ...others] = opsPorts;
await fork(first!);
if (exitCode === undefined) {
  await Promise.all(others.map((opsPort) => fork(opsPort, { MIGRATE_ON_START: 'false' })));
}
