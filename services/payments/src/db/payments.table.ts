import type { ChargeStatus, PartnerMode } from '@pcp/contracts';
import type { ColumnType, Generated, Selectable } from 'kysely';

export interface CardTable {
  payment_id: string;
  partner_id: string;
  end_user_id: string;
  processor_token: string | null;
  /** The processor's hash of the card number: the same card vaulted twice matches. */
  fingerprint: string;
  /** Payments' keyed hash (HMAC) of the card number; null on cards vaulted before it. */
  card_hash: string | null;
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  /** The mode it was vaulted in: its token is that mode's processor's (the sandbox for test). */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  created_at: ColumnType<Date, never, never>;
  updated_at: Generated<Date>;
  deleted_at: Date | null;
}

/** Amounts are integer minor units of `currency`. */
export interface ChargeTable {
  charge_id: string;
  partner_id: string;
  end_user_id: string;
  payment_id: string;
  /** The order (place attempt) it was authorized for; null on charges older than that rule. */
  order_id: string | null;
  amount: number;
  currency: string;
  /** Its order's mode: every processor call for it goes to that mode's processor. */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  status: ChargeStatus;
  processor_attempt: Generated<number>;
  processor_authorization_id: string | null;
  decline_code: string | null;
  captured_amount: Generated<number>;
  refunded_amount: Generated<number>;
  /** The reconciler's last verdict on it (`ledger.ts`'s classes). */
  ledger_class: ColumnType<string | null, never, string | null>;
  /** When the reconciler last found it explained (it looks again once `updated_at` moves). */
  reconciled_at: ColumnType<Date | null, never, Date | null>;
  created_at: ColumnType<Date, never, never>;
  updated_at: Generated<Date>;
}

export interface RefundTable {
  refund_id: string;
  charge_id: string;
  idempotency_key: string;
  amount: number;
  /** `failed`: the processor refused it (final for that call; asked again, a new one is made). */
  status: 'pending' | 'succeeded' | 'failed';
  processor_refund_id: string | null;
  /** The processor's code for its refusal (`failed` only). */
  failure_code: string | null;
  /** The processor key's suffix (`pcp-refund-<refund_id>` at 0, `-<n>` after n refusals). */
  processor_attempt: Generated<number>;
  created_at: ColumnType<Date, never, never>;
  updated_at: Generated<Date>;
}

/** What the reconciler did to a charge on its own: released it, or withheld a release. */
export interface ReconcilerActionTable {
  action_id: Generated<string>;
  charge_id: string;
  order_id: string | null;
  action: 'voided' | 'refunded' | 'withheld';
  reason: string;
  acted_at: Generated<Date>;
}

/** A vault attempt or decline counted against a velocity limit (`velocity.ts`). */
export interface VelocityEventTable {
  scope: 'vault' | 'decline';
  /** `partner/endUser` for vault attempts, `mode/cardHash` for declines (one count per mode). */
  subject: string;
  at: Generated<Date>;
}

/** The reconciler's lease: which replica runs it, until when. */
export interface ReconcilerLeaseTable {
  name: string;
  holder: string;
  expires_at: Date;
}

export interface PaymentsDatabase {
  cards: CardTable;
  charges: ChargeTable;
  refunds: RefundTable;
  reconciler_lease: ReconcilerLeaseTable;
  reconciler_actions: ReconcilerActionTable;
  velocity_events: VelocityEventTable;
}

export type CardRow = Selectable<CardTable>;
export type ChargeRow = Selectable<ChargeTable>;
export type RefundRow = Selectable<RefundTable>;
