import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP relay on 127.0.0.1 in front of a real server, which a test or the smoke run cuts (as
 * a network partition or the server's outage would: open connections drop, new ones are
 * refused) and restores on the same port, without touching the server others share.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined).on('close', () => sockets.delete(socket));
    return socket;
  };
  const listen = async (port: number): Promise<Server> => {
    const server = createServer((client) => {
      const upstream = track(connect(target.port, target.host));
      track(client).pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    return server;
  };
  let server: Server | undefined = await listen(0);
  const { port } = server.address() as { port: number };
  const close = async () => {
    const closing = server;
    server = undefined;
    if (!closing) return;
    const closed = new Promise((resolve) => closing.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    port,
    /** Refuse new connections and drop the open ones. */
    cut: close,
    /** Relay again, on the same port. */
    async restore() {
      server ??= await listen(port);
    },
    close,
  };
}

/** Host and port of a server URL (`nats://`, `postgres://`, `redis://`). */
export function hostAndPort(url: string, defaultPort: number) {
  const parsed = new URL(url);
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: Number(parsed.port || defaultPort),
  };
}
