/**
 * Work shared fairly among partners: at most `concurrency` tasks run at once, at most
 * `perPartner` of one partner's, and a free slot goes to the next partner in turn (round
 * robin), so one partner's backlog never delays another's first task by more than one task
 * per slot. Each partner may have `queuedPerPartner` tasks waiting; more are refused. Only
 * partners with work are remembered.
 */
export function createFairQueue(limits: {
  concurrency: number;
  perPartner: number;
  queuedPerPartner: number;
}) {
  interface Lane {
    running: number;
    waiting: (() => void)[];
    /**
     * Place in the round: the turn number of its last start. A new lane ranks just ahead of
     * the lane that started last (as if it joined the ring behind it), after every lane
     * that has waited longer.
     */
    rank: number;
  }
  const lanes = new Map<string, Lane>();
  let running = 0;
  let turns = 0;

  function startNext(): void {
    while (running < limits.concurrency) {
      let next: Lane | undefined;
      for (const lane of lanes.values()) {
        if (lane.waiting.length === 0 || lane.running >= limits.perPartner) continue;
        if (!next || lane.rank < next.rank) next = lane;
      }
      if (!next) return;
      turns += 1;
      next.rank = turns;
      next.running += 1;
      running += 1;
      next.waiting.shift()!();
    }
  }

  return {
    /** `task`'s outcome, run in `partner`'s turn; undefined (not run) when its queue is full. */
    run<T>(partner: string, task: () => Promise<T>): Promise<T> | undefined {
      const lane = lanes.get(partner) ?? { running: 0, waiting: [], rank: turns - 0.5 };
      if (lane.waiting.length >= limits.queuedPerPartner) return undefined;
      lanes.set(partner, lane);
      return new Promise<T>((resolve, reject) => {
        lane.waiting.push(() => {
          task()
            .then(resolve, reject)
            .finally(() => {
              lane.running -= 1;
              running -= 1;
              if (lane.running === 0 && lane.waiting.length === 0) lanes.delete(partner);
              startNext();
            });
        });
        startNext();
      });
    },
  };
}
