/**
 * The defects the fault suite's mutation check (`npm run test:faults -- --mutants`) plants in
 * ordering, one per run, through the test-only ORDERING_TEST_MUTANT (production refuses it).
 * Each must turn the suite red; one that does not is a defect the suite cannot see.
 *
 * - `saga-no-release`: place records a final failure (a store's refusal, say) without
 *   releasing the payment held for it.
 * - `cancel-no-refund`: a store's (or the sandbox helper's) cancel owes no refund.
 * - `owners-torn`: the reconciler's charge-owners question is answered from two reads on two
 *   connections, orders first, outside one snapshot (the defect it once had).
 * - `capture-skipped`: place records the order without capturing its charge.
 * - `acceptance-no-refund`: an order cancelled for its acceptance window owes no refund.
 */
export const orderingMutants = [
  'saga-no-release',
  'cancel-no-refund',
  'owners-torn',
  'capture-skipped',
  'acceptance-no-refund',
] as const;
export type OrderingMutant = (typeof orderingMutants)[number];
