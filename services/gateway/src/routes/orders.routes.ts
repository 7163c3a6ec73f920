import {
  addressInput,
  guid,
  order,
  orderRequest,
  placeOrderRequest,
  savedAddress,
  savedAddressList,
  subjects,
  validatedOrder,
} from '@pcp/contracts';
import { AppError, type BusClient, type RequestContext } from '@pcp/service-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RecordedProblem } from '../http/problem.js';
import {
  forwardBody,
  forwardJson,
  jsonResponse,
  problemResponses,
  registerForwardingRoutes,
} from './route-config.js';

const tags = ['Marketfront: orders'];
const addressTags = ['Marketfront: saved addresses'];
const addressRoute = { area: 'distribution' as const, endUser: 'required' as const };

/** RFC 9110 token characters a header value may carry; a UUID v4 is the advised key. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export function registerOrderRoutes(
  gateway: FastifyInstance,
  bus: BusClient,
  contextOf: (request: FastifyRequest) => RequestContext,
  placeTimeoutMs: number,
): void {
  registerForwardingRoutes(gateway, (scope) =>
    scope.withTypeProvider<ZodTypeProvider>().post(
      '/v1/marketfront/orders/validate',
      {
        // The end user is needed when the order refers to a saved addressId or a paymentId.
        config: { area: 'distribution', rateClass: 'reads', endUser: 'optional' },
        schema: {
          tags,
          operationId: 'validateOrder',
          summary: 'Price and check an order without placing it',
          description:
            'Writes nothing. Every business problem is 200 with isValid false, errors[] with ' +
            'RFC 6901 pointers (at most 100; errorsOmitted counts the rest) and amounts null: ' +
            'STORE_CLOSED, OUTSIDE_AVAILABILITY_WINDOW, ITEM_UNAVAILABLE, MODIFIER_REQUIRED, ' +
            'DELIVERY_UNAVAILABLE, ADDRESS_INVALID, MINIMUM_NOT_MET, PRECISION_EXCEEDED, ' +
            'ORDER_TOTAL_DIFFERENT, CATALOGSET_NOT_FOUND, PAYMENT_TOKEN_INVALID (a CARD ' +
            "order's paymentId that is not a card of the end user) and the fulfillment rules. " +
            '4xx only for the body shape (400 REQUEST_INVALID), the client context (400 ' +
            'CLIENT_CONTEXT_REQUIRED, CLIENT_IP_INVALID, CLIENT_USER_AGENT_INVALID) and an ' +
            'unknown store (404 STORE_NOT_FOUND). An order that refers to a saved addressId or ' +
            'a paymentId needs X-End-User-Id (401 SESSION_USER_REQUIRED).',
          body: orderRequest,
          response: {
            200: jsonResponse(
              validatedOrder,
              'The order priced and checked: isValid with amounts, or isValid false with ' +
                'errors[] and amounts null',
            ),
            ...problemResponses(
              'CLIENT_CONTEXT_REQUIRED',
              'CLIENT_IP_INVALID',
              'CLIENT_USER_AGENT_INVALID',
              'STORE_NOT_FOUND',
            ),
          },
        },
      },
      forwardBody(bus, subjects.ordering.validate, contextOf),
    ),
  );

  registerForwardingRoutes(gateway, (scope) =>
    scope.withTypeProvider<ZodTypeProvider>().post(
      '/v1/marketfront/orders/place',
      {
        config: {
          area: 'distribution',
          rateClass: 'writes',
          endUser: 'required',
          idempotencyKey: 'required',
        },
        schema: {
          tags,
          operationId: 'placeOrder',
          summary: 'Place an order: re-validate, charge the card, submit it to the store',
          description:
            'Needs Idempotency-Key (400 MISSING_IDEMPOTENCY_KEY; a fresh UUID per attempt) and ' +
            'X-End-User-Id. 201 with the Order, open: pending, or confirmed when the store ' +
            'took it at its submission URL. Final outcomes are kept 24 hours and replayed byte ' +
            'for byte with Idempotent-Replayed: true: the order, 400 ORDER_INVALID with the ' +
            'validate errors[], 400 PAYMENT_DECLINED (errors[] code PAYMENT_VELOCITY_EXCEEDED ' +
            'when the card was declined too often lately: nothing held, the processor not ' +
            'asked) or PAYMENT_TOKEN_INVALID, 400 ' +
            'STORE_REJECTED, 403 PAYMENT_TYPE_NOT_ALLOWED, 404 STORE_NOT_FOUND. A replayed ' +
            "ProblemDetail's requestId and timestamp are the first answer's (the same bytes), " +
            'while the X-Request-Id header names the request that got the replay. Retryable ' +
            'failures (400 PAYMENT_FAILED, 503 PAYMENT_PROCESSOR_UNAVAILABLE or ' +
            'SERVICE_UNAVAILABLE, 5xx) keep the key: retry it unchanged and the attempt resumes ' +
            'where it stopped, never charging twice. 409 IDEMPOTENCY_KEY_IN_PROGRESS with ' +
            'Retry-After while it runs; 422 IDEMPOTENCY_KEY_CONFLICT for the same key with ' +
            'another body, partner or end user. A key that gets no final answer within 24 ' +
            'hours of its first use is settled: its payment released, no order placed, and 400 ' +
            'IDEMPOTENCY_KEY_EXPIRED is its answer (kept 24 hours from then). An attempt the ' +
            'store may already hold (its submission or capture was sent) is finished by the ' +
            'platform soon after its retries stop, so a retry later gets the order.',
          body: placeOrderRequest,
          response: {
            201: jsonResponse(
              order,
              'The order, placed: open, pending (or confirmed when the store took it at its ' +
                'submission URL)',
              ['Location'],
            ),
            ...problemResponses(
              'CLIENT_CONTEXT_REQUIRED',
              'CLIENT_IP_INVALID',
              'CLIENT_USER_AGENT_INVALID',
              'ORDER_INVALID',
              'STORE_REJECTED',
              'PAYMENT_DECLINED',
              'PAYMENT_FAILED',
              'PAYMENT_TOKEN_INVALID',
              'PAYMENT_TYPE_NOT_ALLOWED',
              'STORE_NOT_FOUND',
              'IDEMPOTENCY_KEY_EXPIRED',
              'PAYMENT_PROCESSOR_UNAVAILABLE',
            ),
          },
        },
      },
      async (request, reply) => {
        const key = request.headers['idempotency-key'];
        if (key === undefined) {
          throw new AppError(
            'MISSING_IDEMPOTENCY_KEY',
            'Send an Idempotency-Key header: a fresh UUID for each order attempt',
          );
        }
        if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
          throw new AppError(
            'REQUEST_INVALID',
            'Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is advised)',
          );
        }
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const outcome = await bus.request(
          subjects.ordering.place,
          body,
          { ...contextOf(request), idempotencyKey: key },
          { timeoutMs: placeTimeoutMs },
        );
        if (outcome.problem) throw new RecordedProblem(outcome.problem, outcome.replayed);
        if (outcome.replayed) reply.header('idempotent-replayed', 'true');
        if (outcome.orderId) reply.header('location', `/v1/marketfront/orders/${outcome.orderId}`);
        // Only a created order is a success outcome; its recorded text is the body.
        return forwardJson(reply.code(201), Buffer.from(outcome.order ?? ''));
      },
    ),
  );

  const app = gateway.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/v1/marketfront/addresses',
    {
      config: { ...addressRoute, rateClass: 'writes' },
      schema: {
        tags: addressTags,
        operationId: 'saveAddress',
        summary: 'Save a delivery address for an end user',
        description:
          'Needs X-End-User-Id. Answers the resolved, geocoded address: 201, or 200 with the ' +
          'existing addressId when the end user saved the same address before (case and ' +
          'spacing aside). 422 ADDRESS_INVALID when it cannot be resolved; an end user holds at ' +
          'most 50 (409 ADDRESS_LIMIT_REACHED). Use it as fulfillment.address.addressId.',
        body: addressInput,
        response: {
          200: jsonResponse(savedAddress, 'The end user had saved this address: the existing one'),
          201: jsonResponse(savedAddress, 'The address, resolved and saved'),
          ...problemResponses('ADDRESS_INVALID', 'ADDRESS_LIMIT_REACHED'),
        },
      },
    },
    async (request, reply) => {
      const { address, created } = await bus.request(
        subjects.ordering.saveAddress,
        request.body,
        contextOf(request),
      );
      return reply.code(created ? 201 : 200).send(address);
    },
  );

  app.get(
    '/v1/marketfront/addresses',
    {
      config: { ...addressRoute, rateClass: 'reads' },
      schema: {
        tags: addressTags,
        operationId: 'listAddresses',
        summary: 'List the end user’s saved addresses, newest first',
        description: 'Needs X-End-User-Id. At most 50 addresses, all on one page.',
        response: { 200: jsonResponse(savedAddressList, 'The end user’s saved addresses') },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.ordering.listAddresses, {}, contextOf(request)),
      ),
  );

  app.delete(
    '/v1/marketfront/addresses/:addressId',
    {
      config: { ...addressRoute, rateClass: 'writes' },
      schema: {
        tags: addressTags,
        operationId: 'deleteAddress',
        summary: 'Delete one of the end user’s saved addresses',
        description:
          'Deleting it again is 204; an addressId that is not the end user’s is 422 ADDRESS_INVALID.',
        params: z.object({ addressId: guid }),
        response: {
          204: z.null().describe('Deleted (or already deleted)'),
          ...problemResponses('ADDRESS_INVALID'),
        },
      },
    },
    async (request, reply) => {
      await bus.request(subjects.ordering.deleteAddress, request.params, contextOf(request));
      return reply.code(204).send(null);
    },
  );
}
