import {
  headers as createHeaders,
  type JetStreamClient,
  type JetStreamManager,
  type MsgRequest,
  type StoredMsg,
} from 'nats';
import {
  AdminError,
  AdminUsageError,
  adminCommand,
  integerOption,
  type AdminCommands,
} from './admin.js';
import { deadLetterHeaders, deadLetterStream, deadLetterSubject } from './streams.js';

/** A dead letter as operators see it: where it came from and why, never its data. */
export interface DeadLetter {
  /** Its sequence in the dead-letter stream (what `--sequence` takes). */
  readonly sequence: number;
  /** The durable consumer that gave up on it. */
  readonly consumer: string;
  /** Where the message was published, and its place in its stream. */
  readonly subject: string | null;
  readonly stream: string | null;
  readonly streamSequence: number | null;
  readonly reason: string | null;
  readonly deliveries: number | null;
  readonly deadLetteredAt: string;
  /** Bytes of data (the data itself may hold partner data and is never shown). */
  readonly size: number;
}

/** Dead letters `dead-letters-list` shows by default and at most. */
export const DEAD_LETTER_LIST_LIMIT = { default: 20, max: 200 } as const;
/** Dead letters one `dead-letters-republish --all` republishes by default and at most. */
export const DEAD_LETTER_REPUBLISH_LIMIT = { default: 100, max: 1_000 } as const;

/** JetStream's "no message found" (MSG.GET past the last match) and "stream not found". */
const NO_MESSAGE_FOUND = 10037;
const STREAM_NOT_FOUND = 10059;
/** A durable's name, so a `--consumer` can never be a wildcard. */
const DURABLE_NAME = /^[A-Za-z0-9_-]{1,128}$/;

function isNotFound(error: unknown, ...codes: number[]): boolean {
  const code = (error as { api_error?: { err_code?: number } }).api_error?.err_code;
  return code !== undefined && codes.includes(code);
}

const numberHeader = (letter: StoredMsg, name: string) => {
  const value = letter.header?.get(name);
  return value ? Number(value) : null;
};

function describeLetter(prefix: string, letter: StoredMsg): DeadLetter {
  const header = (name: string) => letter.header?.get(name) || null;
  return {
    sequence: letter.seq,
    consumer: letter.subject.slice(`${prefix}.dead-letters.`.length),
    subject: header(deadLetterHeaders.subject),
    stream: header(deadLetterHeaders.stream),
    streamSequence: numberHeader(letter, deadLetterHeaders.sequence),
    reason: header(deadLetterHeaders.reason),
    deliveries: numberHeader(letter, deadLetterHeaders.deliveries),
    deadLetteredAt: letter.time.toISOString(),
    size: letter.data.length,
  };
}

/** A `--consumer` that names a durable (never a wildcard). */
function checkedDurable(consumer: string | undefined): string | undefined {
  if (consumer !== undefined && !DURABLE_NAME.test(consumer)) {
    throw new AdminUsageError(`--consumer ${consumer} is not a durable consumer's name`);
  }
  return consumer;
}

/** The subject filter of one durable's dead letters, or of all of them. */
function filterOf(prefix: string, consumer: string | undefined): string {
  if (consumer === undefined) return `${prefix}.dead-letters.>`;
  checkedDurable(consumer);
  return deadLetterSubject(prefix, consumer);
}

/**
 * The dead letter matching `filter` at or after `from`, read without consuming it (the
 * server's MSG.GET takes `next_by_subj` since 2.9; nats.js types it for direct gets only).
 */
async function nextLetter(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  from: number,
): Promise<StoredMsg | undefined> {
  try {
    const query = { seq: from, next_by_subj: filter } as unknown as MsgRequest;
    return await jsm.streams.getMessage(stream, query);
  } catch (error) {
    // Past the last match, or no dead-letter stream yet (no consumer ever started).
    if (isNotFound(error, NO_MESSAGE_FOUND, STREAM_NOT_FOUND)) return undefined;
    throw error;
  }
}

/** How many dead letters match `filter` (0 when the stream was never made). */
async function countLetters(jsm: JetStreamManager, stream: string, filter: string) {
  try {
    const info = await jsm.streams.info(stream, { subjects_filter: filter });
    return Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
  } catch (error) {
    if (isNotFound(error, STREAM_NOT_FOUND)) return 0;
    throw error;
  }
}

/**
 * Up to `limit` dead letters of `consumer` (or of every consumer) from sequence `from`,
 * oldest first, without consuming them; `total` counts every match, `nextFrom` continues.
 */
export async function listDeadLetters(
  jsm: JetStreamManager,
  prefix: string,
  query: { consumer?: string | undefined; limit: number; from?: number | undefined },
) {
  const stream = deadLetterStream(prefix);
  const filter = filterOf(prefix, query.consumer);
  const total = await countLetters(jsm, stream, filter);
  const deadLetters: DeadLetter[] = [];
  let from = query.from ?? 1;
  while (total > 0 && deadLetters.length < query.limit) {
    const letter = await nextLetter(jsm, stream, filter, from);
    if (!letter) break;
    deadLetters.push(describeLetter(prefix, letter));
    from = letter.seq + 1;
  }
  const more = deadLetters.length === query.limit && (await nextLetter(jsm, stream, filter, from));
  return { total, deadLetters, nextFrom: more ? from : null };
}

