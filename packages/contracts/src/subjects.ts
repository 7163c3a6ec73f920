import { z } from 'zod';
import { guid, pageQuery } from './common.js';
import { defineSubject } from './messaging.js';
import {
  commerceStore,
  commerceStoreList,
  marketfrontStore,
  setStoreStatusInput,
  storeProfileInput,
  storeStatus,
} from './stores.js';

const byStoreId = z.object({ storeId: guid });

/** Request/reply subjects, grouped by the service that answers them. */
export const subjects = {
  stores: {
    /** Commerce: create or replace the caller's store profile. */
    upsert: defineSubject(
      'stores',
      'v1.upsert',
      z.object({ storeId: guid, profile: storeProfileInput }),
      z.object({ store: commerceStore, created: z.boolean() }),
    ),
    /** Commerce: one of the caller's stores. */
    get: defineSubject('stores', 'v1.get', byStoreId, commerceStore),
    /** Commerce: the caller's stores, oldest first. */
    list: defineSubject('stores', 'v1.list', pageQuery, commerceStoreList),
    getStatus: defineSubject('stores', 'v1.status.get', byStoreId, storeStatus),
    setStatus: defineSubject(
      'stores',
      'v1.status.set',
      z.object({ storeId: guid, change: setStoreStatusInput }),
      storeStatus,
    ),
    /** Marketfront: any store by id, as distribution partners see it. */
    lookup: defineSubject('stores', 'v1.lookup', byStoreId, marketfrontStore),
  },
} as const;
