// EXPLAIN (ANALYZE, BUFFERS) of the stores service's own discovery statements, built without
// a connection, at a location of the bench database.
import type { FulfillmentType } from '@pcp/contracts';
import {
  discoveryPageStatement,
  nearestCandidatesStatement,
} from '../../../../../services/stores/src/db/store-discovery.repository.js';
import type { BenchPlatform } from '../../platform/bench-platform.js';
import type { Coordinates } from './stores.js';

/** The discovery query of the stores service for `limit` stores, or its walk's batch. */
function discoveryQuery(
  center: Coordinates,
  fulfillmentType: FulfillmentType,
  searchRadiusMeters: number,
  limit: number,
  walk = false,
) {
  const q = {
    center,
    fulfillmentType,
    query: undefined,
    searchRadiusMeters,
    mode: 'live' as const,
  };
  return walk
    ? nearestCandidatesStatement(q, { after: undefined, limit, at: new Date() })
    : discoveryPageStatement(q, { limit, offset: 0 });
}

export async function explainDiscovery(
  platform: BenchPlatform,
  center: Coordinates,
  pageLimit: number,
): Promise<void> {
  const client = await platform.connectDatabase({ options: '-c search_path=stores' });
  try {
    const explain = async (
      title: string,
      { sql, parameters = [] }: { sql: string; parameters?: readonly unknown[] },
    ) => {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `explain (analyze, buffers) ${sql}`,
        [...parameters],
      );
      process.stdout.write(`\n-- ${title}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}\n`);
    };
    const radius = (
      await client.query<{ r: number }>('select max(delivery_radius_meters) as r from stores')
    ).rows[0]!.r;
    process.stdout.write(
      `\nEXPLAIN (ANALYZE, BUFFERS) at ${center.latitude}, ${center.longitude}` +
        ` (max delivery radius ${radius} m)\n`,
    );
    await explain('maxDeliveryRadius', {
      sql: 'select max(delivery_radius_meters) as radius from stores',
    });
    await explain(
      `PICKUP, limit ${pageLimit}`,
      discoveryQuery(center, 'PICKUP', 50_000, pageLimit),
    );
    await explain(
      `DELIVERY_BY_MERCHANT, limit ${pageLimit}`,
      discoveryQuery(center, 'DELIVERY_BY_MERCHANT', radius, pageLimit),
    );
    await explain(
      'PICKUP, the nearest 5,000 (the largest batch of the scheduledTime walk)',
      discoveryQuery(center, 'PICKUP', 50_000, 5_000, true),
    );
  } finally {
    await client.end();
  }
}
