import { subjects } from '@pcp/contracts';
import {
  AppError,
  handle,
  open,
  requestMode,
  requirePartner,
  seal,
  visibleMode,
  type HandlerBinding,
  type Keyring,
  type OutboxRelay,
} from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import {
  countPartnerStores,
  findPartnerStore,
  findStore,
  listPartnerStores,
  rotateSubmissionSecret,
  upsertStore,
} from '../db/store.repository.js';
import { continueDeletedVersions } from '../db/deleted-store-versions.repository.js';
import type { StoreRowCache } from '../db/store-row-cache.js';
import type { StoresDatabase } from '../db/store.table.js';
import { submissionSecretBinding } from '../db/secret-binding.js';
import { locate, type Geocoder } from '../geocoding/geocoder.js';
import { hoursChangedData, hoursDiffer } from '../domain/store-event-data.js';
import { recordProfileChange, recordStoreEvent } from '../events/store-events.js';
import {
  newOrderSubmissionSecret,
  profileToRow,
  signingSecrets,
  toCommerceStore,
  toCommerceStoreWithSecret,
  toMarketfrontStore,
} from '../domain/store-profile.js';

const DEFAULT_PAGE_SIZE = 50;

export const storeNotFound = () => new AppError('STORE_NOT_FOUND', 'No store with that id exists');

export interface StoreSettings {
  /** Seals the order submission secrets stored (docs/operations.md#secrets-at-rest). */
  readonly keyring: Keyring;
  /** How long the previous secret keeps signing after a rotation. */
  readonly overlapMs: number;
  /** Stores one partner may hold; a new one beyond is STORE_LIMIT_REACHED. */
  readonly maxStoresPerPartner: number;
}

function storeLimitReached(maxStores: number): AppError {
  return new AppError(
    'STORE_LIMIT_REACHED',
    `A partner holds at most ${maxStores} stores; this one would be a new one`,
  );
}

/** Where store events go: the outbox of the deployment `prefix`, published by `relay`. */
export interface StoreEventOutbox {
  readonly prefix: string;
  readonly relay: OutboxRelay;
}

export function storeHandlers(
  db: Kysely<StoresDatabase>,
  geocoder: Geocoder,
  clock: () => Date,
  settings: StoreSettings,
  outbox: StoreEventOutbox,
  storeRows: StoreRowCache,
): HandlerBinding[] {
  return [
    handle(subjects.stores.upsert, async ({ storeId, profile }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const { latitude, longitude } = profile.address;
      const location =
        latitude !== undefined && longitude !== undefined
          ? { latitude, longitude }
          : locate(profile.address, geocoder, '/address');
      const secret = newOrderSubmissionSecret();
      const result = await db.transaction().execute(async (trx) => {
        // The partner's creations one at a time, so concurrent ones cannot pass the limit.
        await sql`select pg_advisory_xact_lock(hashtextextended(${`stores/${partnerId}`}, 0))`.execute(
          trx,
        );
        const previous = await findStore(trx, storeId);
        if (
          previous === undefined &&
          (await countPartnerStores(trx, partnerId)) >= settings.maxStoresPerPartner
        ) {
          throw storeLimitReached(settings.maxStoresPerPartner);
        }
        // A new store takes the request's mode; an upsert of an existing one never changes
        // it, and the fresh secret (stored only when the row has none) is sealed for that row.
        const mode = previous?.mode ?? requestMode(ctx);
        const binding = submissionSecretBinding({ store_id: storeId, partner_id: partnerId, mode });
        const sealed = seal(settings.keyring, binding, secret);
        const row = { ...profileToRow(partnerId, storeId, profile, location, sealed), mode };
        const upserted = await upsertStore(trx, row);
        // An id deleted before (a sandbox reset): its versions go on from the deleted store's.
        const continued = upserted?.created && (await continueDeletedVersions(trx, storeId));
        if (upserted && continued) upserted.store = continued;
        if (!upserted || !previous) return upserted && { ...upserted, announced: false };
        // A replaced profile may change what orders are checked against (fees, radius,
        // address...): ordering's cached profiles hear of it. Its hours may change too.
        await recordProfileChange(trx, outbox.prefix, storeId);
        if (hoursDiffer(previous, upserted.store)) {
          await recordStoreEvent(
            trx,
            outbox.prefix,
            storeId,
            hoursChangedData(upserted.store, clock()),
          );
        }
        return { ...upserted, announced: true };
      });
      storeRows.invalidate(storeId);
      // Another partner's id: answer as if it did not exist.
      if (!result) throw storeNotFound();
      if (result.announced) void outbox.relay.nudge();
      // The secret is shown by the answer that stored it, and never again.
      const shown = result.secretCreated ? secret : null;
      return {
        store: toCommerceStoreWithSecret(result.store, clock(), shown),
        created: result.created,
      };
    }),

    handle(subjects.stores.rotateSubmissionSecret, async ({ storeId }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const secret = newOrderSubmissionSecret();
      const now = clock();
      const row = await rotateSubmissionSecret(
        db,
        settings.keyring,
        { partnerId, storeId },
        secret,
        new Date(now.getTime() + settings.overlapMs),
      );
      storeRows.invalidate(storeId);
      if (!row) throw storeNotFound();
      return toCommerceStoreWithSecret(row, now, secret);
    }),

    // Internal: only ordering's NATS user may publish here (nats-permissions.ts).
    handle(subjects.stores.submissionSecrets, async ({ storeId }) => {
      const row = await findStore(db, storeId);
      const sealed = row ? signingSecrets(row, clock()) : [];
      if (!row || sealed.length === 0) throw storeNotFound();
      // Opened for this store's row only: a value copied from another row throws
      // (SecretBindingError, logged; ordering gets INTERNAL and signs nothing with it).
      const binding = submissionSecretBinding(row);
      return { secrets: sealed.map((value) => open(settings.keyring, binding, value)) };
    }),

    handle(subjects.stores.get, async ({ storeId }, ctx) => {
      const row = await findPartnerStore(db, requirePartner(ctx, 'commerce'), storeId);
      if (!row) throw storeNotFound();
      return toCommerceStore(row, clock());
    }),

    handle(subjects.stores.list, async ({ limit = DEFAULT_PAGE_SIZE, offset = 0 }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const { rows, totalCount } = await listPartnerStores(db, partnerId, { limit, offset });
      const now = clock();
      return {
        stores: rows.map((row) => toCommerceStore(row, now)),
        totalCount,
        hasMore: offset + rows.length < totalCount,
      };
    }),

    handle(subjects.stores.lookup, async ({ storeId }, ctx) => {
      requirePartner(ctx, 'distribution');
      const row = await storeRows.lookup(storeId, visibleMode(ctx));
      if (!row) throw storeNotFound();
      // From the clock at every request: open now, the status a resumeAt has ended.
      return toMarketfrontStore(row, clock());
    }),
  ];
}
