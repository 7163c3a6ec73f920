import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isSealed, keyringFromEnv, open, parseKeyring, rewrap, seal } from '../src/secret-box.js';

const keyEntry = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('secret-box', () => {
  it('seals under the first key, a fresh data key each time, and opens what it sealed', () => {
    const keyring = parseKeyring(`${keyEntry('k2')},${keyEntry('k1')}`);
    const first = seal(keyring, SECRET);
    const second = seal(keyring, SECRET);
    expect(first).not.toBe(second);
    for (const sealed of [first, second]) {
      expect(sealed).toMatch(/^sb1\.k2\./);
      expect(isSealed(sealed)).toBe(true);
      expect(sealed).not.toContain(SECRET.slice('whsec_'.length));
      expect(open(keyring, sealed)).toBe(SECRET);
    }
    expect(isSealed(SECRET)).toBe(false);
  });

  it('re-wraps under the new first key, after which the old key can leave the keyring', () => {
    const old = keyEntry('old');
    const next = keyEntry('next');
    const sealed = seal(parseKeyring(old), SECRET);
    const both = parseKeyring(`${next},${old}`);
    expect(open(both, sealed)).toBe(SECRET);
    const moved = rewrap(both, sealed);
    expect(moved).toMatch(/^sb1\.next\./);
    // The ciphertext is unchanged: only the data key's wrapping is.
    expect(moved.split('.')[3]).toBe(sealed.split('.')[3]);
    expect(rewrap(both, moved)).toBe(moved);
    expect(open(parseKeyring(next), moved)).toBe(SECRET);
  });

  it('fails loudly on a key the keyring lacks, and on an altered value', () => {
    const sealed = seal(parseKeyring(keyEntry('gone')), SECRET);
    const other = parseKeyring(keyEntry('other'));
    expect(() => open(other, sealed)).toThrow(/sealed with key "gone", which SECRETS_KEYS lacks/);
    expect(() => rewrap(other, sealed)).toThrow(/"gone"/);
    // Same key id, different key bytes: authentication fails rather than giving garbage.
    expect(() => open(parseKeyring(keyEntry('gone')), sealed)).toThrow();
    const keyring = parseKeyring(keyEntry('k'));
    const good = seal(keyring, SECRET);
    const parts = good.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[body.length - 1]! ^= 1;
    parts[3] = body.toString('base64url');
    expect(() => open(keyring, parts.join('.'))).toThrow();
    expect(() => open(keyring, SECRET)).toThrow(/not a sealed secret/);
  });

  it('refuses malformed keyrings', () => {
    for (const text of [
      '',
      'nokey',
      'k:',
      `k:${randomBytes(16).toString('base64')}`,
      'bad id:AAAA',
    ]) {
      expect(() => parseKeyring(text), text).toThrow(/SECRETS_KEYS/);
    }
    const entry = keyEntry('twice');
    expect(() => parseKeyring(`${entry},${entry}`)).toThrow(/listed twice/);
  });

  it('takes SECRETS_KEYS, falls back to the dev key outside production, and refuses production without it', () => {
    const entry = keyEntry('prod1');
    expect(keyringFromEnv({ SECRETS_KEYS: entry, NODE_ENV: 'production' }).currentKeyId).toBe(
      'prod1',
    );
    expect(keyringFromEnv({}).currentKeyId).toBe('dev');
    expect(keyringFromEnv({ NODE_ENV: 'test' }).currentKeyId).toBe('dev');
    expect(() => keyringFromEnv({ NODE_ENV: 'production' })).toThrow(
      /SECRETS_KEYS: required in production/,
    );
    expect(() => keyringFromEnv({ NODE_ENV: 'production', SECRETS_KEYS: ' ' })).toThrow(
      /required in production/,
    );
  });
});
