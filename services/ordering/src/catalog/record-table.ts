import { LRUCache } from 'lru-cache';

/**
 * An immutable string-keyed table of JSON records held in a few typed arrays, so a catalog
 * compiled on a worker thread reaches the request loop by transfer (no copy, no decoding):
 * a structured clone of a 100k-item catalog as Maps of objects took the receiving loop
 * 440 ms to deserialize, this takes it nothing. A lookup hashes the key and decodes only
 * the record it finds (microseconds); a 100k-item catalog takes 15 MB. Pricing carts on the
 * compile threads instead would add a thread hop to every cart and tie the cache to threads
 * that exit when idle. Open addressing with linear probing, at most half full, so every
 * probe sequence reaches an empty slot. Decoded records are kept in a small LRU (pricing a
 * cart looks the same groups and options up again and again: decoding every lookup made a
 * 20-line cart 28 times slower than Maps of objects).
 */
export interface RecordTableParts {
  /** Entry index + 1 per slot, 0 when empty; its length is a power of two. */
  readonly slots: Int32Array;
  /** UTF-8 keys back to back: entry i spans keyOffsets[i] to keyOffsets[i + 1]. */
  readonly keys: Uint8Array;
  readonly keyOffsets: Uint32Array;
  /** UTF-8 JSON records back to back, spanned by valueOffsets like the keys. */
  readonly values: Uint8Array;
  readonly valueOffsets: Uint32Array;
}

export interface RecordLookup<T> {
  get(key: string): T | undefined;
  /** Memory the table and its decoded records may hold. */
  readonly bytes: number;
}

/** Heap taken by a decoded record, estimated from its JSON (objects, strings, a Set). */
const DECODED_BYTES_PER_JSON_BYTE = 4;
/** Decoded records kept per table: all of a small catalog's, a bounded part of a large one's. */
const MAX_DECODED_BYTES = 2 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** FNV-1a over bytes. */
function hashOf(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let hash = 0x811c9dc5;
  for (let index = start; index < end; index++) {
    hash ^= bytes[index]!;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Concatenated byte strings and their offsets, in arrays that own their buffers. */
function packed(entries: readonly Uint8Array[]): { bytes: Uint8Array; offsets: Uint32Array } {
  const offsets = new Uint32Array(entries.length + 1);
  for (const [index, entry] of entries.entries()) {
    offsets[index + 1] = offsets[index]! + entry.length;
  }
  const bytes = new Uint8Array(offsets[entries.length]!);
  for (const [index, entry] of entries.entries()) bytes.set(entry, offsets[index]);
  return { bytes, offsets };
}

/** Pack `records` (distinct keys) into a table. */
export function buildRecordTable(records: Iterable<readonly [string, unknown]>): RecordTableParts {
  const keyBytes: Uint8Array[] = [];
  const valueBytes: Uint8Array[] = [];
  for (const [key, value] of records) {
    keyBytes.push(encoder.encode(key));
    valueBytes.push(encoder.encode(JSON.stringify(value)));
  }
  const keys = packed(keyBytes);
  const values = packed(valueBytes);
  const slots = new Int32Array(2 ** Math.ceil(Math.log2(Math.max(1, keyBytes.length) * 2)));
  const mask = slots.length - 1;
  for (const [index, key] of keyBytes.entries()) {
    let slot = hashOf(key) & mask;
    while (slots[slot] !== 0) slot = (slot + 1) & mask;
    slots[slot] = index + 1;
  }
  return {
    slots,
    keys: keys.bytes,
    keyOffsets: keys.offsets,
    values: values.bytes,
    valueOffsets: values.offsets,
  };
}

/** The buffers of a table, to transfer it to another thread. */
export function recordTableBuffers(parts: RecordTableParts): ArrayBuffer[] {
  return [parts.slots, parts.keys, parts.keyOffsets, parts.values, parts.valueOffsets].map(
    (array) => array.buffer as ArrayBuffer,
  );
}

function recordTableBytes(parts: RecordTableParts): number {
  return recordTableBuffers(parts).reduce((total, buffer) => total + buffer.byteLength, 0);
}

/** Look records up in `parts`, turning each decoded JSON record into a `T` with `decode`. */
export function openRecordTable<T extends object>(
  parts: RecordTableParts,
  decode: (record: unknown) => T,
): RecordLookup<T> {
  const { slots, keys, keyOffsets, values, valueOffsets } = parts;
  const mask = slots.length - 1;
  const decodedBytes = Math.max(
    1,
    Math.min(MAX_DECODED_BYTES, values.length * DECODED_BYTES_PER_JSON_BYTE),
  );
  const decoded = new LRUCache<string, T>({ maxSize: decodedBytes });
  const keyIs = (entry: number, wanted: Uint8Array): boolean => {
    const start = keyOffsets[entry]!;
    if (keyOffsets[entry + 1]! - start !== wanted.length) return false;
    for (let index = 0; index < wanted.length; index++) {
      if (keys[start + index] !== wanted[index]) return false;
    }
    return true;
  };
  return {
    get(key) {
      const known = decoded.get(key);
      if (known) return known;
      const wanted = encoder.encode(key);
      for (let slot = hashOf(wanted) & mask; ; slot = (slot + 1) & mask) {
        const entry = slots[slot]! - 1;
        if (entry < 0) return undefined;
        if (keyIs(entry, wanted)) {
          const record = values.subarray(valueOffsets[entry], valueOffsets[entry + 1]);
          const value = decode(JSON.parse(decoder.decode(record)));
          // A record over the whole budget is returned but not kept (lru-cache refuses it).
          decoded.set(key, value, {
            size: Math.max(1, (record.length + key.length) * DECODED_BYTES_PER_JSON_BYTE),
          });
          return value;
        }
      }
    },
    bytes: recordTableBytes(parts) + decodedBytes,
  };
}
