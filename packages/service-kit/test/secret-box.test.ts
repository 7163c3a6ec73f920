import { createDecipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  isSealed,
  keyringFromEnv,
  open,
  parseKeyring,
  rewrap,
  seal,
  SecretBindingError,
  unboundForMigrations,
  type SecretBinding,
} from '../src/secret-box.js';

const keyEntry = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ROW_A: SecretBinding = {
  service: 'ordering',
  table: 'webhook_endpoints',
  tenant: '0b5c1f0e-5a4e-4c43-9d0a-8f2f3c1d1a01',
  row: '0b5c1f0e-5a4e-4c43-9d0a-8f2f3c1d1a01',
  mode: 'live',
};
const KEEP = { rotateDataKey: false };

describe('secret-box', () => {
  it('seals under the first key, a fresh data key each time, and opens what it sealed', () => {
    const keyring = parseKeyring(`${keyEntry('k2')},${keyEntry('k1')}`);
    const first = seal(keyring, ROW_A, SECRET);
    const second = seal(keyring, ROW_A, SECRET);
    expect(first).not.toBe(second);
    for (const sealed of [first, second]) {
      expect(sealed).toMatch(/^sb2\.k2\./);
      expect(isSealed(sealed)).toBe(true);
      expect(sealed).not.toContain(SECRET.slice('whsec_'.length));
      expect(open(keyring, ROW_A, sealed)).toBe(SECRET);
    }
    expect(isSealed(SECRET)).toBe(false);
  });

  it('re-wraps under the new first key, after which the old key can leave the keyring', () => {
    const old = keyEntry('old');
    const next = keyEntry('next');
    const sealed = seal(parseKeyring(old), ROW_A, SECRET);
    const both = parseKeyring(`${next},${old}`);
    expect(open(both, ROW_A, sealed)).toBe(SECRET);
    const moved = rewrap(both, ROW_A, sealed, KEEP);
    expect(moved).toMatch(/^sb2\.next\./);
    // The ciphertext is unchanged: only the data key's wrapping is.
    expect(moved.split('.')[3]).toBe(sealed.split('.')[3]);
    expect(rewrap(both, ROW_A, moved, KEEP)).toBe(moved);
    expect(open(parseKeyring(next), ROW_A, moved)).toBe(SECRET);
  });

  it('rotates the data key on request: a dump under the old master and data keys opens nothing after', () => {
    const old = keyEntry('old');
    const next = keyEntry('next');
    const sealed = seal(parseKeyring(old), ROW_A, SECRET);
    const both = parseKeyring(`${next},${old}`);
    const rotated = rewrap(both, ROW_A, sealed, { rotateDataKey: true });
    expect(rotated).toMatch(/^sb2\.next\./);
    expect(open(parseKeyring(next), ROW_A, rotated)).toBe(SECRET);
    // A fresh data key: the old one (unwrapped from the dump with the old master key) does not
    // decrypt the new ciphertext.
    const oldDataKey = unwrapDataKey(parseKeyring(old), ROW_A, sealed);
    const body = Buffer.from(rotated.split('.')[3]!, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', oldDataKey, body.subarray(0, 12));
    decipher.setAuthTag(body.subarray(12, 28));
    decipher.setAAD(bodyAad(ROW_A));
    decipher.update(body.subarray(28));
    expect(() => decipher.final()).toThrow();
    // Even under the current key, a rotation re-seals (a new data key every time).
    const again = rewrap(parseKeyring(next), ROW_A, rotated, { rotateDataKey: true });
    expect(again).not.toBe(rotated);
    expect(open(parseKeyring(next), ROW_A, again)).toBe(SECRET);
  });

  it('opens only for the row it was sealed for: not another row, tenant, mode, table or service', () => {
    const keyring = parseKeyring(keyEntry('k'));
    const sealed = seal(keyring, ROW_A, SECRET);
    const others: SecretBinding[] = [
      { ...ROW_A, row: '0b5c1f0e-5a4e-4c43-9d0a-8f2f3c1d1a02' },
      { ...ROW_A, tenant: '0b5c1f0e-5a4e-4c43-9d0a-8f2f3c1d1a02' },
      { ...ROW_A, mode: 'test' },
      { ...ROW_A, table: 'webhook_streams' },
      { ...ROW_A, service: 'stores' },
    ];
    for (const other of others) {
      expect(() => open(keyring, other, sealed), JSON.stringify(other)).toThrow(SecretBindingError);
      expect(() => open(keyring, other, sealed)).toThrow(/does not open for/);
      // Rotation checks the binding too: a copied value is not laundered into a valid one.
      expect(() => rewrap(keyring, other, sealed, KEEP)).toThrow(SecretBindingError);
      expect(() => rewrap(keyring, other, sealed, { rotateDataKey: true })).toThrow(
        SecretBindingError,
      );
    }
  });

  it('opens unbound sb1 values only for migrations', () => {
    const keyring = parseKeyring(keyEntry('k'));
    const unbound = unboundForMigrations.seal(keyring, SECRET);
    expect(unbound).toMatch(/^sb1\.k\./);
    expect(isSealed(unbound)).toBe(false);
    expect(unboundForMigrations.isSealed(unbound)).toBe(true);
    expect(unboundForMigrations.open(keyring, unbound)).toBe(SECRET);
    expect(() => open(keyring, ROW_A, unbound)).toThrow(SecretBindingError);
    expect(() => open(keyring, ROW_A, unbound)).toThrow(/unbound \(sb1\)/);
    expect(() => unboundForMigrations.open(keyring, seal(keyring, ROW_A, SECRET))).toThrow(
      /not a sealed secret/,
    );
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

/** The associated data a ciphertext is bound by (the format's, restated: a check of it). */
function bodyAad(binding: SecretBinding): Buffer {
  const { service, table, tenant, row, mode } = binding;
  return Buffer.from(
    JSON.stringify(['pcp-secret-box/2', 'body', service, table, tenant, row, mode]),
  );
}

/** The data key of a sealed value, unwrapped as someone holding the master key would. */
function unwrapDataKey(
  keyring: ReturnType<typeof parseKeyring>,
  binding: SecretBinding,
  sealed: string,
): Buffer {
  const [, keyId, wrapped] = sealed.split('.');
  const bytes = Buffer.from(wrapped!, 'base64url');
  const decipher = createDecipheriv(
    'aes-256-gcm',
    keyring.keys.get(keyId!)!,
    bytes.subarray(0, 12),
  );
  decipher.setAuthTag(bytes.subarray(12, 28));
  const { service, table, tenant, row, mode } = binding;
  decipher.setAAD(
    Buffer.from(JSON.stringify(['pcp-secret-box/2', 'key', service, table, tenant, row, mode])),
  );
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
}
