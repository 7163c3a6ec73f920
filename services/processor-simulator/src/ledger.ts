import { LRUCache } from 'lru-cache';
import { createHmac, randomBytes } from 'node:crypto';
import { ApiError, invalidRequest } from './api-error.js';
import type { AuthorizationBody, RefundBody, TokenBody, chargeStatuses } from './schemas.js';
import { cardBehaviour, passesLuhn, type CardBehaviour } from './test-cards.js';

/** The state of a charge (an authorization and what followed it). */
export type ChargeStatus = (typeof chargeStatuses)[number];

/** One authorization attempt as the processor keeps it; declines count too. */
export interface Charge {
  readonly id: string;
  readonly token: string;
  readonly last4: string;
  readonly amount: number;
  readonly currency: string;
  status: ChargeStatus;
  readonly declineCode?: string;
  capturedAmount: number;
  refundedAmount: number;
  /** The caller's name for it (`null` when none was sent). */
  readonly reference: string | null;
  readonly idempotencyKey: string;
  readonly createdAt: string;
}

/**
 * A tokenized card as the processor keeps it: what authorizing needs, decided at
 * tokenization. Never the number or the CVC, so they reach neither memory nor disk.
 */
export interface Card {
  readonly token: string;
  readonly last4: string;
  readonly expMonth: number;
  readonly expYear: number;
  readonly behaviour: CardBehaviour;
}

/** What a call changed: a new card, or a charge's whole new state. */
export type Change = { readonly card: Card } | { readonly charge: Charge };

/** An answer to a call, before it is written. */
export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/** What executing a call produced: an answer with what it changed, or a call that never answers. */
export type Execution = (Answer & { readonly change?: Change }) | 'hang';

/** One thing the ledger keeps, as saved and restored: the fingerprint secret, a card, a charge. */
export type LedgerRecord = { readonly secret: string } | Change;

const randomId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const captured = new Set<ChargeStatus>(['captured', 'partially_refunded', 'refunded']);

/** Most authorizations one search by reference answers with. */
const MAX_FOUND = 100;

/** An authorization as the lookups show it. */
const authorizationView = (charge: Charge) => ({
  id: charge.id,
  status: charge.status,
  amount: charge.amount,
  currency: charge.currency,
  capturedAmount: charge.capturedAmount,
  refundedAmount: charge.refundedAmount,
  reference: charge.reference,
  ...(charge.declineCode === undefined ? {} : { declineCode: charge.declineCode }),
  createdAt: charge.createdAt,
});

/**
 * Tokens and charges in memory, each bounded by `maxRecords` (least recently used cards and
 * oldest charges dropped first); `records()` and `restore()` save and load them.
 */
