import { LRUCache } from 'lru-cache';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A finished call's answer, kept byte for byte so a replay is identical. */
export interface StoredResult {
  readonly status: number;
  readonly body: string;
}

interface IdempotencyRecord {
  readonly fingerprint: string;
  result: StoredResult | undefined;
}

/** What a request with an Idempotency-Key may do. */
export type Claim =
  | {
      readonly kind: 'owner';
      /** Keep the answer for replays. */
      complete(result: StoredResult): void;
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
      const record: IdempotencyRecord = { fingerprint, result: undefined };
      records.set(key, record);
      // A reset (or eviction) while the call ran makes its record someone else's business.
      const mine = () => records.peek(key) === record;
      return {
        kind: 'owner',
        complete(result) {
          if (!mine()) return;
          record.result = result;
          records.set(key, record); // the 24 h start when the answer exists
        },
        release() {
          if (mine()) records.delete(key);
        },
      };
    },
    clear: () => records.clear(),
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
