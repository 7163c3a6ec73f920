import { setTimeout as sleep } from 'node:timers/promises';

export interface GroupCommitOptions {
  /** Items written by one call at most. */
  readonly maxBatch: number;
  /** How long the first item of an idle writer waits for others (0: the next turn). */
  readonly gatherMs: number;
}

/**
 * Group commit: items handed in while a batch is being written gather for the next one,
 * written as soon as the one before is done (an idle writer waits `gatherMs` for company
 * first); each caller's promise settles once its batch is written, with its own result. A
 * batch that fails is written again item by item, in order, so an item the database refuses
 * fails alone, not its batch companions.
 */
export function groupCommit<Item, Result>(
  write: (batch: Item[]) => Promise<Result[]>,
  options: GroupCommitOptions,
): (item: Item) => Promise<Result> {
  interface Waiting {
    item: Item;
    resolve: (result: Result) => void;
    reject: (error: unknown) => void;
  }
  let queue: Waiting[] = [];
  let writing = false;

  async function writeEach(batch: Waiting[]): Promise<void> {
    for (const waiting of batch) {
      try {
        waiting.resolve((await write([waiting.item]))[0]!);
      } catch (error) {
        waiting.reject(error);
      }
    }
  }

  async function flush(): Promise<void> {
    if (options.gatherMs > 0) await sleep(options.gatherMs);
    else await new Promise((resolve) => setImmediate(resolve));
    while (queue.length > 0) {
      const batch = queue.slice(0, options.maxBatch);
      queue = queue.slice(options.maxBatch);
      try {
        const results = await write(batch.map((waiting) => waiting.item));
        batch.forEach((waiting, index) => waiting.resolve(results[index]!));
      } catch (error) {
        if (batch.length === 1) batch[0]!.reject(error);
        else await writeEach(batch);
      }
    }
    writing = false;
  }

  return (item) =>
    new Promise<Result>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!writing) {
        writing = true;
        void flush();
      }
    });
}
