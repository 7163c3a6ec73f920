// Keep-alive connections for outbound requests, pooled without loosening their rules.
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { AddressAllowlist } from './ip-address.js';

/** Limits of the connections {@link createOutboundAgents} keeps. */
export interface OutboundAgentOptions {
  /** Every connection's address is checked against this (and must be public otherwise). */
  allowlist: AddressAllowlist;
  /** Connections open to one origin at most (in use and idle). */
  maxSocketsPerOrigin: number;
  /** Idle connections kept across all origins at most; past it a freed one is closed. */
  maxIdleSockets: number;
  /** A connection older than this is closed when freed, never reused. */
  maxSocketAgeMs: number;
  /** An idle connection is closed after this. */
  idleTimeoutMs: number;
}

/** Keep-alive agents for {@link SafeOutboundOptions.agents}; `close()` ends their connections. */
export interface OutboundAgents {
  readonly allowlist: AddressAllowlist;
  readonly http: http.Agent;
  readonly https: https.Agent;
  close(): void;
}

/**
 * Keep-alive agents for outbound requests. Pooling keeps the rules: a connection is only ever
 * made through the request's guarded lookup (the address checked is the address connected,
 * and an open connection cannot be rebound), and every connection was checked against this
 * one `allowlist`. A connection is reused until `maxSocketAgeMs`, so a partner's DNS change
 * (or an allow-list entry removed at a restart) takes effect within it.
 */
export function createOutboundAgents(options: OutboundAgentOptions): OutboundAgents {
  const bornAt = new WeakMap<object, number>();
  const idle = (agent: http.Agent) => {
    let count = 0;
    for (const sockets of Object.values(agent.freeSockets)) count += sockets?.length ?? 0;
    return count;
  };
  /** The rules on an agent: age and idle caps on the connections it keeps. */
  const ruled = <A extends http.Agent>(agent: A): A => {
    const create = agent.createConnection.bind(agent);
    agent.createConnection = (...args) => {
      const socket = create(...args);
      if (socket) bornAt.set(socket, Date.now());
      return socket;
    };
    const keep = (agent.keepSocketAlive as (socket: Socket) => boolean).bind(agent);
    agent.keepSocketAlive = (socket: Socket) => {
      const left = (bornAt.get(socket) ?? 0) + options.maxSocketAgeMs - Date.now();
      if (left <= 0 || idle(agents.http) + idle(agents.https) >= options.maxIdleSockets) {
        return false;
      }
      const kept = keep(socket);
      // The agent closes a free socket at its timeout: idle too long, or too old by then.
      socket.setTimeout(Math.min(socket.timeout ?? options.idleTimeoutMs, left));
      return kept;
    };
    return agent;
  };
  const settings = {
    keepAlive: true,
    maxSockets: options.maxSocketsPerOrigin,
    maxFreeSockets: Math.min(options.maxSocketsPerOrigin, options.maxIdleSockets),
    timeout: options.idleTimeoutMs,
    scheduling: 'lifo' as const,
  };
  const agents: OutboundAgents = {
    allowlist: options.allowlist,
    http: ruled(new http.Agent(settings)),
    https: ruled(new https.Agent(settings)),
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
  return agents;
}
