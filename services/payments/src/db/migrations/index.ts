import type { Migration } from 'kysely';
import * as createPayments from './2026-11-26T0100-create-payments.js';

/** Migrations of the `payments` schema. */
export const paymentsMigrations: Record<string, Migration> = {
  '2026-11-26T0100-create-payments': createPayments,
};

export const PAYMENTS_SCHEMA = 'payments';
