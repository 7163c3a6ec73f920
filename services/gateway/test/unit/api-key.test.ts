import { describe, expect, it } from 'vitest';
import {
  apiKeyMatches,
  bearerToken,
  generateApiKey,
  hashApiKey,
  parseApiKey,
} from '../../src/auth/api-key.js';

const KEY_SHAPE = /^pcp_(live|test)_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/;

describe('generateApiKey', () => {
  it.each(['live', 'test'] as const)(
    'makes pcp_%s_<16 hex>_<43 base64url> keys whose id and hash match',
    (mode) => {
      const { keyId, apiKey, keyHash } = generateApiKey(mode);
      expect(apiKey).toMatch(KEY_SHAPE);
      expect(keyId).toMatch(/^[0-9a-f]{16}$/);
      expect(apiKey.startsWith(`pcp_${mode}_${keyId}_`)).toBe(true);
      expect(keyHash).toHaveLength(32);
      expect(keyHash.equals(hashApiKey(apiKey))).toBe(true);
      expect(parseApiKey(apiKey)).toBe(keyId);
    },
  );

  it('never repeats a key', () => {
    const keys = new Set(
      Array.from({ length: 200 }, (_, i) => generateApiKey(i % 2 ? 'live' : 'test').apiKey),
    );
    expect(keys.size).toBe(200);
    for (const key of keys) expect(key).toMatch(KEY_SHAPE);
  });
});

describe('parseApiKey', () => {
  const { apiKey, keyId } = generateApiKey('live');
  const secret = apiKey.slice(`pcp_live_${keyId}_`.length);

  it('returns the key id of a well-formed key, of either mode or made before modes', () => {
    expect(parseApiKey(apiKey)).toBe(keyId);
    expect(parseApiKey(`pcp_test_${keyId}_${secret}`)).toBe(keyId);
    expect(parseApiKey(`pcp_${keyId}_${secret}`)).toBe(keyId);
    expect(parseApiKey(`pcp_0123456789abcdef_${'A'.repeat(43)}`)).toBe('0123456789abcdef');
    expect(parseApiKey(`pcp_0123456789abcdef_${'-_'.repeat(21)}z`)).toBe('0123456789abcdef');
  });

  it.each([
    ['wrong prefix', `pcx_${keyId}_${secret}`],
    ['upper-case prefix', `PCP_${keyId}_${secret}`],
    ['no prefix', `${keyId}_${secret}`],
    ['short key id', `pcp_${keyId.slice(1)}_${secret}`],
    ['long key id', `pcp_${keyId}0_${secret}`],
    ['upper-case key id', `pcp_${'ABCDEF0123456789'}_${secret}`],
    ['non-hex key id', `pcp_${'g'.repeat(16)}_${secret}`],
    ['short secret', `pcp_${keyId}_${secret.slice(1)}`],
    ['long secret', `${apiKey}A`],
    ['padding', `${apiKey.slice(0, -1)}=`],
    ['plus in secret', `pcp_${keyId}_+${secret.slice(1)}`],
    ['leading space', ` ${apiKey}`],
    ['trailing space', `${apiKey} `],
    ['trailing newline', `${apiKey}\n`],
    ['inner space', `pcp_${keyId}_ ${secret.slice(1)}`],
    ['empty', ''],
    ['missing separator', `pcp_${keyId}${secret}`],
    ['unknown mode', `pcp_prod_${keyId}_${secret}`],
    ['upper-case mode', `pcp_TEST_${keyId}_${secret}`],
    ['mode twice', `pcp_test_live_${keyId}_${secret}`],
    ['mode after the id', `pcp_${keyId}_test_${secret}`],
  ])('rejects a %s', (_label, text) => {
    expect(parseApiKey(text)).toBeNull();
  });
});

describe('apiKeyMatches', () => {
  it('is true only for the key the hash was made from', () => {
    const key = generateApiKey('test');
    const other = generateApiKey('test');
    expect(apiKeyMatches(key.apiKey, key.keyHash)).toBe(true);
    expect(apiKeyMatches(other.apiKey, key.keyHash)).toBe(false);
    // Same id, other secret.
    const forged = `pcp_test_${key.keyId}_${other.apiKey.slice(-43)}`;
    expect(parseApiKey(forged)).toBe(key.keyId);
    expect(apiKeyMatches(forged, key.keyHash)).toBe(false);
    // Same id and secret, the other mode in the text: the hash covers the mode.
    const liveText = key.apiKey.replace(/^pcp_test_/, 'pcp_live_');
    expect(apiKeyMatches(liveText, key.keyHash)).toBe(false);
    // A stored hash of another length never matches (and does not throw).
    expect(apiKeyMatches(key.apiKey, key.keyHash.subarray(0, 16))).toBe(false);
    expect(apiKeyMatches(key.apiKey, Buffer.alloc(0))).toBe(false);
  });
});

describe('bearerToken', () => {
  it('reads the token of a Bearer header, whatever the scheme’s case', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('BEARER abc')).toBe('abc');
    expect(bearerToken('BeArEr pcp_0123456789abcdef_x')).toBe('pcp_0123456789abcdef_x');
  });

  it('tolerates extra spaces around the token', () => {
    expect(bearerToken('Bearer    abc')).toBe('abc');
    expect(bearerToken('Bearer abc   ')).toBe('abc');
  });

  it('returns null for a missing header, another scheme or a malformed value', () => {
    expect(bearerToken(undefined)).toBeNull();
    expect(bearerToken('')).toBeNull();
    expect(bearerToken('Basic x')).toBeNull();
    expect(bearerToken('Basic dXNlcjpwYXNz')).toBeNull();
    expect(bearerToken('Bearer')).toBeNull();
    expect(bearerToken('Bearer ')).toBeNull();
    expect(bearerToken('Bearerabc')).toBeNull();
    expect(bearerToken('Bearer abc def')).toBeNull();
    expect(bearerToken('abc')).toBeNull();
    expect(bearerToken('Token abc')).toBeNull();
  });
});
