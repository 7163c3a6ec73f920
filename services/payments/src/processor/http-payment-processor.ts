import { Agent, request, type Dispatcher } from 'undici';
import {
  ProcessorRejectedError,
  ProcessorUnavailableError,
  type DeclineReason,
  type PaymentProcessor,
  type ProcessorCall,
} from './payment-processor.js';

export interface HttpProcessorOptions {
  /** Base URL of the processor's API, e.g. https://api.processor.example. */
  readonly url: string;
  readonly apiKey: string;
  /** Most connections kept open to the processor. */
  readonly connections: number;
}

/** A processor answer is small; anything larger is a fault, not something to buffer. */
const MAX_RESPONSE_BYTES = 64 * 1024;

const declineReasons = new Set<string>([
  'card_declined',
  'insufficient_funds',
  'incorrect_cvc',
  'expired_card',
  'lost_card',
  'stolen_card',
  'processing_error',
]);

interface ProcessorErrorBody {
  error?: { type?: unknown; code?: unknown };
}

/**
 * The HTTP adapter to the card processor (the simulator speaks the same API): JSON over
 * keep-alive connections, the idempotency key in `Idempotency-Key`. It maps answers to the
 * port's outcomes: 2xx results, 402 declines, other 4xx rejections (final), and 5xx,
 * network failures, aborts and unreadable answers to ProcessorUnavailableError.
 */
export function createHttpPaymentProcessor(
  options: HttpProcessorOptions,
): PaymentProcessor & { close(): Promise<void> } {
  const agent = new Agent({ connections: options.connections, keepAliveTimeout: 30_000 });
  const base = options.url.replace(/\/+$/, '');

  async function post(
    path: string,
    body: unknown,
    call: ProcessorCall,
  ): Promise<{ status: number; body: unknown }> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${base}${path}`, {
        method: 'POST',
        dispatcher: agent,
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': call.idempotencyKey,
        },
        body: JSON.stringify(body),
        ...(call.signal ? { signal: call.signal } : {}),
      });
    } catch (error) {
      throw new ProcessorUnavailableError('The processor could not be reached', { cause: error });
    }
    const text = await readCapped(response.body);
    if (response.statusCode >= 500) {
      throw new ProcessorUnavailableError(`The processor answered ${response.statusCode}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ProcessorUnavailableError(
        `The processor answered ${response.statusCode} unreadably`,
      );
    }
    if (response.statusCode === 401 || response.statusCode === 403) {
      // Our credentials are wrong: every call fails until someone fixes the configuration.
      throw new ProcessorUnavailableError('The processor refused our API key');
    }
    return { status: response.statusCode, body: parsed };
  }

  async function readCapped(body: Dispatcher.ResponseData['body']): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > MAX_RESPONSE_BYTES) {
          body.destroy();
          throw new ProcessorUnavailableError('The processor answered too much');
        }
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      if (error instanceof ProcessorUnavailableError) throw error;
      throw new ProcessorUnavailableError('The processor answer broke off', { cause: error });
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /** A 4xx other than a decline: final, or (a key still running) worth a retry. */
  function refusal(status: number, body: unknown): Error {
    const code = errorCode(body) ?? `http_${status}`;
    if (code === 'idempotency_key_in_use') {
      return new ProcessorUnavailableError('A call with this key is still running', {
        fault: false,
      });
    }
    return new ProcessorRejectedError(code, `The processor refused the call (${code})`);
  }

  function field(body: unknown, name: string): string {
    const value = (body as Record<string, unknown> | null)?.[name];
    if (typeof value !== 'string' || value.length === 0 || value.length > 255) {
      throw new ProcessorUnavailableError(`The processor answer lacks ${name}`);
    }
    return value;
  }

  function amountField(body: unknown, name: string): number {
    const value = (body as Record<string, unknown> | null)?.[name];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw new ProcessorUnavailableError(`The processor answer lacks ${name}`);
    }
    return value;
  }

  return {
    async tokenize(card, call) {
      const { status, body } = await post(
        '/v1/tokens',
        {
          number: card.number,
          expMonth: card.expMonth,
          expYear: card.expYear,
          cvc: card.cvc,
          name: card.name,
          ...(card.postalCode ? { postalCode: card.postalCode } : {}),
        },
        call,
      );
      if (status !== 201 && status !== 200) throw refusal(status, body);
      const last4 = field(body, 'last4');
      if (!/^\d{4}$/.test(last4)) throw new ProcessorUnavailableError('Unexpected last4');
      return { token: field(body, 'token'), fingerprint: field(body, 'fingerprint'), last4 };
    },

    async authorize(authorization, call) {
      const { status, body } = await post('/v1/authorizations', authorization, call);
      if (status === 201 || status === 200) {
        return { outcome: 'authorized', authorizationId: field(body, 'id') };
      }
      if (status === 402) {
        const code = errorCode(body);
        const reason: DeclineReason =
          code && declineReasons.has(code) ? (code as DeclineReason) : 'other';
        return { outcome: 'declined', reason };
      }
      throw refusal(status, body);
    },

    async capture({ authorizationId, amount }, call) {
      const { status, body } = await post(
        `/v1/authorizations/${encodeURIComponent(authorizationId)}/capture`,
        amount === undefined ? {} : { amount },
        call,
      );
      if (status !== 200) throw refusal(status, body);
      return { capturedAmount: amountField(body, 'capturedAmount') };
    },

    async void({ authorizationId }, call) {
      const { status, body } = await post(
        `/v1/authorizations/${encodeURIComponent(authorizationId)}/void`,
        {},
        call,
      );
      if (status !== 200) throw refusal(status, body);
    },

    async refund({ authorizationId, amount }, call) {
      const { status, body } = await post(
        '/v1/refunds',
        { authorization: authorizationId, amount },
        call,
      );
      if (status !== 201 && status !== 200) throw refusal(status, body);
      return { refundId: field(body, 'id') };
    },

    // Called once the service stopped taking requests and gave those in flight their time:
    // a call still waiting on the processor is aborted rather than holding shutdown up.
    close: () => agent.destroy(),
  };
}

function errorCode(body: unknown): string | undefined {
  const code = (body as ProcessorErrorBody | null)?.error?.code;
  return typeof code === 'string' && code.length <= 100 ? code : undefined;
}
