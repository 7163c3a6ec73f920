import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { isProduction } from './config.js';

/**
 * Envelope encryption of the secrets a service stores (signing secrets): each secret gets a
 * random data key (AES-256-GCM), and the data key is wrapped by a master key of the keyring
 * (AES-256-GCM too). A sealed value names its master key, so the keyring may hold several:
 * the first seals, all open, and `rewrap` moves a value to the first one
 * (docs/operations.md#secrets-at-rest).
 *
 * Each value is bound to the row holding it (a {@link SecretBinding}: service, table, tenant,
 * row, mode) as GCM associated data of both the wrapped data key and the ciphertext, so a
 * value copied into another row (another partner's, the other mode's) does not open there.
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
/**
 * Sealed values look like `sb2.<keyId>.<wrapped data key>.<ciphertext>` (base64url parts),
 * bound to their row. `sb1.` values (the same, unbound) open only through
 * {@link unboundForMigrations}.
 */
const SEALED_PREFIX = 'sb2.';
const UNBOUND_PREFIX = 'sb1.';

/** Where a sealed value is stored: it opens there and nowhere else. */
export interface SecretBinding {
  /** The service owning the table, e.g. `stores`. */
  readonly service: string;
  readonly table: string;
  /** The partner owning the row. */
  readonly tenant: string;
  /** The row's primary key. */
  readonly row: string;
  readonly mode: 'live' | 'test';
}

/** A sealed value that does not open for the row it was read from (copied, or altered). */
export class SecretBindingError extends Error {
  override readonly name = 'SecretBindingError';
}

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

/**
 * The associated data of a binding: a JSON array, so no field's content can pass for another
 * field's; `purpose` keeps a wrapped key and a ciphertext from standing in for each other.
 */
function associatedData(purpose: 'key' | 'body', binding: SecretBinding): Buffer {
  const { service, table, tenant, row, mode } = binding;
  return Buffer.from(
    JSON.stringify(['pcp-secret-box/2', purpose, service, table, tenant, row, mode]),
    'utf8',
  );
}

function rowOf(binding: SecretBinding): string {
  return `${binding.service}.${binding.table} row ${binding.row} (${binding.mode})`;
}

function encrypt(key: Buffer, plaintext: Buffer, aad?: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad) cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

function decrypt(key: Buffer, sealed: string, aad?: Buffer): Buffer {
  const bytes = Buffer.from(sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (aad) decipher.setAAD(aad);
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

/** Whether a stored value is sealed for a row (and not unbound, nor plaintext). */
export function isSealed(value: string): boolean {
  return value.startsWith(SEALED_PREFIX);
}

function parts(
  sealed: string,
  prefix: string,
): { keyId: string; wrappedKey: string; body: string } {
  const [tag, keyId, wrappedKey, body, ...rest] = sealed.split('.');
  if (`${tag}.` === UNBOUND_PREFIX && prefix === SEALED_PREFIX) {
    // An unbound value from before binding: the migration re-seals those, so one read now
    // was written (or copied) behind the service's back.
    throw new SecretBindingError('an unbound (sb1) sealed secret: it opens in no row');
  }
  if (`${tag}.` !== prefix || !keyId || !wrappedKey || !body || rest.length > 0) {
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

/** Authentication failures under a known key: the value was made for another row, or altered. */
function bound<T>(binding: SecretBinding, run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw new SecretBindingError(
      `the sealed secret does not open for ${rowOf(binding)}: sealed for another row, or altered`,
      { cause: error },
    );
  }
}

function unwrapDataKey(
  keyring: Keyring,
  binding: SecretBinding,
  keyId: string,
  wrappedKey: string,
): Buffer {
  const key = masterKey(keyring, keyId);
  return bound(binding, () => decrypt(key, wrappedKey, associatedData('key', binding)));
}

/** Seal a secret for the row `binding` names, under the keyring's current key. */
export function seal(keyring: Keyring, binding: SecretBinding, plaintext: string): string {
  const dataKey = randomBytes(KEY_BYTES);
  const master = masterKey(keyring, keyring.currentKeyId);
  const wrappedKey = encrypt(master, dataKey, associatedData('key', binding));
  const body = encrypt(dataKey, Buffer.from(plaintext, 'utf8'), associatedData('body', binding));
  return `${SEALED_PREFIX}${keyring.currentKeyId}.${wrappedKey}.${body}`;
}

/**
 * The secret a value sealed for `binding`'s row holds. Throws SecretBindingError when it was
 * sealed for another row (or is unbound, or altered), an Error when its key is not in the
 * keyring.
 */
export function open(keyring: Keyring, binding: SecretBinding, sealed: string): string {
  const { keyId, wrappedKey, body } = parts(sealed, SEALED_PREFIX);
  const dataKey = unwrapDataKey(keyring, binding, keyId, wrappedKey);
  return bound(binding, () =>
    decrypt(dataKey, body, associatedData('body', binding)).toString('utf8'),
  );
}

/**
 * The value moved to the keyring's current key: with `rotateDataKey`, opened and sealed again
 * under a fresh data key (so a dump taken under the old master key opens nothing once that
 * key is gone, even with the old data key); otherwise only its data key re-wrapped (the
 * ciphertext unchanged), or the same value when it already is under the current key. Both
 * check the binding, so a value copied from another row fails here too.
 */
export function rewrap(
  keyring: Keyring,
  binding: SecretBinding,
  sealed: string,
  options: { rotateDataKey: boolean },
): string {
  if (options.rotateDataKey) return seal(keyring, binding, open(keyring, binding, sealed));
  const { keyId, wrappedKey, body } = parts(sealed, SEALED_PREFIX);
  const dataKey = unwrapDataKey(keyring, binding, keyId, wrappedKey);
  if (keyId === keyring.currentKeyId) return sealed;
  const master = masterKey(keyring, keyring.currentKeyId);
  const current = encrypt(master, dataKey, associatedData('key', binding));
  return `${SEALED_PREFIX}${keyring.currentKeyId}.${current}.${body}`;
}

/**
 * Unbound `sb1.` values, for migrations only: the ones that sealed plaintext secrets before
 * values were bound, and the one that binds them (and their downs). Nothing else opens them,
 * so an unbound value copied into a row opens nowhere.
 */
export const unboundForMigrations = {
  isSealed: (value: string): boolean => value.startsWith(UNBOUND_PREFIX),
  seal: (keyring: Keyring, plaintext: string): string => {
    const dataKey = randomBytes(KEY_BYTES);
    const wrappedKey = encrypt(masterKey(keyring, keyring.currentKeyId), dataKey);
    const body = encrypt(dataKey, Buffer.from(plaintext, 'utf8'));
    return `${UNBOUND_PREFIX}${keyring.currentKeyId}.${wrappedKey}.${body}`;
  },
  open: (keyring: Keyring, sealed: string): string => {
    const { keyId, wrappedKey, body } = parts(sealed, UNBOUND_PREFIX);
    const dataKey = decrypt(masterKey(keyring, keyId), wrappedKey);
    return decrypt(dataKey, body).toString('utf8');
  },
};
