import { get, type IncomingMessage } from 'node:http';
import { expect } from 'vitest';

/** One server-sent event as a client parses it. */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** An open stream: the events so far, as they arrive. */
export interface OpenStream {
  readonly status: number;
  readonly events: SseEvent[];
  /** The body as it arrived (a refused stream's ProblemDetail). */
  text(): string;
  waitFor(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  /** True once the server ended the response (or the connection went). */
  ended(): boolean;
  /** Drop the connection, as a network would. */
  drop(): void;
}

/**
 * Open a stream with its own connection (no pool), so dropping it closes the socket as a
 * network failure would.
 */
export async function openSse(url: URL, headers: Record<string, string>): Promise<OpenStream> {
  const request = get(url, { agent: false, headers });
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    request.once('response', resolve).once('error', reject);
  });
  const events: SseEvent[] = [];
  let body = '';
  let buffer = '';
  let ended = false;
  response.setEncoding('utf8');
  response.on('error', () => undefined);
  response.once('close', () => (ended = true));
  response.on('data', (text: string) => {
    body += text;
    buffer += text;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = { event: 'message', data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) event.id = line.slice(4);
        else if (line.startsWith('event: ')) event.event = line.slice(7);
        else if (line.startsWith('data: ')) event.data = line.slice(6);
      }
      if (event.data !== '') events.push(event);
    }
  });
  return {
    status: response.statusCode ?? 0,
    events,
    text: () => body,
    async waitFor(count, timeoutMs = 10_000) {
      await expect.poll(() => events.length, { timeout: timeoutMs }).toBeGreaterThanOrEqual(count);
      return events.slice(0, count);
    },
    ended: () => ended,
    drop() {
      request.destroy();
    },
  };
}
