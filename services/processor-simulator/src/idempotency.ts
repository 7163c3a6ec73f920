import { LRUCache } from 'lru-cache';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A finished call's answer, kept byte for byte so a replay is identical. */
export interface StoredResult {
  readonly status: number;
  readonly body: string;
}

/** A key with its answer, as saved and restored; `answeredAt` (epoch ms) starts its 24 h. */
export interface SavedKey extends StoredResult {
  readonly key: string;
  readonly fingerprint: string;
  readonly answeredAt: number;
}

interface IdempotencyRecord {
  readonly fingerprint: string;
  result: StoredResult | undefined;
  answeredAt: number;
}

/** What a request with an Idempotency-Key may do. */
export type Claim =
  | {
      readonly kind: 'owner';
      /** Keep the answer for replays; returns it as saved, or nothing when a reset took the key. */
      complete(result: StoredResult): SavedKey | undefined;
      /** Forget the key (nothing was executed), so a retry executes. */
      release(): void;
    }
  | { readonly kind: 'replay'; readonly result: StoredResult }
  | { readonly kind: 'in_use' }
  | { readonly kind: 'reused' };

/** Idempotency records, kept 24 h, at most `maxRecords` (least recently used go first). */
export function createIdempotencyStore(maxRecords: number) {
  const records = new LRUCache<string, IdempotencyRecord>({ max: maxRecords, ttl: DAY_MS });
  return {
    claim(key: string, fingerprint: string): Claim {
      const existing = records.get(key);
      if (existing) {
        if (existing.fingerprint !== fingerprint) return { kind: 'reused' };
        return existing.result ? { kind: 'replay', result: existing.result } : { kind: 'in_use' };
      }
      const record: IdempotencyRecord = { fingerprint, result: undefined, answeredAt: 0 };
      records.set(key, record);
      // A reset (or eviction) while the call ran makes its record someone else's business.
      const mine = () => records.peek(key) === record;
      return {
        kind: 'owner',
        complete(result) {
          if (!mine()) return undefined;
          record.result = result;
          record.answeredAt = Date.now();
          records.set(key, record); // the 24 h start when the answer exists
          return { key, fingerprint, ...result, answeredAt: record.answeredAt };
        },
        release() {
          if (mine()) records.delete(key);
        },
      };
    },
    clear: () => records.clear(),

    /** The answered keys still within their 24 h, least recently used first. */
    *records(): Generator<SavedKey> {
      for (const key of records.rkeys()) {
        const record = records.peek(key);
        if (record?.result) {
          const { fingerprint, result, answeredAt } = record;
          yield { key, fingerprint, ...result, answeredAt };
        }
      }
    },

    /** Take back a saved key for what is left of its 24 h (nothing, once they are over). */
    restore(saved: SavedKey): void {
      const ttl = saved.answeredAt + DAY_MS - Date.now();
      if (ttl <= 0) return;
      const { fingerprint, status, body, answeredAt } = saved;
      records.set(saved.key, { fingerprint, result: { status, body }, answeredAt }, { ttl });
    },

    size: () => records.size,
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
