import {
  decodePlaceReply,
  order,
  orderRequest,
  placeOrderRequest,
  recordedPlaceProblem,
  subjects,
  validatedOrder,
} from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { RecordedProblem } from '../http/problem.js';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardBody, forwardJson, registerForwardingRoutes } from './forwarding.js';

const tags = ['Marketfront: orders'];

export interface OrderRoutesOptions {
  /** How long a place may take: it re-validates, charges the card and submits the order. */
  readonly placeTimeoutMs: number;
}

export const orderRoutes: FastifyPluginAsync<OrderRoutesOptions> = async (gateway, options) => {
  const { bus } = gateway;
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
            "ORDER_TOTAL_DIFFERENT, CATALOGSET_NOT_FOUND, CURRENCY_MISMATCH (the store's " +
            'profile and CatalogSet are in different currencies), PAYMENT_TOKEN_INVALID (a CARD ' +
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
      forwardBody(subjects.ordering.validate),
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
              'LIVE_PAYMENTS_NOT_CONFIGURED',
              'SANDBOX_PROCESSOR_UNVERIFIED',
            ),
          },
        },
      },
      async (request, reply) => {
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const { head, recorded } = decodePlaceReply(
          await bus.requestRaw(subjects.ordering.place, body, request.ctx, {
            timeoutMs: options.placeTimeoutMs,
          }),
        );
        if (head.status >= 300) {
          // A recorded failure renders as a ProblemDetail (small, and rarely replayed).
          const problem = recordedPlaceProblem.parse(JSON.parse(recorded.toString('utf8')));
          throw new RecordedProblem(problem, head.replayed);
        }
        if (head.replayed) reply.header('idempotent-replayed', 'true');
        if (head.orderId) reply.header('location', `/v1/marketfront/orders/${head.orderId}`);
        // Only a created order is a success outcome; its recorded text is the body, as bytes.
        return forwardJson(reply.code(201), recorded);
      },
    ),
  );
};
