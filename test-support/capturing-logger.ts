import { Writable } from 'node:stream';
import { pino } from 'pino';

/** A logger that keeps everything logged through it, one parsed line each, for assertions. */
export function capturingLogger(level: 'info' | 'debug' | 'trace' = 'info') {
  const lines: { msg: string; level: number; [field: string]: unknown }[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
        done();
      },
    }),
  );
  return { logger, lines };
}
