import { replyLengthHeader, replyPartsHeader, replyStatusHeader } from '@pcp/contracts';
import {
  createInbox,
  ErrorCode,
  NatsError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from 'nats';
import { AppError } from './app-error.js';
import type { Logger } from './logger.js';
import { MIN_PART_BYTES } from './reply-parts.js';

/** The reply inbox prefix of connections made as a NATS user (see `natsInboxPrefix`). */
export const userInboxPrefixes = new WeakMap<NatsConnection, string>();

/** One reply, reassembled from its parts. */
export interface Reply {
  readonly status: string | undefined;
  readonly data: Buffer;
}

interface PendingReply {
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: NodeJS.Timeout;
  status: string | undefined;
  expectedParts: number;
  /** Of the whole reply, when it comes in parts. */
  expectedBytes: number | undefined;
  receivedBytes: number;
  parts: Uint8Array[];
}

/**
 * Request/reply over one wildcard inbox subscription per client (as nats.js's own request
 * does), which also takes replies that come in several messages: a reply past the NATS
 * max payload is sent as its first part with `Pcp-Parts: n` and then n − 1 bare parts, in
 * order (NATS keeps the order of one publisher's messages to one subscriber).
 */
export function createReplyInbox(nc: NatsConnection, maxReplyBytes: number, logger: Logger) {
  const prefix = `${createInbox(userInboxPrefixes.get(nc))}.`;
  const pending = new Map<string, PendingReply>();
  let nextToken = 0;

  function settle(token: string, entry: PendingReply) {
    clearTimeout(entry.timer);
    pending.delete(token);
    return entry;
  }

  function receive(msg: Msg) {
    const token = msg.subject.slice(prefix.length);
    const entry = pending.get(token);
    if (!entry) return; // late: its caller timed out already
    try {
      take(token, entry, msg);
    } catch (error) {
      // Reading a header block nats.js cannot decode throws, and a throw from here would end
      // nats.js's reader and so every exchange on the connection: fail this one instead.
      logger.error({ err: error, subject: msg.subject }, 'reply could not be read');
      settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
    }
  }

  /** One message of the reply `entry` waits for: its first part, a later one, or all of it. */
  function take(token: string, entry: PendingReply, msg: Msg) {
    const status = msg.headers?.get(replyStatusHeader) || undefined;
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      settle(token, entry).reject(NatsError.errorForCode(ErrorCode.NoResponders));
      return;
    }
    // A message with a status starts a reply: the first part, or a small error that replaces
    // parts already sent when the responder could not send the rest.
    if (status !== undefined) {
      const parts = Number(msg.headers?.get(replyPartsHeader) || 1);
      const bytes = parts > 1 ? Number(msg.headers?.get(replyLengthHeader)) : msg.data.length;
      if (
        !Number.isSafeInteger(parts) ||
        !Number.isSafeInteger(bytes) ||
        parts < 1 ||
        bytes < 0 ||
        parts > Math.max(1, Math.ceil(bytes / MIN_PART_BYTES))
      ) {
        logger.error({ subject: msg.subject, parts, bytes }, 'reply announces no usable size');
        settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
        return;
      }
      if (bytes > maxReplyBytes) {
        logger.error({ subject: msg.subject, bytes }, 'reply is larger than this caller accepts');
        settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
        return;
      }
      entry.status = status;
      entry.expectedParts = parts;
      entry.expectedBytes = bytes;
      entry.receivedBytes = 0;
      entry.parts = [];
    }
    entry.parts.push(msg.data);
    entry.receivedBytes += msg.data.length;
    const complete = entry.parts.length === entry.expectedParts;
    if (
      entry.expectedBytes !== undefined &&
      (entry.receivedBytes > entry.expectedBytes ||
        (complete && entry.receivedBytes !== entry.expectedBytes))
    ) {
      // A part lost or out of place: fail rather than hand back a wrong body.
      logger.error(
        { subject: msg.subject, expected: entry.expectedBytes, received: entry.receivedBytes },
        'reply parts do not add up to the announced length',
      );
      settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
      return;
    }
    if (!complete) {
      // The wait is for the next part now: a long reply that keeps arriving is not cut off.
      entry.timer.refresh();
      return;
    }
    const data = entry.parts.length === 1 ? toBuffer(entry.parts[0]!) : Buffer.concat(entry.parts);
    settle(token, entry).resolve({ status: entry.status, data });
  }

  nc.subscribe(`${prefix}*`, {
    callback: (error, msg) => {
      if (error) logger.error({ err: error }, 'reply inbox failed');
      else receive(msg);
    },
  });

  return {
    request(subject: string, data: Uint8Array, headers: MsgHdrs, timeoutMs: number) {
      return new Promise<Reply>((resolve, reject) => {
        const token = (nextToken++).toString(36);
        const timer = setTimeout(() => {
          pending.delete(token);
          reject(NatsError.errorForCode(ErrorCode.Timeout));
        }, timeoutMs);
        pending.set(token, {
          resolve,
          reject,
          timer,
          status: undefined,
          expectedParts: 1,
          expectedBytes: undefined,
          receivedBytes: 0,
          parts: [],
        });
        try {
          nc.publish(subject, data, { reply: prefix + token, headers });
        } catch (error) {
          settle(token, pending.get(token)!);
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    },
  };
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