/** A dead letter's original headers, without those the dead-lettering and JetStream added. */
function originalHeaders(letter: StoredMsg) {
  const headers = createHeaders();
  for (const [key, values] of letter.header ?? []) {
    if (/^(pcp-dead-letter-|nats-)/i.test(key)) continue;
    for (const value of values) headers.append(key, value);
  }
  return headers;
}

/**
 * Publish one dead letter's data to its original subject with its original headers, then
 * delete it from the dead-letter stream. Its message id is new (the original's may still be
 * in the stream's duplicate window, which would drop it silently) and the same on a second
 * try, so a re-run after a failed delete is reported as a duplicate rather than sent twice.
 */
async function republish(
  js: JetStreamClient,
  jsm: JetStreamManager,
  prefix: string,
  letter: StoredMsg,
) {
  const described = describeLetter(prefix, letter);
  if (!described.subject) {
    throw new AdminError(`dead letter ${letter.seq} names no original subject`);
  }
  const stream = deadLetterStream(prefix);
  let ack;
  try {
    ack = await js.publish(described.subject, letter.data, {
      headers: originalHeaders(letter),
      msgID: `replay:${stream}:${letter.seq}:${letter.time.getTime()}`,
    });
  } catch (error) {
    throw new AdminError(
      `dead letter ${letter.seq} could not be published to ${described.subject} (${String(error)}); ` +
        'run the command in the service that publishes that subject',
    );
  }
  await jsm.streams.deleteMessage(stream, letter.seq, false);
  return {
    ...described,
    republishedTo: { stream: ack.stream, sequence: ack.seq },
    // Published before, within the window (an earlier run that could not delete it).
    duplicate: ack.duplicate,
  };
}

/**
 * Republish the dead letter at `sequence` (checked to be `consumer`'s when given), or the
 * oldest `limit` of `consumer`'s; `remaining` counts what is left of the selection.
 */
export async function republishDeadLetters(
  js: JetStreamClient,
  jsm: JetStreamManager,
  prefix: string,
  which: { sequence: number; consumer?: string | undefined } | { consumer: string; limit: number },
) {
  const stream = deadLetterStream(prefix);
  const filter = filterOf(prefix, which.consumer);
  const republished = [];
  if ('sequence' in which) {
    const letter = await nextLetter(jsm, stream, filter, which.sequence);
    if (letter?.seq !== which.sequence) {
      throw new AdminError(
        `no dead letter${which.consumer ? ` of ${which.consumer}` : ''} has sequence ${which.sequence}`,
      );
    }
    republished.push(await republish(js, jsm, prefix, letter));
  } else {
    let from = 1;
    while (republished.length < which.limit) {
      const letter = await nextLetter(jsm, stream, filter, from);
      if (!letter) break;
      try {
        republished.push(await republish(js, jsm, prefix, letter));
      } catch (error) {
        throw new AdminError(
          `republished ${republished.length} dead letters, then: ${(error as Error).message}`,
        );
      }
      from = letter.seq + 1;
    }
  }
  return { republished, remaining: await countLetters(jsm, stream, filter) };
}

/**
 * `dead-letters-list` and `dead-letters-republish`, over the deployment's dead-letter stream.
 * Republishing publishes to the original subject, so it runs in a service whose NATS user
 * may publish there.
 */
export function deadLetterCommands<DB>(): AdminCommands<DB> {
  return {
    'dead-letters-list': adminCommand({
      usage: '[--consumer DURABLE] [--limit N] [--from SEQUENCE]',
      summary: `dead letters, oldest first (N ≤ ${DEAD_LETTER_LIST_LIMIT.max}), without their data`,
      options: {
        consumer: { type: 'string' },
        limit: { type: 'string' },
        from: { type: 'string' },
      },
      check: (args) => ({
        consumer: checkedDurable(args.consumer),
        limit: integerOption(
          args,
          'limit',
          { min: 1, max: DEAD_LETTER_LIST_LIMIT.max },
          DEAD_LETTER_LIST_LIMIT.default,
        ),
        from: integerOption(args, 'from', { min: 1, max: Number.MAX_SAFE_INTEGER }),
      }),
      run: ({ jsm, prefix, args }) => listDeadLetters(jsm, prefix, args),
    }),
    'dead-letters-republish': adminCommand({
      usage: '--sequence N [--consumer DURABLE] | --consumer DURABLE --all [--limit N]',
      summary: 'publish dead letters to their original subject again, then delete them',
      options: {
        sequence: { type: 'string' },
        consumer: { type: 'string' },
        all: { type: 'boolean' },
        limit: { type: 'string' },
      },
      check(args) {
        const sequence = integerOption(args, 'sequence', { min: 1, max: Number.MAX_SAFE_INTEGER });
        const consumer = checkedDurable(args.consumer);
        if (sequence !== undefined && args.all !== true && args.limit === undefined) {
          return { sequence, consumer };
        }
        if (sequence === undefined && args.all === true && consumer !== undefined) {
          const limit = integerOption(
            args,
            'limit',
            { min: 1, max: DEAD_LETTER_REPUBLISH_LIMIT.max },
            DEAD_LETTER_REPUBLISH_LIMIT.default,
          );
          return { consumer, limit };
        }
        throw new AdminUsageError('give --sequence N, or --consumer DURABLE --all');
      },
      run: ({ js, jsm, prefix, args }) => republishDeadLetters(js, jsm, prefix, args),
    }),
  };
}
