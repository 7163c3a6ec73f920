import {
  commerceStore,
  commerceStoreList,
  commerceStoreWithSecret,
  guid,
  marketfrontStore,
  pageQuery,
  setStoreStatusInput,
  specialHours,
  storeProfileInput,
  storeStatus,
  subjects,
} from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemOrNoBody, problemResponses } from '../openapi/responses.js';
import { forwardJson } from './forwarding.js';

const storeParams = z.object({ storeId: guid });
const commerce = { area: 'commerce' as const };
const tags = { commerce: ['Commerce: stores'], marketfront: ['Marketfront: stores'] };

export const storeRoutes: FastifyPluginAsync = async (gateway) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  app.put(
    '/v1/commerce/stores/:storeId',
    {
      config: { ...commerce, rateClass: 'writes' },
      schema: {
        tags: tags.commerce,
        operationId: 'upsertStore',
        summary: 'Create or replace a store profile',
        description:
          'The store id is the partner’s own. Computed fields (status, timestamps) are ignored. ' +
          'The first call with an orderSubmissionUrl creates the store’s whsec_ signing secret ' +
          'and answers it in orderSubmissionSecret, shown this once (null in every other ' +
          'answer; rotate-secret issues a new one). An id owned by another partner answers 404 ' +
          'STORE_NOT_FOUND. A partner holds at most 1,000 stores by default: a new one beyond is ' +
          '409 STORE_LIMIT_REACHED. acceptanceWindowSeconds (60..3,600, default 600) is how long ' +
          'a placed order may stay pending before the platform cancels it. A change of timezone ' +
          'or availability is a store.hours_changed event for subscribed distribution partners.',
        params: storeParams,
        body: storeProfileInput,
        response: {
          200: jsonResponse(
            commerceStoreWithSecret,
            'The profile was replaced: the store as stored',
          ),
          201: jsonResponse(commerceStoreWithSecret, 'The store was created: the store as stored'),
          ...problemResponses('STORE_NOT_FOUND', 'ADDRESS_INVALID', 'STORE_LIMIT_REACHED'),
        },
      },
    },
    async (request, reply) => {
      const { store, created } = await bus.request(
        subjects.stores.upsert,
        { storeId: request.params.storeId, profile: request.body },
        request.ctx,
      );
      return reply.code(created ? 201 : 200).send(store);
    },
  );

  app.get(
    '/v1/commerce/stores/:storeId',
    {
      config: { ...commerce, rateClass: 'reads' },
      schema: {
        tags: tags.commerce,
        operationId: 'getStore',
        summary: 'Read one of your stores',
        description:
          'The profile with its computed fields: status, isOpenNow, nextOpenAt and the active ' +
          'catalogSetId; never the order submission secret. Another partner’s store answers ' +
          '404 STORE_NOT_FOUND.',
        params: storeParams,
        response: {
          200: jsonResponse(commerceStore, 'The store'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(reply, await bus.requestRaw(subjects.stores.get, request.params, request.ctx)),
  );

  // No body schema: @fastify/swagger documents any declared body as required (as the webhook
  // rotate-secret route).
  app.post(
    '/v1/commerce/stores/:storeId/order-submission/rotate-secret',
    {
      config: { ...commerce, rateClass: 'writes' },
      schema: {
        tags: tags.commerce,
        operationId: 'rotateOrderSubmissionSecret',
        summary: 'Replace a store’s order submission signing secret',
        description:
          'Answers the store with its new whsec_ orderSubmissionSecret, shown this once. Until ' +
          'orderSubmissionPreviousSecretExpiresAt (24 hours, STORES_SUBMISSION_SECRET_OVERLAP_MS) ' +
          'submissions carry a signature made with the previous secret too, so the store can ' +
          'switch without refusing any. No body is needed (one sent is ignored). Another ' +
          'partner’s store answers 404 STORE_NOT_FOUND.',
        params: storeParams,
        response: {
          200: jsonResponse(
            commerceStoreWithSecret,
            'The store with its new signing secret (shown this once)',
          ),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.stores.rotateSubmissionSecret, request.params, request.ctx),
      ),
  );

  app.get(
    '/v1/commerce/stores',
    {
      config: { ...commerce, rateClass: 'reads' },
      schema: {
        tags: tags.commerce,
        operationId: 'listStores',
        summary: 'List your stores, oldest first',
        description:
          'limit is 1..100 (default 50) and offset 0..1,000,000; totalCount counts all your ' +
          'stores and hasMore says whether another page follows.',
        querystring: pageQuery,
        response: { 200: jsonResponse(commerceStoreList, 'A page of your stores') },
      },
    },
    async (request, reply) =>
      forwardJson(reply, await bus.requestRaw(subjects.stores.list, request.query, request.ctx)),
  );

  app.get(
    '/v1/commerce/stores/:storeId/status',
    {
      config: { ...commerce, rateClass: 'reads' },
      schema: {
        tags: tags.commerce,
        operationId: 'getStoreStatus',
        summary: 'Get store status',
        description:
          'online; paused with its reason, pausedAt, resumeAt and pausedBy (platform after 3 ' +
          'orders in a row were not accepted in time); or busy with its extraPrepMinutes, ' +
          'pausedAt (when the busy spell began) and resumeAt. A pause or busy spell past its ' +
          'resumeAt reads as online.',
        params: storeParams,
        response: {
          200: jsonResponse(storeStatus, 'The store’s status now'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.stores.getStatus, request.params, request.ctx),
      ),
  );

  app.post(
    '/v1/commerce/stores/:storeId/status',
    {
      config: { ...commerce, rateClass: 'writes' },
      schema: {
        tags: tags.commerce,
        operationId: 'setStoreStatus',
        summary: 'Set store status',
        description:
          'Pause with a reason and an optional future resumeAt (the store is online again from ' +
          'that instant); set busy with extraPrepMinutes (5..120) and an optional future ' +
          'resumeAt (the store keeps taking orders, and every ETA and estimatedReadyAt it gives ' +
          'grows by that many minutes until then); or set online. A resumeAt that is not in the ' +
          'future, or extraPrepMinutes outside 5..120, is 400 REQUEST_INVALID at its pointer. A ' +
          'pause the platform set (pausedBy platform) lasts until you set the store online. ' +
          'Each change is a store.status_changed event for subscribed distribution partners.',
        params: storeParams,
        body: setStoreStatusInput,
        response: {
          200: jsonResponse(storeStatus, 'The store’s status after the change'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    (request) =>
      bus.request(
        subjects.stores.setStatus,
        { storeId: request.params.storeId, change: request.body },
        request.ctx,
      ),
  );

  app.get(
    '/v1/commerce/stores/:storeId/special-hours',
    {
      config: { ...commerce, rateClass: 'reads' },
      schema: {
        tags: tags.commerce,
        operationId: 'getSpecialHours',
        summary: 'Read a store’s special hours',
        description:
          'The dates (in the store’s time zone) whose hours replace the weekly availability, ' +
          'by date: closed, or open in their own windows.',
        params: storeParams,
        response: {
          200: jsonResponse(specialHours, 'The store’s special days'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.stores.getSpecialHours, request.params, request.ctx),
      ),
  );

  app.put(
    '/v1/commerce/stores/:storeId/special-hours',
    {
      config: { ...commerce, rateClass: 'writes' },
      schema: {
        tags: tags.commerce,
        operationId: 'setSpecialHours',
        summary: 'Replace a store’s special hours',
        description:
          'At most 366 days, each date once, in the store’s time zone: `closed: true`, or 1..6 ' +
          'windows that do not overlap (end 00:00:00 is the end of the day). On those dates they ' +
          'replace the weekly availability in every rule that reads hours: isOpenNow, ' +
          'nextOpenAt, STORE_CLOSED, scheduled times and discovery. An empty list removes them.',
        params: storeParams,
        body: specialHours,
        response: {
          200: jsonResponse(specialHours, 'The store’s special days as stored, by date'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    (request) =>
      bus.request(
        subjects.stores.setSpecialHours,
        { storeId: request.params.storeId, days: request.body.days },
        request.ctx,
      ),
  );

  // Registered without the type provider: its bodiless 404 is outside the response schemas.
  gateway.get<{ Params: { storeId: string } }>(
    '/v1/marketfront/stores/:storeId',
    {
      config: { area: 'distribution', rateClass: 'reads' },
      schema: {
        tags: tags.marketfront,
        operationId: 'lookUpStore',
        summary: 'Look up a store by id',
        description:
          'The public view: status (online, paused or busy, with extraPrepMinutes when busy), ' +
          'isOpenNow and nextOpenAt by the weekly and special hours. An unknown store is 404 ' +
          'STORE_NOT_FOUND; an id that is not a GUID is a 404 with no body.',
        // Checked in the handler: the spec wants a bodiless 404, not a 400, for a malformed id.
        params: z.object({ storeId: z.string() }),
        response: {
          200: jsonResponse(marketfrontStore, 'The store'),
          ...problemOrNoBody('STORE_NOT_FOUND', 'for a storeId that is not a GUID'),
        },
      },
    },
    async (request, reply) => {
      const storeId = guid.safeParse(request.params.storeId);
      if (!storeId.success) return reply.code(404).send();
      return forwardJson(
        reply,
        await bus.requestRaw(subjects.stores.lookup, { storeId: storeId.data }, request.ctx),
      );
    },
  );
};
