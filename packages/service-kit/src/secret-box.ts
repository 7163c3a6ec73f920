import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { isProduction } from './config.js';

/**
 * Envelope encryption of the secrets a service stores (signing secrets): each secret gets a
 * random data key (AES-256-GCM), and the data key is wrapped by a master key of the keyring
 * (AES-256-GCM too). A sealed value names its master key, so the keyring may hold several:
 * the first seals, all open, and `rewrap` moves a value to the first one
 * (docs/operations.md#secrets-at-rest).
 */

/** The environment variable holding the keyring: `keyId:base64(32 bytes)`, comma-separated. */
export const SECRETS_KEYS_ENV = 'SECRETS_KEYS';

/**
 * The key of local runs and tests (never production, which refuses to start without
 * SECRETS_KEYS): public, so what it seals is only as secret as the database.
 */
const DEV_KEYRING = 'dev:ZGV2LW9ubHkta2V5LW5vdC1mb3ItcHJvZHVjdGlvbiE=';

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Sealed values look like `sb1.<keyId>.<wrapped data key>.<ciphertext>` (base64url parts). */
const SEALED_PREFIX = 'sb1.';

export interface Keyring {
  /** The key that seals (the first listed). */
  readonly currentKeyId: string;
  readonly keys: ReadonlyMap<string, Buffer>;
}

/** Parse `keyId:base64,keyId:base64`; throws on anything malformed or duplicated. */
export function parseKeyring(text: string): Keyring {
  const keys = new Map<string, Buffer>();
  for (const entry of text.split(',').map((part) => part.trim())) {
    const separator = entry.indexOf(':');
    const id = entry.slice(0, separator);
    if (separator < 0 || !KEY_ID.test(id)) {
      throw new Error(
        `${SECRETS_KEYS_ENV}: each entry is keyId:base64 (keyId [A-Za-z0-9_-]{1,32})`,
      );
    }
    const key = Buffer.from(entry.slice(separator + 1), 'base64');
    if (key.length !== KEY_BYTES) {
      throw new Error(`${SECRETS_KEYS_ENV}: key ${id} is not the base64 of ${KEY_BYTES} bytes`);
    }
    if (keys.has(id)) throw new Error(`${SECRETS_KEYS_ENV}: key ${id} is listed twice`);
    keys.set(id, key);
  }
  const [currentKeyId] = keys.keys();
  if (currentKeyId === undefined) throw new Error(`${SECRETS_KEYS_ENV}: no key`);
  return { currentKeyId, keys };
}

/**
 * The keyring from SECRETS_KEYS; without it, the local development key, except in
 * production (NODE_ENV=production), which refuses to start.
 */
export function keyringFromEnv(env: NodeJS.ProcessEnv = process.env): Keyring {
  const text = env[SECRETS_KEYS_ENV];
  if (text !== undefined && text.trim() !== '') return parseKeyring(text);
  if (isProduction(env)) {
    throw new Error(
      `Invalid configuration:\n  ${SECRETS_KEYS_ENV}: required in production (keyId:base64 of 32 bytes)`,
    );
  }
  return parseKeyring(DEV_KEYRING);
}

function encrypt(key: Buffer, plaintext: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

function decrypt(key: Buffer, sealed: string): Buffer {
  const bytes = Buffer.from(sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

/** Whether a stored value is sealed (and not a plaintext one from before encryption). */
export function isSealed(value: string): boolean {
  return value.startsWith(SEALED_PREFIX);
}

function parts(sealed: string): { keyId: string; wrappedKey: string; body: string } {
  const [prefix, keyId, wrappedKey, body, ...rest] = sealed.split('.');
  if (`${prefix}.` !== SEALED_PREFIX || !keyId || !wrappedKey || !body || rest.length > 0) {
    throw new Error('not a sealed secret');
  }
  return { keyId, wrappedKey, body };
}

function masterKey(keyring: Keyring, keyId: string): Buffer {
  const key = keyring.keys.get(keyId);
  // Loud: a key dropped from the keyring before `rewrap-secrets` ran leaves secrets unreadable.
  if (!key) throw new Error(`secret sealed with key "${keyId}", which ${SECRETS_KEYS_ENV} lacks`);
  return key;
}

/** Seal a secret under the keyring's current key. */
export function seal(keyring: Keyring, plaintext: string): string {
  const dataKey = randomBytes(KEY_BYTES);
  const wrappedKey = encrypt(masterKey(keyring, keyring.currentKeyId), dataKey);
  const body = encrypt(dataKey, Buffer.from(plaintext, 'utf8'));
  return `${SEALED_PREFIX}${keyring.currentKeyId}.${wrappedKey}.${body}`;
}

/** The secret a sealed value holds; throws when its key is not in the keyring or it was altered. */
export function open(keyring: Keyring, sealed: string): string {
  const { keyId, wrappedKey, body } = parts(sealed);
  const dataKey = decrypt(masterKey(keyring, keyId), wrappedKey);
  return decrypt(dataKey, body).toString('utf8');
}

/**
 * The value with its data key wrapped by the current key (the ciphertext is unchanged), or
 * the same value when it already is.
 */
export function rewrap(keyring: Keyring, sealed: string): string {
  const { keyId, wrappedKey, body } = parts(sealed);
  if (keyId === keyring.currentKeyId) return sealed;
  const dataKey = decrypt(masterKey(keyring, keyId), wrappedKey);
  const current = encrypt(masterKey(keyring, keyring.currentKeyId), dataKey);
  return `${SEALED_PREFIX}${keyring.currentKeyId}.${current}.${body}`;
}
