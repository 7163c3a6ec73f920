import { LATEST_API_VERSION } from '@pcp/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { StreamFamily } from './stream-leases.js';
import type { StreamHolder } from './stream-registry.js';

/** How long an ended stream's socket may take to flush before it is destroyed. */
const END_GRACE_MS = 1_000;

/** A comment line: it keeps proxies from closing a quiet stream, and clients ignore it. */
export const SSE_HEARTBEAT = ': heartbeat\n\n';

/**
 * One server-sent event. Every field is one line: the id and type are ours (no newline) and the
 * data is JSON, which has none.
 */
export function sseFrame(event: { id?: string; event: string; data: unknown }): string {
  const id = event.id === undefined ? '' : `id: ${event.id}\n`;
  return `${id}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** An open stream: the hijacked response, until the client, the route or the gateway ends it. */
export interface SseStream {
  /** True once it ended; writes are then ignored. */
  readonly closed: boolean;
  /** Write, and wait while the client is slow (for a writer that reads at the client's pace). */
  write(text: string): Promise<void>;
  /**
   * Write without waiting, for a writer that cannot wait (events pushed to every listener):
   * when the client's queue would pass `maxQueuedBytes` (or one event, if larger), the stream
   * is ended instead, so a client that stops reading is dropped (and reconnects) rather than
   * held in memory.
   */
  push(text: string, maxQueuedBytes: number): void;
  /** Called once when it ends, however it ends. */
  onClose(listener: () => void): void;
  close(): void;
}

/** What a stream serves, beyond its partner's authority: its store, and the route's check. */
export type StreamScope = Pick<StreamHolder, 'storeId' | 'stillServed'>;

/**
 * The server-sent event streams of one route plugin: at most `perPartner` of a partner open at
 * once across its modes and every replica (429 RATE_LIMITED beyond), each ended when its
 * authority ends or it reaches its maximum age (http/stream-registry.ts), and every one ended
 * when the gateway closes.
 */
export function sseStreams(
  gateway: FastifyInstance,
  options: { readonly family: StreamFamily; readonly perPartner: number; readonly what: string },
) {
  const closers = new Set<() => void>();
  gateway.addHook('preClose', (done) => {
    for (const close of closers) close();
    done();
  });

  return {
    /** A place for a stream of the request's partner; the returned release gives it back. */
    admit(request: FastifyRequest): Promise<() => void> {
      return gateway.streamRegistry.admit(options.family, request.principal!, {
        cap: options.perPartner,
        what: options.what,
      });
    },

    /** Answer 200 `text/event-stream` on the hijacked reply; `release` runs when it ends. */
    open(
      request: FastifyRequest,
      reply: FastifyReply,
      release: () => void,
      scope: StreamScope = {},
    ): SseStream {
      reply.hijack();
      const res: ServerResponse = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        // Events are not rendered per version yet (docs/guide/versioning.md#translation):
        // every stream is written in the newest, whatever the request's version.
        'pcp-version': LATEST_API_VERSION,
        // A stream's connection is not reused: once it ends (a drop, the gateway closing) the
        // socket goes too, and a closing gateway is not kept waiting by it.
        connection: 'close',
      });
      const listeners: (() => void)[] = [release];
      let closed = false;
      const close = () => {
        if (closed) return;
        closed = true;
        closers.delete(close);
        for (const listener of listeners) listener();
        res.end();
        // A client that stopped reading never takes the end: its socket goes after a grace,
        // so neither it nor a closing gateway waits on it.
        setTimeout(() => res.destroy(), END_GRACE_MS).unref();
      };
      closers.add(close);
      const holder = {
        principal: request.principal!,
        consoleSession: request.consoleSession,
        ...scope,
      };
      listeners.push(gateway.streamRegistry.watch(holder, close));
      res.on('close', close);
      // The client may have gone while the route checked its request: nothing will close it.
      if (res.destroyed || !res.socket || res.socket.destroyed) close();

      return {
        get closed() {
          return closed;
        },
        async write(text) {
          if (closed || res.write(text)) return;
          await new Promise<void>((resolve) => {
            const done = () => {
              res.off('drain', done);
              res.off('close', done);
              resolve();
            };
            res.on('drain', done);
            res.on('close', done);
          });
        },
        push(text, maxQueuedBytes) {
          if (closed) return;
          const queued = res.writableLength;
          // One event is always taken on an empty queue, however large.
          if (queued > 0 && queued + Buffer.byteLength(text) > maxQueuedBytes) {
            // It fell behind: what it has not read is dropped with the socket.
            close();
            res.destroy();
            return;
          }
          res.write(text);
        },
        onClose(listener) {
          if (closed) listener();
          else listeners.push(listener);
        },
        close,
      };
    },
  };
}
