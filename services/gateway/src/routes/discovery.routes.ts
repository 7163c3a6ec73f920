import { discoverStoresInput, discoverStoresResult, subjects } from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardBody, registerForwardingRoutes } from './forwarding.js';

/** Marketfront: the stores that serve a customer's location. */
export const discoveryRoutes: FastifyPluginAsync = async (gateway) => {
  registerForwardingRoutes(gateway, (scope) =>
    scope.withTypeProvider<ZodTypeProvider>().post(
      '/v1/marketfront/stores/discover',
      {
        config: { area: 'distribution', rateClass: 'discovery' },
        schema: {
          tags: ['Marketfront: stores'],
          operationId: 'discoverStores',
          summary: 'Discover stores for a location',
          description:
            'Stores offering the fulfillment type, nearest first, with distanceMeters. Delivery keeps ' +
            'stores whose delivery radius covers the location; pickup looks within 50 km. An address ' +
            'is geocoded (422 ADDRESS_INVALID when it cannot be); coordinates are used as given. ' +
            'With scheduledTime only stores open then are returned, searched among the nearest ' +
            '20,000 matching stores (STORES_DISCOVERY_SCAN_CAP): hasMore is exact; totalCount ' +
            'counts the open stores examined, exact when hasMore is false and a lower bound when ' +
            'it is true. offset runs 0..10,000. Opening (isOpenNow, nextOpenAt, scheduledTime) ' +
            'follows each store’s weekly hours and its special hours on their dates; a busy store ' +
            'is listed with its extraPrepMinutes, already added to its ETAs.',
          body: discoverStoresInput,
          response: {
            200: jsonResponse(
              discoverStoresResult,
              'The stores serving the location, nearest first',
            ),
            ...problemResponses('ADDRESS_INVALID'),
          },
        },
      },
      forwardBody(subjects.stores.discover),
    ),
  );
};
