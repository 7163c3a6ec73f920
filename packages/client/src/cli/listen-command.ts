import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { unsafeBaseUrl } from './base-url.js';
import type { CommandIo } from './dry-run-command.js';

export const LISTEN_USAGE = `Usage: pcp listen --forward-to URL [--api-key KEY] [--base-url URL]

Streams your test-mode webhooks (GET /v1/marketfront/webhooks/stream) and forwards each
one to URL as a POST, signed per Standard Webhooks (webhook-id, webhook-timestamp,
webhook-signature) with the stream's secret, which it prints first, with pcp-version (the
API version of its body: your test endpoint's). Prints a line per
delivery with the status your URL answered. After a dropped connection it reconnects and
continues after the last event it got (Last-Event-ID): nothing is lost or repeated.

  --forward-to URL  where to POST each delivery (e.g. http://localhost:3000/webhooks)
  --api-key KEY     a test key (pcp_test_…); default: PCP_API_KEY
  --base-url URL    the platform's API; default: PCP_BASE_URL, else http://localhost:8080
                    (https, or plain http only to localhost, 127.0.0.1 or ::1)
  -h, --help        print this help

Stops on Ctrl-C. Exit status: 0 stopped, 1 refused (a live key, a wrong key), 2 usage (a
plain http base URL to another host included).
`;

/** The stream's first event: the secret forwarded deliveries are signed with. */
const OPENED_EVENT = 'pcp.stream_opened';
/** A forward gives up after this long (the platform's own webhook timeout). */
const FORWARD_TIMEOUT_MS = 10_000;

/** One server-sent event. */
interface StreamEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/** The events of a text/event-stream body, as they arrive (comments and `retry` skipped). */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: StreamEvent = { id: undefined, event: 'message', data: '' };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (event.data !== '' || event.event !== 'message') yield event;
        event = { id: undefined, event: 'message', data: '' };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') event.id = value;
      else if (field === 'event') event.event = value;
      else if (field === 'data') event.data = event.data === '' ? value : `${event.data}\n${value}`;
    }
  }
}

/** A delivery as the stream carries it. */
interface Delivery {
  webhookId: string;
  type: string;
  body: string;
  /** The API version `body` is in: sent as `pcp-version`, as a delivery has it. */
  apiVersion?: string;
}

export interface ListenOptions {
  baseUrl: string;
  apiKey: string;
  forwardTo: string;
  io: CommandIo;
  /** Stops listening. */
  signal: AbortSignal;
  /** Wait before reconnecting after a drop. */
  reconnectMs?: number;
}

/** Why a stream could not be opened for good (not worth reconnecting). */
class Refused extends Error {}

/** A dated API version's shape: nothing else from the stream goes into a header. */
const isVersion = (value: unknown): value is string =>
  typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value);

/** POST one delivery to the local URL, signed; the line to print. */
async function forward(
  options: ListenOptions,
  secret: string,
  delivery: Delivery,
): Promise<string> {
  const sentAt = new Date();
  const label = `${sentAt.toISOString()}  ${delivery.type}  ${delivery.webhookId}`;
  try {
    const response = await fetch(options.forwardTo, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'pcp-listen/1',
        'webhook-id': delivery.webhookId,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(delivery.webhookId, sentAt, delivery.body),
        ...(isVersion(delivery.apiVersion) ? { 'pcp-version': delivery.apiVersion } : {}),
      },
      body: delivery.body,
      signal: AbortSignal.any([options.signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
    });
    await response.arrayBuffer();
    return `${label}  -> ${response.status}`;
  } catch (error) {
    return `${label}  -> failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * Listen until `signal` aborts: open the stream (resuming after the last event got), forward
 * each delivery in order, reconnect after a drop. Throws `Refused` when the platform refuses
 * the stream for good (a live key, a wrong one).
 */
export async function listen(options: ListenOptions): Promise<void> {
  const { io, signal } = options;
  const url = new URL('/v1/marketfront/webhooks/stream', options.baseUrl);
  let lastEventId: string | undefined;
  let secret: string | undefined;
  while (!signal.aborted) {
    try {
      const response = await fetch(url, {
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          accept: 'text/event-stream',
          ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
        },
        signal,
      });
      if (!response.ok || !response.body) {
        const text = await response.text();
        let detail = text;
        try {
          const problem = JSON.parse(text) as { code?: string; detail?: string };
          detail = `${problem.code ?? response.status}: ${problem.detail ?? text}`;
        } catch {
          // Not a ProblemDetail: the text as it came.
        }
        if (response.status >= 400 && response.status < 500 && response.status !== 429) {
          throw new Refused(`The platform refused the stream (HTTP ${response.status}) ${detail}`);
        }
        throw new Error(`HTTP ${response.status} ${detail}`);
      }
      for await (const event of serverSentEvents(response.body)) {
        if (event.event === OPENED_EVENT) {
          const opened = JSON.parse(event.data) as { secret: string };
          if (opened.secret !== secret) {
            secret = opened.secret;
            io.stdout(`Ready. Your webhook signing secret is ${secret}\n`);
            io.stdout(`Forwarding your test-mode webhooks to ${options.forwardTo}\n`);
          }
          continue;
        }
        if (secret === undefined || event.id === undefined) continue;
        const delivery = JSON.parse(event.data) as Delivery;
        io.stdout(`${await forward(options, secret, delivery)}\n`);
        lastEventId = event.id;
      }
      if (!signal.aborted) io.stderr('The stream ended; reconnecting\n');
    } catch (error) {
      if (error instanceof Refused) throw error;
      if (signal.aborted) return;
      const message = error instanceof Error ? error.message : String(error);
      io.stderr(`The stream dropped (${message}); reconnecting\n`);
    }
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, options.reconnectMs ?? 1_000);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(undefined);
      });
    });
  }
}

/** `pcp listen`: parse the arguments, then listen until `signal` aborts; the exit code. */
export async function listenCommand(
  args: string[],
  io: CommandIo,
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<number> {
  let values: { 'forward-to'?: string; 'api-key'?: string; 'base-url'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        'forward-to': { type: 'string' },
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    io.stderr(`${error instanceof Error ? error.message : String(error)}\n\n${LISTEN_USAGE}`);
    return 2;
  }
  if (values.help) {
    io.stdout(LISTEN_USAGE);
    return 0;
  }
  const forwardTo = values['forward-to'];
  const apiKey = values['api-key'] ?? env.PCP_API_KEY;
  const baseUrl = values['base-url'] ?? env.PCP_BASE_URL ?? 'http://localhost:8080';
  if (!forwardTo || !URL.canParse(forwardTo) || !apiKey || !URL.canParse(baseUrl)) {
    io.stderr(
      `--forward-to URL and an API key (--api-key or PCP_API_KEY) are needed\n\n${LISTEN_USAGE}`,
    );
    return 2;
  }
  // Checked before anything is sent: the key must not cross a network in the clear.
  const unsafe = unsafeBaseUrl(baseUrl);
  if (unsafe !== undefined) {
    io.stderr(`${unsafe}\n`);
    return 2;
  }
  try {
    await listen({ baseUrl, apiKey, forwardTo, io, signal });
    return 0;
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    io.stderr(`${error.message}\n`);
    return 1;
  }
}
