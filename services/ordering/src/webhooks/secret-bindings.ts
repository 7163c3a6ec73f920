import type { PartnerMode } from '@pcp/contracts';
import type { SecretBinding } from '@pcp/service-kit';

/**
 * The rows ordering's sealed signing secrets are bound to (docs/operations.md#secrets-at-rest).
 * An endpoint's current and previous secrets share its binding: a rotation moves the current
 * one into `previous_secret` by SQL, without opening it.
 */
export function endpointSecretBinding(endpoint: {
  partner_id: string;
  mode: PartnerMode;
}): SecretBinding {
  const { partner_id: partnerId, mode } = endpoint;
  return {
    service: 'ordering',
    table: 'webhook_endpoints',
    tenant: partnerId,
    row: partnerId,
    mode,
  };
}

/** A test tenant's webhook stream secret (streams are test-mode only). */
export function streamSecretBinding(partnerId: string): SecretBinding {
  return {
    service: 'ordering',
    table: 'webhook_streams',
    tenant: partnerId,
    row: partnerId,
    mode: 'test',
  };
}
