import { subjects, type ItemAvailabilityList } from '@pcp/contracts';
import {
  AppError,
  handle,
  requirePartner,
  type BusClient,
  type HandlerBinding,
  type OutboxRelay,
  type RequestContext,
  visibleMode,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import {
  applyOverrides,
  countOverrides,
  extendOverrides,
  itemAvailabilityVersion,
  listCurrentOverrides,
  nextItemAvailabilityVersion,
} from '../db/item-availability.repository.js';
import { findPartnerStore, findStore, findVisibleStore } from '../db/store.repository.js';
import type { StoreRowCache } from '../db/store-row-cache.js';
import type { StoresDatabase } from '../db/store.table.js';
import {
  changeProblems,
  endOfLocalDay,
  toOverride,
  type ChangeProblem,
} from '../domain/item-availability.js';
import { recordStoreEvent } from '../events/store-events.js';
import { storeNotFound } from './store.handlers.js';

export interface ItemAvailabilityDeps {
  readonly db: Kysely<StoresDatabase>;
  readonly bus: BusClient;
  readonly clock: () => Date;
  readonly prefix: string;
  readonly relay: OutboxRelay;
  readonly storeRows: StoreRowCache;
}

function requestInvalid(problems: readonly ChangeProblem[]): AppError {
  return new AppError('REQUEST_INVALID', problems[0]?.message ?? 'Invalid request', {
    errors: problems.map((problem) => ({
      code: 'INVALID_VALUE',
      message: problem.message,
      pointer: problem.pointer,
    })),
  });
}

/**
 * Which of `itemIds` the store's active catalog lacks (each id's pointer), and its item count.
 * CATALOGSET_NOT_FOUND from the catalog passes through: overrides name items of a catalog.
 */
async function checkKnownItems(
  bus: BusClient,
  ctx: RequestContext,
  storeId: string,
  itemIds: readonly string[],
  pointer: (index: number) => string,
): Promise<{ itemCount: number; problems: ChangeProblem[] }> {
  const known = await bus.request(
    subjects.catalog.knownItems,
    { storeId, itemIds: [...itemIds] },
    ctx,
  );
  const unknown = new Set(known.unknownItemIds);
  const problems = itemIds.flatMap((itemId, index) =>
    unknown.has(itemId)
      ? [
          {
            pointer: pointer(index),
            message: `Item ${itemId} is not in the store's active catalog`,
          },
        ]
      : [],
  );
  return { itemCount: known.itemCount, problems };
}

async function currentList(
  db: Kysely<StoresDatabase>,
  storeId: string,
  now: Date,
): Promise<ItemAvailabilityList> {
  // The version first: the list read after it holds at least every change up to it.
  const version = await itemAvailabilityVersion(db, storeId);
  const rows = await listCurrentOverrides(db, storeId, now);
  return { items: rows.map(toOverride), version };
}

/** Item availability overrides (docs/guide/stores.md#item-availability). */
export function itemAvailabilityHandlers(deps: ItemAvailabilityDeps): HandlerBinding[] {
  const { db, bus, clock, prefix, relay, storeRows } = deps;
  return [
    handle(subjects.stores.getItemAvailability, async ({ storeId }, ctx) => {
      const store = await findPartnerStore(db, requirePartner(ctx, 'commerce'), storeId);
      if (!store) throw storeNotFound();
      return currentList(db, storeId, clock());
    }),

    // Distribution partners through the gateway, and ordering's caches, which also refresh on
    // an event with no partner behind it; a commerce partner reads its own stores' at get.
    handle(subjects.stores.lookupItemAvailability, async ({ storeId }, ctx) => {
      if (ctx.partnerId !== undefined) requirePartner(ctx, 'distribution');
      if (!(await findVisibleStore(db, storeId, visibleMode(ctx)))) throw storeNotFound();
      return currentList(db, storeId, clock());
    }),

    handle(subjects.stores.setItemAvailability, async ({ storeId, items }, ctx) => {
      const store = await findPartnerStore(db, requirePartner(ctx, 'commerce'), storeId);
      if (!store) throw storeNotFound();
      const now = clock();
      const problems = changeProblems(items, now);
      if (problems.length > 0) throw requestInvalid(problems);
      const known = await checkKnownItems(
        bus,
        ctx,
        storeId,
        items.map((item) => item.itemId),
        (index) => `/items/${index}/itemId`,
      );
      if (known.problems.length > 0) throw requestInvalid(known.problems);
      const changes = items.map((item) => ({
        itemId: item.itemId,
        available: item.available,
        until: item.available ? null : (item.until ?? null),
      }));
      const result = await db.transaction().execute(async (trx) => {
        const next = await nextItemAvailabilityVersion(trx, storeId);
        if (!next) throw storeNotFound();
        await applyOverrides(trx, storeId, now, {
          set: changes
            .filter((change) => !change.available)
            .map((change) => ({
              itemId: change.itemId,
              until: change.until === null ? null : new Date(change.until),
            })),
          clear: changes.filter((change) => change.available).map((change) => change.itemId),
        });
        // Every override names an item of the catalog, so this holds unless a smaller
        // catalog was activated since the check above.
        if ((await countOverrides(trx, storeId)) > known.itemCount) {
          throw requestInvalid([
            {
              pointer: '/items',
              message: `A store has at most as many overrides as its catalog has items (${known.itemCount})`,
            },
          ]);
        }
        await recordStoreEvent(trx, prefix, storeId, {
          event: 'store.items_availability_changed',
          storeId,
          itemAvailabilityVersion: next.version,
          items: changes,
        });
        const rows = await listCurrentOverrides(trx, storeId, now);
        return { items: rows.map(toOverride), version: next.version };
      });
      storeRows.invalidate(storeId);
      // Published before the answer: ordering's carts learn of a change from this event, so
      // a cart sent after the answer sees it (validate and place check the version anyway).
      await relay.nudge();
      return result;
    }),

    // Ordering only (nats-permissions.ts): a pending order denied with the items that ran out.
    handle(subjects.stores.denyItems, async ({ storeId, itemIds }, ctx) => {
      if (!(await findStore(db, storeId))) throw storeNotFound();
      const known = await checkKnownItems(
        bus,
        ctx,
        storeId,
        itemIds,
        (index) => `/itemIds/${index}`,
      );
      if (known.problems.length > 0) throw requestInvalid(known.problems);
      const now = clock();
      const result = await db.transaction().execute(async (trx) => {
        const next = await nextItemAvailabilityVersion(trx, storeId);
        if (!next) throw storeNotFound();
        const rows = await extendOverrides(
          trx,
          storeId,
          [...new Set(itemIds)],
          endOfLocalDay(now, next.timezone),
        );
        await recordStoreEvent(trx, prefix, storeId, {
          event: 'store.items_availability_changed',
          storeId,
          itemAvailabilityVersion: next.version,
          items: rows.map(toOverride),
        });
        const current = await listCurrentOverrides(trx, storeId, now);
        return { items: current.map(toOverride), version: next.version };
      });
      storeRows.invalidate(storeId);
      // Published before the answer: ordering's carts learn of a change from this event, so
      // a cart sent after the answer sees it (validate and place check the version anyway).
      await relay.nudge();
      return result;
    }),
  ];
}
