/**
 * The card processor, as the payments service needs it. Every call that changes something
 * carries an idempotency key: the processor runs a key once and answers a retry with the
 * first outcome, so a call whose answer was lost can be repeated without charging twice.
 * The lookups tell what the processor holds, e.g. after an answer was lost for good.
 */
export interface PaymentProcessor {
  tokenize(card: CardDetails, call: ProcessorCall): Promise<CardToken>;
  authorize(request: AuthorizeRequest, call: ProcessorCall): Promise<AuthorizeOutcome>;
  capture(request: CaptureRequest, call: ProcessorCall): Promise<{ capturedAmount: number }>;
  void(request: { authorizationId: string }, call: ProcessorCall): Promise<void>;
  refund(request: RefundRequest, call: ProcessorCall): Promise<{ refundId: string }>;
  /** One authorization; undefined when the processor knows no such id. */
  retrieve(
    request: { authorizationId: string },
    call: ProcessorLookup,
  ): Promise<ProcessorAuthorization | undefined>;
  /** The authorizations made with `reference` (declines too), oldest first. */
  findAuthorizations(
    request: { reference: string },
    call: ProcessorLookup,
  ): Promise<ProcessorAuthorization[]>;
}

export interface ProcessorCall {
  readonly idempotencyKey: string;
  /** Aborts the call (its timeout); the processor may still have acted on it. */
  readonly signal?: AbortSignal;
}

/** A lookup: no idempotency key (it changes nothing); aborts with the signal. */
export interface ProcessorLookup {
  readonly signal?: AbortSignal;
}

/** The only value in the platform that holds a card number and CVC. */
export interface CardDetails {
  readonly number: string;
  readonly expMonth: number;
  readonly expYear: number;
  readonly cvc: string;
  readonly name: string;
  readonly postalCode?: string;
}

export interface CardToken {
  readonly token: string;
  readonly fingerprint: string;
  readonly last4: string;
}

/** Amounts in integer minor units of `currency`. */
export interface AuthorizeRequest {
  readonly token: string;
  readonly amount: number;
  readonly currency: string;
  /** Our own id for the authorization (the charge's), to find it by when an answer is lost. */
  readonly reference: string;
}

/** What the processor holds for one authorization. */
export interface ProcessorAuthorization {
  readonly authorizationId: string;
  readonly status:
    'authorized' | 'declined' | 'captured' | 'voided' | 'partially_refunded' | 'refunded';
  /** Integer minor units of `currency`, as are the other amounts. */
  readonly amount: number;
  readonly currency: string;
  readonly capturedAmount: number;
  readonly refundedAmount: number;
  readonly reference: string | null;
  readonly declineCode: string | null;
}

export interface CaptureRequest {
  readonly authorizationId: string;
  readonly amount?: number;
}

export interface RefundRequest {
  readonly authorizationId: string;
  readonly amount: number;
}

/** Why the processor declined; `other` covers codes this service does not know. */
export type DeclineReason =
  | 'card_declined'
  | 'insufficient_funds'
  | 'incorrect_cvc'
  | 'expired_card'
  | 'lost_card'
  | 'stolen_card'
  | 'processing_error'
  | 'other';

export type AuthorizeOutcome =
  | { readonly outcome: 'authorized'; readonly authorizationId: string }
  | { readonly outcome: 'declined'; readonly reason: DeclineReason };

/**
 * The processor could not be reached or failed (network, 5xx, timeout, breaker open, a
 * concurrent call with the same key): the outcome is unknown and the call may be retried
 * with the same key. `fault` is false when the processor itself is healthy (a call with
 * the same key still running): such answers do not count against the circuit breaker.
 */
export class ProcessorUnavailableError extends Error {
  readonly fault: boolean;
  constructor(message: string, options: { fault?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'ProcessorUnavailableError';
    this.fault = options.fault ?? true;
  }
}

/**
 * The processor answered and refused the request (an unknown token, a capture of a voided
 * authorization, an amount too large): final, not a fault, retrying changes nothing.
 */
export class ProcessorRejectedError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ProcessorRejectedError';
    this.code = code;
  }
}
