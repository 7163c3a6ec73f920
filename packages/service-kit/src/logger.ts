import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Paths that must never reach a log line: credentials and card data. */
const redactedPaths = [
  'authorization',
  'apiKey',
  'req.headers.authorization',
  'headers.authorization',
  '*.apiKey',
  '*.cardNumber',
  '*.cvc',
  '*.secret',
];

/** JSON logs (one line each) with the service name and credential redaction. */
export function createLogger(service: string, level = 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: redactedPaths, censor: '[redacted]' },
  });
}
