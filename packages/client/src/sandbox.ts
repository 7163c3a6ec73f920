/**
 * The platform's fixture stores (docs/sandbox-fixtures.md): test-mode distribution partners
 * order at them, and the platform's kitchen moves every order to completion. New York (takes
 * delivery in the US and Canada), London and Tokyo (pickup), in that order. The same ids on
 * every deployment.
 */
export const fixtureStoreIds = [
  '00000000-0000-4000-8000-0000000f1001',
  '00000000-0000-4000-8000-0000000f1002',
  '00000000-0000-4000-8000-0000000f1003',
] as const;
