// The webhook receivers in a worker thread, so receiving and publishing do not stall each
// other; `ask` sends one message and resolves the worker's answer.
import type { Worker } from 'node:worker_threads';
import { sleep } from '../../helpers.js';
import { tsWorker } from '../../ts-modules.js';
import type { ReceiversMessage, ReceiversRequest } from './receivers.worker.js';

export interface Receivers {
  ports: number[];
  ask<T extends ReceiversRequest['type']>(
    message: Extract<ReceiversRequest, { type: T }>,
  ): Promise<Extract<ReceiversMessage, { type: T }>>;
  /** Close the servers and drop the failing partner's hung connections, then end the worker. */
  close(): Promise<void>;
}

function nextMessage(worker: Worker): Promise<ReceiversMessage> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ReceiversMessage) => {
      worker.off('error', onError);
      worker.off('exit', onExit);
      resolve(message);
    };
    const onError = (error: Error) => {
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      reject(error);
    };
    const onExit = (code: number) =>
      onError(new Error(`the receivers' worker exited (code ${code})`));
    worker.once('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
  });
}

/** Start `count` receivers (the last the failing partner's). */
export async function startReceivers(count: number, sampleEvery: number): Promise<Receivers> {
  const worker = tsWorker(new URL('./receivers.worker.ts', import.meta.url), {
    workerData: { count, sampleEvery },
  });
  let exited = false;
  worker.once('exit', () => {
    exited = true;
  });
  const ready = await nextMessage(worker);
  if (ready.type !== 'ready') throw new Error(`the receivers answered ${ready.type} first`);
  const ask = (<T extends ReceiversRequest['type']>(
    message: Extract<ReceiversRequest, { type: T }>,
  ) => {
    const answer = nextMessage(worker);
    worker.postMessage(message);
    return answer;
  }) as Receivers['ask'];
  return {
    ports: ready.ports,
    ask,
    async close() {
      if (exited) return;
      await Promise.race([ask({ type: 'close' }).catch(() => {}), sleep(5_000)]);
      await worker.terminate();
    },
  };
}
