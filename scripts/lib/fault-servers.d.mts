export type FaultServerName = 'nats' | 'postgres' | 'redis';

export interface FaultServers {
  readonly natsUrl: string;
  /** The `postgres` database of the suite's own cluster (trust on loopback). */
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** Where the servers' logs and NATS store live until `stop()`. */
  readonly logDir: string;
  /** Stop the server, start it again on the same port and data; resolves once it answers. */
  restart(name: FaultServerName): Promise<void>;
  /** Stop every server and remove its data (`keepLogs`: but the logs); safe to call twice. */
  stop(options?: { keepLogs?: boolean }): Promise<void>;
}

export function startFaultServers(): Promise<FaultServers>;
