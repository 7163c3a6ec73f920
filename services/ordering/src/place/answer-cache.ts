import { performance } from 'node:perf_hooks';

/** A key's final answer as a replay sends it, with what the retry must match. */
export interface CachedAnswer {
  readonly endUserId: string;
  /** SHA-256 of body bytes that replay this answer. */
  readonly rawHash: string;
  /** The place reply's bytes, `replayed: true`. */
  readonly reply: Uint8Array;
}

/**
 * Final place answers kept in-process so a retry of the very same request is answered without
 * the database. Entries are per tenant (a partner in one mode): a key is looked up under the
 * asking tenant only, so no tenant ever gets another's answer. Bounded by bytes, the least
 * recently used going first; each entry lives no longer than it was given.
 */
export interface AnswerCache {
  get(tenantId: string, key: string): CachedAnswer | undefined;
  /** Keep `answer` for at most `keepMs`; nothing if that is not positive or it is too large. */
  set(tenantId: string, key: string, answer: CachedAnswer, keepMs: number): void;
  /** What the entries weigh together (see `entryBytes`). */
  bytes(): number;
}

interface Entry {
  readonly answer: CachedAnswer;
  readonly until: number;
  readonly bytes: number;
}

/** A Map entry, its key string and the answer's object headers, beyond the strings and reply. */
const ENTRY_OVERHEAD_BYTES = 160;

/** What an entry weighs: its strings (UTF-16, two bytes a unit), its reply and its overhead. */
export function entryBytes(tenantId: string, key: string, answer: CachedAnswer): number {
  const chars = tenantId.length + 1 + key.length + answer.endUserId.length + answer.rawHash.length;
  return 2 * chars + answer.reply.byteLength + ENTRY_OVERHEAD_BYTES;
}

export function createAnswerCache(
  maxBytes: number,
  now: () => number = () => performance.now(),
): AnswerCache {
  // A Map iterates in insertion order: re-inserting on a hit keeps the least recent first.
  const entries = new Map<string, Entry>();
  let total = 0;
  const remove = (id: string, entry: Entry) => {
    entries.delete(id);
    total -= entry.bytes;
  };
  return {
    get(tenantId, key) {
      const id = `${tenantId}\n${key}`;
      const entry = entries.get(id);
      if (!entry) return undefined;
      remove(id, entry);
      if (now() >= entry.until) return undefined;
      entries.set(id, entry);
      total += entry.bytes;
      return entry.answer;
    },
    set(tenantId, key, answer, keepMs) {
      const bytes = entryBytes(tenantId, key, answer);
      if (keepMs <= 0 || bytes > maxBytes) return;
      const id = `${tenantId}\n${key}`;
      const previous = entries.get(id);
      if (previous) remove(id, previous);
      entries.set(id, { answer, until: now() + keepMs, bytes });
      total += bytes;
      for (const [oldest, entry] of entries) {
        if (total <= maxBytes) break;
        remove(oldest, entry);
      }
    },
    bytes: () => total,
  };
}
