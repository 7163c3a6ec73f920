// Whether a server that answers will serve the platform. Imports `pg` and `nats`, so it runs
// only after the dependencies are installed.

/**
 * Why the server at `url` will not serve the platform, or undefined when it will:
 * PostgreSQL must let the URL's role in; NATS must have JetStream.
 */
export const refusals = {
  async postgres(url) {
    const { default: pg } = await import('pg');
    const admin = new URL(url);
    admin.pathname = '/postgres';
    for (let attempt = 0; ; attempt++) {
      const client = new pg.Client({
        connectionString: admin.toString(),
        connectionTimeoutMillis: 5_000,
      });
      try {
        await client.connect();
        await client.end();
        return undefined;
      } catch (error) {
        // A refusal pg raises itself (no password to give) leaves the socket open.
        await client.end().catch(() => undefined);
        // 57P03: a server just started is still recovering.
        if (error.code === '57P03' && attempt < 60) {
          await new Promise((resolve) => setTimeout(resolve, 500));
          continue;
        }
        // 28xxx: no such role, no pg_hba.conf line, wrong password; pg says it needs one.
        if (String(error.code).startsWith('28') || /password/i.test(error.message)) {
          return `refuses the connection (${error.message})`;
        }
        throw new Error(`postgres at ${url}: ${error.message}`);
      }
    }
  },
  async nats(url) {
    const { connect: connectNats } = await import('nats');
    let nc;
    try {
      nc = await connectNats({ servers: url, name: 'pcp-setup', timeout: 3_000 });
    } catch (error) {
      return `refuses the connection (${error.message})`;
    }
    try {
      await nc.jetstreamManager({ timeout: 3_000 });
      return undefined;
    } catch (error) {
      // 503: no responders, nothing serves the JetStream API.
      return error.code === '503'
        ? 'runs without JetStream'
        : `runs without JetStream (${error.message})`;
    } finally {
      await nc.close();
    }
  },
  redis: () => undefined,
};

/** Each server's flag or setting that makes it serve the platform, for the error message. */
export const refusalHints = {
  postgres: 'Let that role in over TCP (trust, or a password in the URL)',
  nats: 'Run nats-server with JetStream (-js)',
};
