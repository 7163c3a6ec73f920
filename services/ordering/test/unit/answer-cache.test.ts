import { describe, expect, it } from 'vitest';
import { createAnswerCache, entryBytes, type CachedAnswer } from '../../src/place/answer-cache.js';

const answer = (replyBytes: number, endUserId = 'buyer'): CachedAnswer => ({
  endUserId,
  rawHash: 'a'.repeat(64),
  reply: new Uint8Array(replyBytes),
});

describe('the in-process answer cache', () => {
  it('is bounded by bytes, not entries: the least recently used answers go first', () => {
    const small = answer(1_000);
    const weight = entryBytes('tenant', 'key-0', small);
    const cache = createAnswerCache(weight * 3);
    for (const key of ['key-0', 'key-1', 'key-2']) cache.set('tenant', key, small, 60_000);
    expect(cache.get('tenant', 'key-0')).toBe(small);
    // One large answer weighs as much as two small ones: the two least recent make room.
    const large = answer(2 * weight - entryBytes('tenant', 'key-3', answer(0)));
    cache.set('tenant', 'key-3', large, 60_000);
    expect(cache.bytes()).toBeLessThanOrEqual(weight * 3);
    expect(cache.get('tenant', 'key-1')).toBeUndefined();
    expect(cache.get('tenant', 'key-2')).toBeUndefined();
    expect(cache.get('tenant', 'key-0')).toBe(small);
    expect(cache.get('tenant', 'key-3')).toBe(large);
  });

  it('keeps no answer larger than the whole cache', () => {
    const cache = createAnswerCache(10_000);
    cache.set('tenant', 'key', answer(20_000), 60_000);
    expect(cache.get('tenant', 'key')).toBeUndefined();
    expect(cache.bytes()).toBe(0);
  });

  it("answers a key under its tenant only: another tenant's lookup of the same key misses", () => {
    const cache = createAnswerCache(1_000_000);
    const mine = answer(100);
    cache.set('tenant-a', 'shared-key', mine, 60_000);
    expect(cache.get('tenant-b', 'shared-key')).toBeUndefined();
    expect(cache.get('tenant-a', 'shared-key')).toBe(mine);
    const theirs = answer(100, 'someone');
    cache.set('tenant-b', 'shared-key', theirs, 60_000);
    expect(cache.get('tenant-a', 'shared-key')).toBe(mine);
    expect(cache.get('tenant-b', 'shared-key')).toBe(theirs);
  });

  it('forgets an answer once its time is up, and keeps none with no time left', () => {
    let now = 0;
    const cache = createAnswerCache(1_000_000, () => now);
    cache.set('tenant', 'key', answer(100), 1_000);
    now = 999;
    expect(cache.get('tenant', 'key')).toBeDefined();
    now = 1_000;
    expect(cache.get('tenant', 'key')).toBeUndefined();
    expect(cache.bytes()).toBe(0);
    cache.set('tenant', 'other', answer(100), 0);
    expect(cache.get('tenant', 'other')).toBeUndefined();
  });
});
