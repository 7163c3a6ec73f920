import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { logContextFields } from './log-context.js';

export type { Logger } from 'pino';

const CENSOR = '[redacted]';

/**
 * Fields that must never reach a log line, wherever the code puts them: credentials (the
 * gateway's `Authorization: Bearer` key, console session cookies and CSRF tokens, webhook signing secrets, the processor's key,
 * passwords) and card data. Paths reach two levels down (`body.card.cvc`).
 */
const secretFields = [
  'authorization',
  'cookie',
  'apiKey',
  'csrfToken',
  'key',
  'secret',
  'previousSecret',
  'webhookSecret',
  'password',
  'processorApiKey',
  'PAYMENT_PROCESSOR_API_KEY',
  'SANDBOX_PROCESSOR_API_KEY',
  'PAYMENTS_CARD_HASH_KEY',
  'DATABASE_URL',
  'REDIS_URL',
  'NATS_URL',
  'cardNumber',
  'cvc',
  'cvv',
  'expMonth',
  'expYear',
];
const redactedPaths = [
  ...secretFields,
  ...secretFields.map((field) => `*.${field}`),
  ...secretFields.map((field) => `*.*.${field}`),
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
  '*.*.headers.authorization',
  'headers["x-csrf-token"]',
  '*.headers["x-csrf-token"]',
  'headers["set-cookie"]',
  '*.headers["set-cookie"]',
];

/**
 * Secrets inside strings (an error's message, a URL, a header copied into text), which
 * path redaction cannot see: API keys, bearer tokens, whsec_/sk_ secrets, a URL's password
 * and card numbers.
 */
const secretPatterns: readonly [RegExp, string][] = [
  [/\bpcp_(?:(?:live|test)_)?[0-9a-f]{16}_[A-Za-z0-9_-]+/g, CENSOR],
  [/\b(Bearer|Basic)\s+[^\s"',;]+/gi, `$1 ${CENSOR}`],
  [/\bwhsec_[A-Za-z0-9+/=_-]+/g, CENSOR],
  [/\bsk_(test|live)_[A-Za-z0-9_]+/g, CENSOR],
  [/(\/\/[^/\s:@]+):[^@\s/]*@/g, `$1:${CENSOR}@`],
];

/**
 * 13 to 19 digits, grouped by spaces or dashes, standing alone: not a run of digits inside an
 * id (a UUID such as 00000000-0000-4000-8000-0000000f1001 starts with 20 of them) or a word.
 * Only those that pass the Luhn check, as every card number does, are scrubbed.
 */
const cardNumberPattern = /(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])/g;

/** Whether the digits of `text` (separators ignored) pass the Luhn check of card numbers. */
function passesLuhn(text: string): boolean {
  const digits = text.replace(/\D/g, '');
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}

/** `text` with every secret pattern replaced. */
export function scrubSecrets(text: string): string {
  let result = text;
  for (const [pattern, replacement] of secretPatterns) {
    result = result.replace(pattern, replacement);
  }
  return result.replace(cardNumberPattern, (digits) => (passesLuhn(digits) ? CENSOR : digits));
}

/** Strings scrubbed in plain objects and arrays, a few levels deep (log objects are small). */
function scrubValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (depth === 0 || value === null || typeof value !== 'object') return value;
  // Errors go through the `err` serializer; other class instances are left to their own JSON.
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth - 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) result[key] = scrubValue(item, depth - 1);
  return result;
}

function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return scrubValue(error, 4);
  return scrubValue({ ...pino.stdSerializers.err(error) }, 4);
}

/**
 * JSON logs (one line each) with the service name, the request, partner, trace and span ids
 * of the work in hand (see `withLogContext`), and secrets redacted by field and by pattern.
 * `destination` defaults to stdout (tests capture lines with their own).
 */
export function createLogger(
  service: string,
  level = 'info',
  destination?: DestinationStream,
): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: logContextFields,
    redact: { paths: redactedPaths, censor: CENSOR },
    serializers: { err: serializeError, error: serializeError },
    formatters: {
      log: (object) => scrubValue(object, 5) as Record<string, unknown>,
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
