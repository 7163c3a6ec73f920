import secureJson from 'secure-json-parse';
import { AppError } from './app-error.js';

/** What a caller is told about a body that is not usable JSON (the gateway says the same). */
export const jsonBodyProblems = {
  empty: 'The JSON body is empty',
  invalid: 'The body is not valid JSON',
  forbiddenKey: 'The body contains a forbidden property name',
} as const;

const decoder = new TextDecoder();

/**
 * Parse JSON bytes as Fastify parses an HTTP body (UTF-8, a leading BOM skipped, and
 * `__proto__` or `constructor.prototype` keys refused by secure-json-parse, the library
 * Fastify uses), so a body the gateway forwards unparsed meets the same rules. Throws
 * REQUEST_INVALID.
 */
export function parseJsonBytes(bytes: Uint8Array): unknown {
  if (bytes.length === 0) throw new AppError('REQUEST_INVALID', jsonBodyProblems.empty);
  try {
    return secureJson.parse(decoder.decode(bytes));
  } catch (error) {
    throw new AppError(
      'REQUEST_INVALID',
      isForbiddenKeyError(error) ? jsonBodyProblems.forbiddenKey : jsonBodyProblems.invalid,
    );
  }
}

/** secure-json-parse's refusal of `__proto__` and `constructor.prototype` keys. */
export function isForbiddenKeyError(error: unknown): boolean {
  return error instanceof Error && /forbidden prototype property/i.test(error.message);
}

/** JSON bytes from a peer inside the platform (a reply, an event), or undefined if not JSON. */
export function tryParseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
}
