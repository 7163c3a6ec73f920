import { z } from 'zod';
import type { IdempotencyStore, SavedKey } from './idempotency.js';
import { openJournal, type Log } from './journal.js';
import type { Card, Charge, Ledger } from './ledger.js';
import { chargeStatuses } from './schemas.js';

/**
 * One line of the journal: what one call changed and the answer it keeps for replays,
 * written together so neither is ever saved without the other; or, after a rewrite, one
 * record each. The fingerprint secret is the first line of every journal.
 */
export interface Entry {
  readonly secret?: string;
  readonly card?: Card;
  readonly charge?: Charge;
  readonly key?: SavedKey;
}

/** The simulator's cards, charges and answered keys, saved as they change. */
export interface SavedState {
  /** Save one call's changes before its answer is sent; throws when the journal failed. */
  save(entry: Entry): void;
  /** Replace what is saved with the state as it is now (after a reset). */
  rewrite(): void;
  /** Why saving stopped: the simulator then answers nothing until it is restarted. */
  readonly failure: Error | undefined;
  close(): void;
}

/** Without a data folder: nothing is saved. */
export const unsaved: SavedState = {
  save: () => undefined,
  rewrite: () => undefined,
  failure: undefined,
  close: () => undefined,
};

/**
 * Records the journal may hold beyond the live ones, at least, before it is rewritten with
 * the live ones alone: a rewrite then costs at most one record written per record appended.
 */
const MIN_GARBAGE = 1_000;

const cardSchema: z.ZodType<Card> = z.strictObject({
  token: z.string(),
  last4: z.string(),
  expMonth: z.int(),
  expYear: z.int(),
  behaviour: z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('authorize') }),
    z.strictObject({ kind: z.literal('decline'), code: z.string() }),
    z.strictObject({ kind: z.literal('hang') }),
  ]),
});

const chargeSchema: z.ZodType<Charge> = z.strictObject({
  id: z.string(),
  token: z.string(),
  last4: z.string(),
  amount: z.int(),
  currency: z.string(),
  status: z.enum(chargeStatuses),
  declineCode: z.string().optional(),
  capturedAmount: z.int(),
  refundedAmount: z.int(),
  reference: z.string().nullable(),
  idempotencyKey: z.string(),
  createdAt: z.string(),
});

const entrySchema: z.ZodType<Entry> = z.strictObject({
  secret: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  card: cardSchema.optional(),
  charge: chargeSchema.optional(),
  key: z
    .strictObject({
      key: z.string(),
      fingerprint: z.string(),
      status: z.int(),
      body: z.string(),
      answeredAt: z.int(),
    })
    .optional(),
});

/**
 * Load what `dir` holds into `ledger` and `idempotency` (bounded and expired as they are), then
 * save every change to it: a journal (journal.ts), rewritten with the live records alone once
 * it holds more than as many again besides them.
 */
export function openSavedState(
  dir: string,
  ledger: Ledger,
  idempotency: IdempotencyStore,
  log: Log,
): SavedState {
  let written = 0;
  let hasSecret = false;
  const journal = openJournal(
    dir,
    (value) => {
      const parsed = entrySchema.safeParse(value);
      if (!parsed.success) {
        const fields = new Set(parsed.error.issues.map((issue) => issue.path.join('.')));
        throw new Error(`not a journal entry (${[...fields].join(', ')})`);
      }
      const { secret, card, charge, key } = parsed.data;
      if (secret !== undefined) ledger.restore({ secret });
      if (card) ledger.restore({ card });
      if (charge) ledger.restore({ charge });
      if (key) idempotency.restore(key);
      written += Object.keys(parsed.data).length;
      hasSecret ||= secret !== undefined;
    },
    log,
  );

  const live = () => 1 + ledger.size() + idempotency.size();
  function* records(): Generator<Entry> {
    yield* ledger.records();
    for (const key of idempotency.records()) yield { key };
  }
  const rewrite = () => {
    written = journal.rewrite(records());
  };
  // A new journal starts with the secret, so every later card gets its fingerprint from it.
  if (ledger.savesSecret && !hasSecret) rewrite();

  return {
    save(entry) {
      const count = Object.keys(entry).length;
      if (count === 0) return;
      journal.append(entry);
      written += count;
      if (written - live() > Math.max(live(), MIN_GARBAGE)) rewrite();
    },
    rewrite,
    get failure() {
      return journal.failure;
    },
    close: () => journal.close(),
  };
}
