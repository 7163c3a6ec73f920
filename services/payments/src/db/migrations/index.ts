import type { Migration } from 'kysely';
import * as createPayments from './2026-11-26T0100-create-payments.js';
import * as chargesPerOrder from './2026-12-01T0100-charges-per-order.js';

/** Migrations of the `payments` schema. */
export const paymentsMigrations: Record<string, Migration> = {
  '2026-11-26T0100-create-payments': createPayments,
  '2026-12-01T0100-charges-per-order': chargesPerOrder,
};

export const PAYMENTS_SCHEMA = 'payments';
