import { guid, subjects, vaultCardInput, vaultedCard, vaultedCardList } from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardJson, registerForwardingRoutes } from './forwarding.js';

export interface PaymentRoutesOptions {
  /** How long a call that reaches the payment processor may take. */
  readonly timeoutMs: number;
}

const tags = ['Marketfront: payment cards'];
const cardRoute = { area: 'distribution' as const, endUser: 'required' as const };

export const paymentRoutes: FastifyPluginAsync<PaymentRoutesOptions> = async (gateway, options) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  // The card travels to the payments service as the bytes that arrived: the gateway never
  // holds the number or CVC as values (nor logs, validates or echoes them).
  registerForwardingRoutes(gateway, (scope) =>
    scope.withTypeProvider<ZodTypeProvider>().post(
      '/v1/marketfront/payments/cards',
      {
        config: { ...cardRoute, rateClass: 'writes' },
        schema: {
          tags,
          operationId: 'vaultCard',
          summary: 'Vault a payment card for an end user',
          description:
            'Needs X-End-User-Id (401 SESSION_USER_REQUIRED) and a partner allowed to take CARD ' +
            '(403 PAYMENT_TYPE_NOT_ALLOWED). The processor keeps the card; the number and CVC are ' +
            'never stored, logged or returned. Luhn, network, expiry and CVC length are checked ' +
            '(400 CARD_INVALID with pointers). The same card vaulted again by the same end user ' +
            'answers 200 with its existing paymentId; an end user holds at most 25 cards (409 ' +
            'CARD_LIMIT_REACHED). Vaulting too often, or a card declined too often lately, is ' +
            '429 PAYMENT_VELOCITY_EXCEEDED with Retry-After. 503 PAYMENT_PROCESSOR_UNAVAILABLE ' +
            'is retryable; 503 LIVE_PAYMENTS_NOT_CONFIGURED (a live key where the deployment has ' +
            'no live processor) is not; 503 SANDBOX_PROCESSOR_UNVERIFIED (a test key while the ' +
            'sandbox processor has not confirmed it is a test processor) is, after Retry-After.',
          body: vaultCardInput,
          response: {
            200: jsonResponse(vaultedCard, 'The end user had vaulted this card: the existing one'),
            201: jsonResponse(vaultedCard, 'The card, vaulted'),
            ...problemResponses(
              'CARD_INVALID',
              'PAYMENT_TYPE_NOT_ALLOWED',
              'CARD_LIMIT_REACHED',
              'PAYMENT_VELOCITY_EXCEEDED',
              'PAYMENT_PROCESSOR_UNAVAILABLE',
              'LIVE_PAYMENTS_NOT_CONFIGURED',
              'SANDBOX_PROCESSOR_UNVERIFIED',
            ),
          },
        },
      },
      async (request, reply) => {
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const { card, created } = await bus.request(
          subjects.payments.vaultCard,
          body,
          request.ctx,
          { timeoutMs: options.timeoutMs },
        );
        return reply.code(created ? 201 : 200).send(card);
      },
    ),
  );

  app.get(
    '/v1/marketfront/payments/cards',
    {
      config: { ...cardRoute, rateClass: 'reads' },
      schema: {
        tags,
        operationId: 'listCards',
        summary: 'List the end user’s vaulted cards, newest first',
        description:
          'Needs X-End-User-Id. Brand, last4 and expiry of each card (at most 25), never its ' +
          'number or CVC.',
        response: { 200: jsonResponse(vaultedCardList, 'The end user’s cards') },
      },
    },
    async (request, reply) =>
      forwardJson(reply, await bus.requestRaw(subjects.payments.listCards, {}, request.ctx)),
  );

  app.delete(
    '/v1/marketfront/payments/cards/:paymentId',
    {
      config: { ...cardRoute, rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'deleteCard',
        summary: 'Delete one of the end user’s cards',
        description:
          'Deleting a deleted card again is 204; a paymentId that is not the end user’s is 400 ' +
          'PAYMENT_TOKEN_INVALID.',
        params: z.object({ paymentId: guid }),
        response: {
          204: z.null().describe('Deleted (or already deleted)'),
          ...problemResponses('PAYMENT_TOKEN_INVALID'),
        },
      },
    },
    async (request, reply) => {
      await bus.request(subjects.payments.deleteCard, request.params, request.ctx);
      return reply.code(204).send(null);
    },
  );
};
