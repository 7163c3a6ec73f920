import type { AddressInput } from '@pcp/contracts';
import { createHash } from 'node:crypto';

const normalize = (value: string | null | undefined) =>
  (value ?? '').normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * What makes two addresses the same one (docs/guide/orders.md#saved-addresses: saved twice, one
 * addressId): their fields compared without regard to case, spacing or Unicode form.
 */
export function addressFingerprint(address: AddressInput): string {
  const fields = [
    address.address1,
    address.address2,
    address.city,
    address.state,
    address.postalCode,
    address.country,
  ].map(normalize);
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex');
}
