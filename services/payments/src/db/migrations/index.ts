import type { Migration } from 'kysely';
import * as createPayments from './2026-11-26T0100-create-payments.js';
import * as chargesPerOrder from './2026-12-01T0100-charges-per-order.js';
import * as paymentVelocity from './2026-12-10T0100-payment-velocity.js';
import * as chargeMode from './2026-12-20T0210-modes-money-charge-mode.js';
import * as velocityMode from './2026-12-20T0260-deploy-sandbox-velocity-mode.js';
import * as refundOutcomes from './2026-12-24T0100-refund-outcomes.js';

/** Migrations of the `payments` schema. */
export const paymentsMigrations: Record<string, Migration> = {
  '2026-11-26T0100-create-payments': createPayments,
  '2026-12-01T0100-charges-per-order': chargesPerOrder,
  '2026-12-10T0100-payment-velocity': paymentVelocity,
  '2026-12-20T0210-modes-money-charge-mode': chargeMode,
  '2026-12-20T0260-deploy-sandbox-velocity-mode': velocityMode,
  '2026-12-24T0100-refund-outcomes': refundOutcomes,
};

export const PAYMENTS_SCHEMA = 'payments';
