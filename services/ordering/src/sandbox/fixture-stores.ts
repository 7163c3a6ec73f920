import { fixtureCommercePartnerId } from '@pcp/contracts';

/**
 * Whether a store owner is the platform's fixture tenant: a distribution partner advances its
 * own orders only at the fixture stores (docs/guide/sandbox.md#advancing-an-order).
 */
export function isFixtureStoreOwner(partnerId: string): boolean {
  return partnerId === fixtureCommercePartnerId;
}
