// The project's own nats-server with JetStream, for where the default NATS has none.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { answers, firstFreePort } from './network.mjs';
import { ownNatsConfig, ownNatsDir, ownServerPort } from './server-urls.mjs';
import { INSTALL_HINT, log, startDetached, which } from './shell.mjs';

/** The project's own `nats-server` with JetStream, under .data/nats, on its own port. */
export async function startOwnNats() {
  const binary = which('nats-server');
  if (!binary) {
    throw new Error(`nats-server is not installed. Install the servers with:\n  ${INSTALL_HINT}`);
  }
  let port = ownServerPort('nats');
  if (!port) {
    port = await firstFreePort(4223);
    mkdirSync(ownNatsDir, { recursive: true });
    writeFileSync(
      ownNatsConfig,
      `# this project's own NATS, made by npm start and npm test\nlisten: "127.0.0.1:${port}"\njetstream {\n  store_dir: ${JSON.stringify(join(ownNatsDir, 'store'))}\n}\n`,
    );
  }
  const address = { host: '127.0.0.1', port };
  if (!(await answers(address))) {
    log(`starting the project's own nats-server -js on port ${port}`);
    startDetached('nats', binary, ['-c', ownNatsConfig]);
  }
  return address;
}
