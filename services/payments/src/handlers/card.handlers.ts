import {
  sandboxCustomerPartnerId,
  subjects,
  type VaultCardInput,
  type VaultedCard,
} from '@pcp/contracts';
import {
  AppError,
  handle,
  requireEndUser,
  requirePartner,
  requirePaymentType,
  requestMode,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import {
  cardLimitReached,
  deleteOwnedCard,
  findOwnedCard,
  listLiveCards,
  saveCard,
} from '../db/card.repository.js';
import type { CardRow, PaymentsDatabase } from '../db/payments.table.js';
import { checkCard } from '../domain/card-rules.js';
import type { ModeProcessors } from '../processor/mode-processors.js';
import { ProcessorRejectedError } from '../processor/payment-processor.js';
import type { Velocity } from '../velocity/velocity.js';
import { processorFailure } from './processor-errors.js';

export interface CardHandlerDeps {
  readonly db: Kysely<PaymentsDatabase>;
  /** A card is vaulted at the processor of the request's mode (the sandbox for test). */
  readonly processors: ModeProcessors;
  readonly clock: () => Date;
  readonly velocity: Velocity;
  /** Live cards one end user may hold. */
  readonly maxCardsPerEndUser: number;
}

/** Who owns the cards of a request: a distribution partner's end user. */
function cardOwner(ctx: RequestContext): { partnerId: string; endUserId: string } {
  return { partnerId: requirePartner(ctx, 'distribution'), endUserId: requireEndUser(ctx) };
}

export function paymentTokenInvalid(): AppError {
  const message = 'No card with this paymentId belongs to the end user';
  return new AppError('PAYMENT_TOKEN_INVALID', message, {
    errors: [{ code: 'PAYMENT_TOKEN_INVALID', message, pointer: '/paymentId' }],
  });
}

export function toVaultedCard(row: CardRow): VaultedCard {
  return {
    paymentId: row.payment_id,
    brand: row.brand,
    last4: row.last4,
    expMonth: row.exp_month,
    expYear: row.exp_year,
    createdAt: row.created_at.toISOString(),
  };
}

function cardLimitError(): AppError {
  return new AppError(
    'CARD_LIMIT_REACHED',
    'The end user holds the most cards allowed; delete one first',
  );
}

/** The simulator's card that always succeeds (docs/guide/payments.md#test-cards). */
const SUCCEEDING_TEST_CARD = '4242424242424242';

export function cardHandlers(deps: CardHandlerDeps): HandlerBinding[] {
  const { db, processors, velocity } = deps;

  async function vault(input: VaultCardInput, ctx: RequestContext) {
    const owner = cardOwner(ctx);
    // Listing and deleting stay open to a partner that lost CARD: end users can still
    // see and remove what was stored for them.
    requirePaymentType(ctx, 'CARD');
    const mode = requestMode(ctx);
    // Refused before anything is counted or checked: live without a live processor, or a
    // sandbox processor not known to be a test processor.
    await processors.ready(mode);
    const processor = processors.forMode(mode);
    const checked = checkCard(input, deps.clock());
    if (!checked.ok) {
      throw new AppError('CARD_INVALID', 'The card is not valid', { errors: checked.errors });
    }
    const cardHash = velocity.cardHash(checked.card.number);
    const { partnerId, endUserId } = owner;
    // Refused before the processor sees the card: a full card list, then card testing.
    if (await cardLimitReached(db, partnerId, endUserId, cardHash, deps.maxCardsPerEndUser)) {
      throw cardLimitError();
    }
    await velocity.admitVault(mode, partnerId, endUserId, cardHash);
    let token;
    try {
      // Each vault is its own attempt: a retry tokenizes again and lands on the same row.
      token = await processor.tokenize(
        {
          number: checked.card.number,
          expMonth: input.expMonth,
          expYear: input.expYear,
          cvc: input.cvc,
          name: input.cardholderName,
          ...(input.billingPostalCode ? { postalCode: input.billingPostalCode } : {}),
        },
        { idempotencyKey: `pcp-tokenize-${randomUUID()}` },
      );
    } catch (error) {
      if (error instanceof ProcessorRejectedError) {
        await velocity.recordDecline(mode, cardHash);
        const message = 'The processor refused the card';
        throw new AppError('CARD_INVALID', message, {
          errors: [{ code: 'CARD_INVALID', message, pointer: '/cardNumber' }],
        });
      }
      throw processorFailure(error, processors.retryAfterSeconds(mode));
    }
    const saved = await saveCard(
      db,
      {
        paymentId: randomUUID(),
        ...owner,
        processorToken: token.token,
        fingerprint: token.fingerprint,
        cardHash,
        brand: checked.card.brand,
        last4: token.last4,
        expMonth: input.expMonth,
        expYear: input.expYear,
        mode,
      },
      deps.maxCardsPerEndUser,
    );
    if ('limitReached' in saved) throw cardLimitError();
    return { card: toVaultedCard(saved.row), created: saved.created };
  }

  return [
    handle(subjects.payments.vaultCard, vault),

    handle(subjects.payments.sandboxCustomerCard, async (_input, ctx) => {
      if (ctx.partnerId !== sandboxCustomerPartnerId || ctx.mode !== 'test') {
        throw new AppError('FORBIDDEN', "Only the sandbox customer's test orders take this card");
      }
      const { card } = await vault(
        {
          cardNumber: SUCCEEDING_TEST_CARD,
          expMonth: 12,
          expYear: deps.clock().getUTCFullYear() + 5,
          cvc: '123',
          cardholderName: 'Sandbox Customer',
        },
        ctx,
      );
      return { paymentId: card.paymentId };
    }),

    handle(subjects.payments.listCards, async (_input, ctx) => {
      const { partnerId, endUserId } = cardOwner(ctx);
      const rows = await listLiveCards(db, partnerId, endUserId);
      return { cards: rows.map(toVaultedCard) };
    }),

    // Validate's check (place's authorization refuses such a card on its own).
    handle(subjects.payments.cardOwned, async ({ paymentId }, ctx) => {
      const { partnerId, endUserId } = cardOwner(ctx);
      const card = await findOwnedCard(db, partnerId, endUserId, paymentId);
      return { owned: card !== undefined && card.deleted_at === null };
    }),

    handle(subjects.payments.deleteCard, async ({ paymentId }, ctx) => {
      const { partnerId, endUserId } = cardOwner(ctx);
      if (!(await deleteOwnedCard(db, partnerId, endUserId, paymentId))) {
        throw paymentTokenInvalid();
      }
      return { deleted: true as const };
    }),
  ];
}
