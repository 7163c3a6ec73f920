import type { PartnerMode } from '@pcp/contracts';
import type { SecretBinding } from '@pcp/service-kit';

/**
 * The row a store's sealed order submission secrets are bound to
 * (docs/operations.md#secrets-at-rest). The current and previous secrets share it: a rotation
 * moves the current one into the previous column by SQL, without opening it.
 */
export function submissionSecretBinding(store: {
  store_id: string;
  partner_id: string;
  mode: PartnerMode;
}): SecretBinding {
  return {
    service: 'stores',
    table: 'stores',
    tenant: store.partner_id,
    row: store.store_id,
    mode: store.mode,
  };
}
