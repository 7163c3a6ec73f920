// Whether a server answers on a TCP port, and which ports are free.
import { connect, createServer } from 'node:net';

export function hostPort(url, defaultPort) {
  const parsed = new URL(url);
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: Number(parsed.port || defaultPort),
  };
}

export const isLocal = (host) => ['127.0.0.1', 'localhost', '::1'].includes(host);

/**
 * Whether `{host, port}` accepts a TCP connection within `timeoutMs`.
 * @param {{ host: string; port: number }} address
 * @returns {Promise<boolean>}
 */
export function answers({ host, port }, timeoutMs = 1_000) {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Whether `address` accepts TCP connections within `seconds`.
 * @param {{ host: string; port: number }} address
 * @param {number} seconds
 * @returns {Promise<boolean>}
 */
export async function waitUntilAnswers(address, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await answers(address, 250)) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** The first port from `from` on that nothing listens on at 127.0.0.1. */
export async function firstFreePort(from) {
  const free = (port) =>
    new Promise((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (let port = from; port < from + 100; port++) {
    if ((await free(port)) && !(await answers({ host: '127.0.0.1', port }))) return port;
  }
  throw new Error(`no free port between ${from} and ${from + 99} on 127.0.0.1`);
}
