import { createLogger } from '@pcp/service-kit';
import { Writable } from 'node:stream';

/**
 * A logger that keeps everything logged through it, one parsed line each, for assertions.
 * It is the services' own (`createLogger`: redaction, request and trace ids), so tests see
 * the lines production would write.
 */
export function capturingLogger(level: 'info' | 'debug' | 'trace' = 'info') {
  const lines: { msg: string; level: number; [field: string]: unknown }[] = [];
  /** Every line exactly as written, for searching the raw text. */
  const raw: string[] = [];
  const logger = createLogger(
    'test',
    level,
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        const text = chunk.toString();
        raw.push(text);
        lines.push(JSON.parse(text) as (typeof lines)[number]);
        done();
      },
    }),
  );
  return { logger, lines, raw };
}
