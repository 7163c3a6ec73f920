// The commerce partner opens its store and has the platform ingest its CatalogSet.
import { ingestCatalog, type CatalogIngestStatus, type PlatformClient } from '@pcp/client';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { call, exchange } from '../exchanges.js';
import { check, dim, green, json, note, short, step } from '../output.js';
import { startCatalogHost } from '../partner-servers.js';

const INGEST_TIMEOUT_MS = 30_000;

export interface OpenStore {
  storeId: string;
  catalogSetId: string;
}

export async function openStore(
  commerce: PlatformClient,
  storeName: string,
  servers: Server[],
): Promise<OpenStore> {
  step('The commerce partner creates its store');
  const storeId = randomUUID();
  // The tests' store, taking pickup orders only, open every day all day (so open now
  // whatever the time in Chicago), and no order submission URL.
  const profile = storeProfile({
    name: storeName,
    fulfillmentTypes: ['PICKUP'],
    delivery: undefined,
    availability: alwaysOpen,
    orderSubmissionUrl: undefined,
  });
  const store = await call(
    () =>
      commerce.PUT('/v1/commerce/stores/{storeId}', {
        params: { path: { storeId } },
        body: profile,
      }),
    201,
    {
      note: `"${storeName}", America/Chicago, open every day all day, pickup in 15 min, tax 8.75%`,
      answer: (body) => `storeId ${short(body.storeId)}, status ${body.status}`,
    },
  );
  check(store.storeId === storeId, `the store ${storeId}`, store.storeId);

  step('… and sets it online');
  const online = await call(
    () =>
      commerce.POST('/v1/commerce/stores/{storeId}/status', {
        params: { path: { storeId } },
        body: { status: 'online' },
      }),
    200,
    { note: 'status=online', answer: (body) => `status ${body.status}` },
  );
  check(online.status === 'online', 'status online', online.status);

  step('… hosts its CatalogSet on this machine and has the platform ingest it');
  const { document } = cartTestCatalog(storeId);
  const catalogHost = await startCatalogHost(document);
  servers.push(catalogHost.server);
  note(dim(`CatalogSet ${short(document.catalogSetId)} served at ${catalogHost.url}`));
  const ingest = await exchange(
    () =>
      ingestCatalog(commerce, {
        storeId,
        callbackUrl: catalogHost.url,
        timeoutMs: INGEST_TIMEOUT_MS,
      }),
    {
      answer: (body: Partial<CatalogIngestStatus> & { statusUrl?: string }, headers) =>
        body?.statusUrl
          ? `catalogIngestId ${short(body.catalogIngestId)}, Retry-After ${headers.get('retry-after')}`
          : (body?.status ?? ''),
    },
  );
  check(ingest.status === 'succeeded', 'the ingest to succeed', () => json(ingest.errors));
  const { summary } = ingest;
  check(summary, 'a summary of the ingest', 'none');
  note(
    `${green('✓')} succeeded: ${summary.items} items, ${summary.sections} sections, ` +
      `${summary.modifierGroups} modifier groups (${summary.added} added)`,
  );
  return { storeId, catalogSetId: document.catalogSetId };
}
