import { Agent, request, type Dispatcher } from 'undici';
import {
  ProcessorRejectedError,
  ProcessorUnavailableError,
  type DeclineReason,
  type PaymentProcessor,
  type ProcessorAuthorization,
  type ProcessorCall,
  type ProcessorLookup,
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

const authorizationStatuses = new Set<string>([
  'authorized',
  'declined',
  'captured',
  'voided',
  'partially_refunded',
  'refunded',
] satisfies ProcessorAuthorization['status'][]);

/** Most authorizations one search answers with; more is a fault, not a page to trust. */
const MAX_FOUND = 100;

interface ProcessorErrorBody {
  error?: { type?: unknown; code?: unknown };
}

/**
 * The HTTP adapter to the card processor (the simulator speaks the same API): JSON over
 * keep-alive connections, the idempotency key in `Idempotency-Key` (lookups send none). It
 * maps answers to the port's outcomes: 2xx results, 402 declines, a 404 lookup undefined,
 * other 4xx rejections (final), and 5xx, network failures, aborts and unreadable or
 * implausible answers to ProcessorUnavailableError.
 */
export function createHttpPaymentProcessor(options: HttpProcessorOptions): PaymentProcessor & {
  /**
   * Whether the processor says it is a test processor: `GET /health` answering 200 with
   * `livemode: false` (the simulator does; a live processor never does). False for any other
   * answer; ProcessorUnavailableError when it gave none (unreachable, 5xx, aborted).
   */
  declaresTestMode(call: ProcessorLookup): Promise<boolean>;
  close(): Promise<void>;
} {
  const agent = new Agent({ connections: options.connections, keepAliveTimeout: 30_000 });
  const base = options.url.replace(/\/+$/, '');

  const post = (path: string, body: unknown, call: ProcessorCall) =>
    exchange(path, call.signal, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': call.idempotencyKey },
      body: JSON.stringify(body),
    });

  const get = (path: string, call: ProcessorLookup) =>
    exchange(path, call.signal, { method: 'GET', headers: {} });

  async function exchange(
    path: string,
    signal: AbortSignal | undefined,
    init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  ): Promise<{ status: number; body: unknown }> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${base}${path}`, {
        ...init,
        dispatcher: agent,
        headers: { ...init.headers, authorization: `Bearer ${options.apiKey}` },
        ...(signal ? { signal } : {}),
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

  /** A string field that may be absent or null (then null), else like `field`. */
  function optionalField(body: unknown, name: string): string | null {
    const value = (body as Record<string, unknown> | null)?.[name];
    return value === undefined || value === null ? null : field(body, name);
  }

  /** An authorization as a lookup answers it, every field checked. */
  function toAuthorization(body: unknown): ProcessorAuthorization {
    const status = field(body, 'status');
    if (!authorizationStatuses.has(status)) {
      throw new ProcessorUnavailableError('The processor answered an unknown status');
    }
    const currency = field(body, 'currency');
    if (!/^[A-Z]{3}$/.test(currency)) throw new ProcessorUnavailableError('Unexpected currency');
    const declineCode = optionalField(body, 'declineCode');
    if (declineCode !== null && declineCode.length > 100) {
      throw new ProcessorUnavailableError('Unexpected declineCode');
    }
    return {
      authorizationId: field(body, 'id'),
      status: status as ProcessorAuthorization['status'],
      amount: amountField(body, 'amount'),
      currency,
      capturedAmount: amountField(body, 'capturedAmount'),
      refundedAmount: amountField(body, 'refundedAmount'),
      reference: optionalField(body, 'reference'),
      declineCode,
    };
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

    async authorize({ token, amount, currency, reference }, call) {
      const { status, body } = await post(
        '/v1/authorizations',
        { token, amount, currency, reference },
        call,
      );
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

    async retrieve({ authorizationId }, call) {
      const { status, body } = await get(
        `/v1/authorizations/${encodeURIComponent(authorizationId)}`,
        call,
      );
      if (status === 404 && errorCode(body) === 'authorization_not_found') return undefined;
      if (status !== 200) throw refusal(status, body);
      const found = toAuthorization(body);
      if (found.authorizationId !== authorizationId) {
        throw new ProcessorUnavailableError('The processor answered for another authorization');
      }
      return found;
    },

    async findAuthorizations({ reference }, call) {
      const { status, body } = await get(
        `/v1/authorizations?reference=${encodeURIComponent(reference)}`,
        call,
      );
      if (status !== 200) throw refusal(status, body);
      const list = (body as { authorizations?: unknown } | null)?.authorizations;
      if (!Array.isArray(list)) {
        throw new ProcessorUnavailableError('The processor answer lacks authorizations');
      }
      if (list.length > MAX_FOUND) {
        throw new ProcessorUnavailableError('The processor answered too many authorizations');
      }
      const found = list.map(toAuthorization);
      // Someone else's authorizations would be settled as ours: a fault, never an answer.
      if (found.some((authorization) => authorization.reference !== reference)) {
        throw new ProcessorUnavailableError('The processor answered for another reference');
      }
      return found;
    },

    async declaresTestMode(call) {
      let response: Dispatcher.ResponseData;
      try {
        // No API key: the question is about the processor, not about an account of ours.
        response = await request(`${base}/health`, {
          method: 'GET',
          dispatcher: agent,
          ...(call.signal ? { signal: call.signal } : {}),
        });
      } catch (error) {
        throw new ProcessorUnavailableError('The processor could not be reached', { cause: error });
      }
      const text = await readCapped(response.body);
      if (response.statusCode >= 500) {
        throw new ProcessorUnavailableError(`The processor answered ${response.statusCode}`);
      }
      if (response.statusCode !== 200) return false;
      try {
        return (JSON.parse(text) as { livemode?: unknown } | null)?.livemode === false;
      } catch {
        return false;
      }
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
