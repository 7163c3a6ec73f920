import {
  closeSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

/** Bytes read at once while replaying, and written at once while rewriting. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * An append-only file of JSON lines, `journal.jsonl` in its folder. An append is written before
 * `append` returns (no fsync: a process that dies, SIGKILL included, keeps it; a machine that
 * loses power may lose the last ones). `rewrite` writes a new file beside it, fsyncs it and
 * renames it over the old one, so a crash midway leaves one whole file or the other.
 */
export interface Journal {
  /** Write one line; after one fails (a full disk), every later one throws that error too. */
  append(value: unknown): void;
  /** Replace the whole file with `values`, one line each; returns how many (fails as `append`). */
  rewrite(values: Iterable<unknown>): number;
  /** Why the journal stopped taking lines, if it did. */
  readonly failure: Error | undefined;
  close(): void;
}

/** Where the journal reports a torn last line (`warn`) and the failure of a write (`error`). */
export type Log = (level: 'warn' | 'error', message: string) => void;

/**
 * Open (or create) the journal in `dir` and pass each line, parsed, to `replay`, oldest first.
 * A last line cut short by a crash mid-write is cut off the file with a warning; an unreadable
 * line before the last, or an error `replay` throws, stops the opening with the line's number.
 */
export function openJournal(dir: string, replay: (value: unknown) => void, log: Log): Journal {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'journal.jsonl');
  const next = `${path}.next`;
  // Left by a crash during a rewrite, before its rename: the journal itself is whole.
  rmSync(next, { force: true });
  let fd = openSync(path, 'a+', 0o600);
  let failure: Error | undefined;

  try {
    const { end, torn } = readLines(fd, (value, number) => {
      try {
        replay(value);
      } catch (error) {
        throw new Error(`line ${number}: ${(error as Error).message}`, { cause: error });
      }
    });
    if (torn > 0) {
      log(
        'warn',
        `${path}: ignored its last line (${torn} bytes), cut short by a crash as it was written`,
      );
      ftruncateSync(fd, end);
    }
  } catch (error) {
    closeSync(fd);
    throw new Error(`${path}: ${(error as Error).message}`, { cause: error });
  }

  /** Run a write; its first failure becomes the journal's and is thrown for every later one. */
  const guarded = <T>(write: () => T): T => {
    if (failure) throw failure;
    try {
      return write();
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
      log('error', `${path}: ${failure.message}; nothing is answered until a restart`);
      throw failure;
    }
  };

  return {
    append(value) {
      guarded(() => {
        const line = `${JSON.stringify(value)}\n`;
        const written = writeSync(fd, line);
        if (written !== Buffer.byteLength(line)) {
          throw new Error(`${path}: wrote ${written} of ${Buffer.byteLength(line)} bytes`);
        }
      });
    },
    rewrite(values) {
      return guarded(() => {
        const out = openSync(next, 'w', 0o600);
        let lines = 0;
        try {
          let chunk = '';
          for (const value of values) {
            lines++;
            chunk += `${JSON.stringify(value)}\n`;
            if (chunk.length >= CHUNK_BYTES) {
              writeSync(out, chunk);
              chunk = '';
            }
          }
          writeSync(out, chunk);
          fsyncSync(out);
        } catch (error) {
          rmSync(next, { force: true });
          throw error;
        } finally {
          closeSync(out);
        }
        renameSync(next, path);
        // The rename itself survives a power loss once the folder is synced.
        const folder = openSync(dir, 'r');
        try {
          fsyncSync(folder);
        } finally {
          closeSync(folder);
        }
        const reopened = openSync(path, 'a', 0o600);
        closeSync(fd);
        fd = reopened;
        return lines;
      });
    },
    get failure() {
      return failure;
    },
    close: () => closeSync(fd),
  };
}

/**
 * Call `onLine` with each line of the file that parses as JSON, with its number (from 1).
 * Returns where the good lines end and how many bytes follow them: a last line without its
 * newline, or one that does not parse (a crash mid-write; a power loss may leave zeros).
 * A line that does not parse with more after it is damage, not a crash: it throws.
 */
function readLines(
  fd: number,
  onLine: (value: unknown, number: number) => void,
): { end: number; torn: number } {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let pending = Buffer.alloc(0);
  let position = 0;
  let number = 0;
  let end = 0;
  let unreadable: { number: number; length: number } | undefined;
  for (;;) {
    const read = readSync(fd, buffer, 0, buffer.length, position);
    if (read === 0) break;
    position += read;
    const data = pending.length > 0 ? Buffer.concat([pending, buffer.subarray(0, read)]) : buffer;
    const length = pending.length + read;
    let start = 0;
    for (let newline = data.indexOf(10, start); newline !== -1 && newline < length;) {
      number++;
      if (unreadable) throw new Error(`line ${unreadable.number} is not JSON`);
      let value: unknown;
      try {
        value = JSON.parse(data.toString('utf8', start, newline));
      } catch {
        unreadable = { number, length: newline + 1 - start };
      }
      if (!unreadable) {
        onLine(value, number);
        end += newline + 1 - start;
      }
      start = newline + 1;
      newline = data.indexOf(10, start);
    }
    pending = Buffer.from(data.subarray(start, length));
  }
  return { end, torn: pending.length + (unreadable?.length ?? 0) };
}