export function createLedger(maxRecords: number, fingerprintKey?: string) {
  // Per simulator (and its saved state), so fingerprints link cards within it and mean nothing
  // outside it. A key given by its deployment is never saved with the state: whoever reads the
  // saved tokenize answers could otherwise try card numbers against their fingerprints.
  let fingerprintSecret = fingerprintKey ? Buffer.from(fingerprintKey) : randomBytes(32);
  const cards = new LRUCache<string, Card>({ max: maxRecords });
  // A Map keeps insertion order: the listing is oldest first and eviction drops the oldest.
  const charges = new Map<string, Charge>();
  // Charges by reference, oldest first, so a search reads its own rather than them all.
  const byReference = new Map<string, Set<Charge>>();

  function findCharge(id: string): Charge {
    const charge = charges.get(id);
    if (!charge) {
      throw invalidRequest(404, 'authorization_not_found', 'No such authorization');
    }
    return charge;
  }

  function record(charge: Charge): void {
    charges.set(charge.id, charge);
    if (charge.reference !== null) {
      const same = byReference.get(charge.reference) ?? new Set<Charge>();
      byReference.set(charge.reference, same.add(charge));
    }
    if (charges.size > maxRecords) {
      const oldest = charges.values().next();
      if (!oldest.done) forget(oldest.value);
    }
  }

  function forget(charge: Charge): void {
    charges.delete(charge.id);
    if (charge.reference === null) return;
    const same = byReference.get(charge.reference);
    same?.delete(charge);
    if (same?.size === 0) byReference.delete(charge.reference);
  }

  const captureView = (charge: Charge) => ({
    id: charge.id,
    status: charge.status,
    amount: charge.amount,
    capturedAmount: charge.capturedAmount,
    currency: charge.currency,
  });

  return {
    tokenize(input: TokenBody): Execution {
      if (!passesLuhn(input.number)) {
        throw new ApiError(400, 'card_error', 'invalid_number', 'The card number is not valid');
      }
      const { number, expMonth, expYear } = input;
      const card: Card = {
        token: randomId('tok'),
        last4: number.slice(-4),
        expMonth,
        expYear,
        behaviour: cardBehaviour(number),
      };
      cards.set(card.token, card);
      const fingerprint = createHmac('sha256', fingerprintSecret)
        .update(number)
        .digest('hex')
        .slice(0, 32);
      const { token, last4 } = card;
      return {
        status: 201,
        body: { token, last4, expMonth, expYear, fingerprint },
        change: { card },
      };
    },

    authorize(input: AuthorizationBody, idempotencyKey: string): Execution {
      const card = cards.get(input.token);
      if (!card) {
        throw invalidRequest(404, 'token_not_found', 'No such token');
      }
      const { behaviour } = card;
      if (behaviour.kind === 'hang') return 'hang';
      const charge: Charge = {
        id: randomId('auth'),
        token: input.token,
        last4: card.last4,
        amount: input.amount,
        currency: input.currency,
        status: behaviour.kind === 'decline' ? 'declined' : 'authorized',
        ...(behaviour.kind === 'decline' ? { declineCode: behaviour.code } : {}),
        capturedAmount: 0,
        refundedAmount: 0,
        reference: input.reference ?? null,
        idempotencyKey,
        createdAt: new Date().toISOString(),
      };
      record(charge);
      if (behaviour.kind === 'decline') {
        const error = new ApiError(402, 'card_error', behaviour.code, 'The card was declined', {
          authorization: { id: charge.id, status: 'declined' },
        });
        return { status: 402, body: error.body(), change: { charge } };
      }
      const { id, status, amount, currency, token, createdAt } = charge;
      return {
        status: 201,
        body: { id, status, amount, currency, token, createdAt },
        change: { charge },
      };
    },

    capture(id: string, amount: number | undefined): Execution {
      const charge = findCharge(id);
      if (captured.has(charge.status)) return { status: 200, body: captureView(charge) };
      if (charge.status !== 'authorized') {
        throw invalidRequest(409, 'authorization_not_capturable', `It is ${charge.status}`);
      }
      if (amount !== undefined && amount > charge.amount) {
        throw invalidRequest(400, 'amount_too_large', 'More than authorized');
      }
      charge.status = 'captured';
      charge.capturedAmount = amount ?? charge.amount;
      return { status: 200, body: captureView(charge), change: { charge } };
    },

    void(id: string): Execution {
      const charge = findCharge(id);
      if (captured.has(charge.status)) {
        throw invalidRequest(409, 'authorization_captured', 'It is captured; refund it');
      }
      if (charge.status === 'declined') {
        throw invalidRequest(409, 'authorization_not_voidable', 'It was declined');
      }
      charge.status = 'voided';
      const { status, amount, currency } = charge;
      return { status: 200, body: { id, status, amount, currency }, change: { charge } };
    },

    refund(input: RefundBody): Execution {
      const charge = findCharge(input.authorization);
      if (!captured.has(charge.status)) {
        throw invalidRequest(409, 'authorization_not_captured', `It is ${charge.status}`);
      }
      if (input.amount > charge.capturedAmount - charge.refundedAmount) {
        throw invalidRequest(400, 'amount_too_large', 'More than is left to refund');
      }
      charge.refundedAmount += input.amount;
      charge.status =
        charge.refundedAmount === charge.capturedAmount ? 'refunded' : 'partially_refunded';
      return {
        status: 201,
        body: {
          id: randomId('re'),
          authorization: charge.id,
          amount: input.amount,
          status: 'succeeded',
          createdAt: new Date().toISOString(),
        },
        change: { charge },
      };
    },

    retrieve(id: string): Answer {
      return { status: 200, body: authorizationView(findCharge(id)) };
    },

    /** The authorizations made with `reference`, oldest first, at most {@link MAX_FOUND}. */
    find(reference: string): Answer {
      const found: ReturnType<typeof authorizationView>[] = [];
      for (const charge of byReference.get(reference) ?? []) {
        if (found.length === MAX_FOUND) break;
        found.push(authorizationView(charge));
      }
      return { status: 200, body: { authorizations: found } };
    },

    /** Copies of the charges, oldest first, optionally only those in `statuses`. */
    list(statuses?: readonly ChargeStatus[]): Charge[] {
      const all = [...charges.values()];
      const kept = statuses ? all.filter((charge) => statuses.includes(charge.status)) : all;
      return kept.map((charge) => ({ ...charge }));
    },

    clear: () => {
      charges.clear();
      byReference.clear();
    },

    /** Whether its fingerprint secret is saved with its records (no key was given). */
    savesSecret: fingerprintKey === undefined,

    /** Everything kept, in an order `restore` rebuilds it from: least recently used first. */
    *records(): Generator<LedgerRecord> {
      if (!fingerprintKey) yield { secret: fingerprintSecret.toString('hex') };
      for (const card of cards.rvalues()) if (card) yield { card };
      for (const charge of charges.values()) yield { charge };
    },

    /** Take back a saved record; a charge already kept is replaced by its newer state. */
    restore(saved: LedgerRecord): void {
      if ('secret' in saved) {
        if (!fingerprintKey) fingerprintSecret = Buffer.from(saved.secret, 'hex');
      } else if ('card' in saved) {
        cards.set(saved.card.token, saved.card);
      } else {
        const kept = charges.get(saved.charge.id);
        if (kept) Object.assign(kept, saved.charge);
        else {
          // As authorizing it did: the card was used then.
          cards.get(saved.charge.token);
          record(saved.charge);
        }
      }
    },

    /** How many cards and charges are kept. */
    size: () => cards.size + charges.size,
  };
}

export type Ledger = ReturnType<typeof createLedger>;
