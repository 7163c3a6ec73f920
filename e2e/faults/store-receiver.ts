import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * How the store answers a submission it has not seen: at once (`prompt`: it refuses
 * {@link PROMPT_REFUSAL_RATE} of them, 422), or after place's submission timeout (`late`: it
 * takes the order but place never hears so), or now and then 429 (busy: it did not take the
 * order) and 409 (it claims to have the order already). An order it has taken is always
 * answered 409 (it has it), one it refused 422 again.
 */
export type StoreMood = 'prompt' | 'late' | 'flaky';

/**
 * Orders a prompt store refuses: place's STORE_REJECTED, a final answer whose authorization
 * the saga must void (so its release on a store's refusal runs in every phase).
 */
export const PROMPT_REFUSAL_RATE = 0.1;

/**
 * A commerce partner's order-submission endpoint: it keeps every order it took (answered 2xx
 * or 409), which the platform must have placed by the end of the phase (the
 * same webhook-id on every resubmission; 2xx and 409 are acceptance, 429 an unknown outcome).
 */
export class StoreReceiver {
  mood: StoreMood = 'prompt';
  /** When each order was taken (ms since the epoch), by order id. */
  readonly taken = new Map<string, number>();
  /** Orders it refused (422), by order id. */
  readonly refused = new Set<string>();
  submissions = 0;
  #server: Server;

  private constructor(
    private readonly lateMs: number,
    private readonly random: () => number,
  ) {
    this.#server = createServer((request, response) => {
      request.resume();
      request.on('end', () => this.#answer(String(request.headers['webhook-id']), response));
    });
  }

  static async start(lateMs: number, random: () => number): Promise<StoreReceiver> {
    const receiver = new StoreReceiver(lateMs, random);
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/orders`;
  }

  /** Orders taken since `since` (ms since the epoch). */
  takenSince(since: number): string[] {
    return [...this.taken].filter(([, at]) => at >= since).map(([orderId]) => orderId);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #answer(orderId: string, response: ServerResponse): void {
    this.submissions += 1;
    const send = (status: number) => {
      if (!response.destroyed) response.writeHead(status).end();
    };
    if (this.taken.has(orderId)) return send(409);
    if (this.refused.has(orderId)) return send(422);
    const roll = this.random();
    if (this.mood === 'prompt' && roll < PROMPT_REFUSAL_RATE) {
      this.refused.add(orderId);
      return send(422);
    }
    if (this.mood === 'flaky' && roll < 0.3) return send(429);
    this.taken.set(orderId, Date.now());
    if (this.mood === 'flaky' && roll < 0.5) return send(409);
    if (this.mood === 'late') {
      setTimeout(() => send(202), this.lateMs);
      return;
    }
    send(202);
  }
}
