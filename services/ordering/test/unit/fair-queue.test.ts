import { describe, expect, it } from 'vitest';
import { createFairQueue } from '../../src/catalog/fair-queue.js';

/** Tasks that record their start and finish when told to. */
function gatedTasks() {
  const started: string[] = [];
  const finishers = new Map<string, () => void>();
  const task = (name: string) => () => {
    started.push(name);
    return new Promise<string>((resolve) => finishers.set(name, () => resolve(name)));
  };
  /** Finish a running task and let the queue start the next. */
  const finish = async (name: string) => {
    finishers.get(name)!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { started, task, finish };
}

/** A task the queue took (it answers undefined for one it refuses). */
function accepted<T>(outcome: Promise<T> | undefined): Promise<T> {
  if (!outcome) throw new Error('the queue refused a task it had room for');
  return outcome;
}

describe('compiles shared fairly among partners', () => {
  it('gives a free slot to the next partner in turn, not to the longest backlog', async () => {
    const queue = createFairQueue({ concurrency: 1, perPartner: 1, queuedPerPartner: 10 });
    const { started, task, finish } = gatedTasks();
    const outcomes = [
      accepted(queue.run('a', task('a1'))),
      accepted(queue.run('a', task('a2'))),
      accepted(queue.run('a', task('a3'))),
      accepted(queue.run('b', task('b1'))),
      accepted(queue.run('c', task('c1'))),
      accepted(queue.run('b', task('b2'))),
    ];
    for (const name of ['a1', 'b1', 'c1', 'a2', 'b2', 'a3']) await finish(name);
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
    expect(await Promise.all(outcomes)).toEqual(['a1', 'a2', 'a3', 'b1', 'c1', 'b2']);
  });

  it('runs no more of one partner at once than its share, leaving slots to others', async () => {
    const queue = createFairQueue({ concurrency: 3, perPartner: 1, queuedPerPartner: 10 });
    const { started, task, finish } = gatedTasks();
    const outcomes = [accepted(queue.run('a', task('a1'))), accepted(queue.run('a', task('a2')))];
    outcomes.push(accepted(queue.run('b', task('b1'))));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a1', 'b1']);
    await finish('a1');
    expect(started).toEqual(['a1', 'b1', 'a2']);
    await finish('a2');
    await finish('b1');
    await Promise.all(outcomes);
  });

  it('refuses a partner whose queue is full, and takes it again once a turn frees', async () => {
    const queue = createFairQueue({ concurrency: 1, perPartner: 1, queuedPerPartner: 2 });
    const { task, finish } = gatedTasks();
    const outcomes = [
      accepted(queue.run('a', task('a1'))),
      accepted(queue.run('a', task('a2'))),
      accepted(queue.run('a', task('a3'))),
    ];
    expect(queue.run('a', task('a4'))).toBeUndefined();
    // Another partner has a queue of its own.
    const other = accepted(queue.run('b', task('b1')));
    await finish('a1');
    expect(queue.run('a', task('a4'))).toBeUndefined(); // a2 waits behind b1's turn
    await finish('b1');
    const again = accepted(queue.run('a', task('a4')));
    for (const name of ['a2', 'a3', 'a4']) await finish(name);
    await Promise.all([...outcomes, other, again]);
  });
});
