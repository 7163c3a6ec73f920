import {
  guid,
  subjects,
  webhookDeliveriesQuery,
  webhookDeliveryAttempts,
  webhookDelivery,
  webhookDeliveryList,
  webhookEndpoint,
  webhookEndpointInput,
  webhookEndpointWithSecret,
} from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardJson } from './forwarding.js';

const tags = ['Marketfront: webhooks'];
const webhookRoute = { area: 'distribution' as const };

/**
 * A distribution partner's order-status webhook endpoint and its deliveries:
 * docs/guide/webhooks.md.
 */
export const webhookRoutes: FastifyPluginAsync = async (gateway) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  app.put(
    '/v1/marketfront/webhooks',
    {
      config: { ...webhookRoute, rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'putWebhook',
        summary: 'Register or replace your order-status webhook endpoint',
        description:
          'One endpoint per partner: its url and the event kinds to deliver there ' +
          '(order.created, order.status_changed, order.cancelled). 201 when this call created ' +
          'it, with its whsec_ signing secret, shown this once; 200 when it replaced the ' +
          'endpoint, with secret null (rotate-secret issues a new one). A disabled endpoint ' +
          '(it answered 410 Gone) is active again. Deliveries follow Standard Webhooks ' +
          '(webhook-id, webhook-timestamp, webhook-signature), at least once and in order ' +
          'per order. apiVersion is the API version deliveries are written in (each carries ' +
          'it as pcp-version): absent, the version of this request (its PCP-Version, else ' +
          'your pin). Under 2026-11-01 store event kinds are refused (400 REQUEST_INVALID).',
        body: webhookEndpointInput,
        response: {
          200: jsonResponse(webhookEndpointWithSecret, 'The endpoint was replaced (secret null)'),
          201: jsonResponse(
            webhookEndpointWithSecret,
            'The endpoint was created, with its signing secret (shown this once)',
          ),
        },
      },
    },
    async (request, reply) => {
      const { endpoint, created } = await bus.request(
        subjects.ordering.putWebhook,
        request.body,
        request.ctx,
      );
      return reply.code(created ? 201 : 200).send(endpoint);
    },
  );

  app.get(
    '/v1/marketfront/webhooks',
    {
      config: { ...webhookRoute, rateClass: 'reads' },
      schema: {
        tags,
        operationId: 'getWebhook',
        summary: 'Read your webhook endpoint',
        description:
          'The url, event kinds, apiVersion and status (disabled, with disabledReason, after ' +
          'it answered 410 Gone), never the secret. 404 WEBHOOK_NOT_FOUND when none is registered.',
        response: {
          200: jsonResponse(webhookEndpoint, 'Your endpoint'),
          ...problemResponses('WEBHOOK_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(reply, await bus.requestRaw(subjects.ordering.getWebhook, {}, request.ctx)),
  );

  // The two actions declare no body schema: @fastify/swagger documents any declared body as
  // required, and a request without one, the usual kind here, would fail its validation.
  app.post(
    '/v1/marketfront/webhooks/rotate-secret',
    {
      config: { ...webhookRoute, rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'Replace your webhook signing secret',
        description:
          'Answers the endpoint with its new whsec_ secret, shown this once. Until ' +
          'previousSecretExpiresAt (24 hours) deliveries carry a signature made with the ' +
          'previous secret too, so receivers can switch without losing any. No body is ' +
          'needed (one sent, such as {}, is ignored). 404 WEBHOOK_NOT_FOUND when no endpoint ' +
          'is registered.',
        response: {
          200: jsonResponse(
            webhookEndpointWithSecret,
            'The endpoint with its new signing secret (shown this once)',
          ),
          ...problemResponses('WEBHOOK_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.ordering.rotateWebhookSecret, {}, request.ctx),
      ),
  );

  app.get(
    '/v1/marketfront/webhooks/deliveries',
    {
      config: { ...webhookRoute, rateClass: 'reads' },
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary: 'List your webhook deliveries, newest first',
        description:
          'All deliveries, or those failed (another try is scheduled) or dead (the retry ' +
          'schedule ran out, or the endpoint answered 410). limit is 1..100 (default 20). ' +
          'nextCursor is null on the last page; otherwise send it back as cursor for the next ' +
          'page (it is opaque; one that was not issued is 400 REQUEST_INVALID at /cursor).',
        querystring: webhookDeliveriesQuery,
        response: { 200: jsonResponse(webhookDeliveryList, 'A page of your deliveries') },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.ordering.listWebhookDeliveries, request.query, request.ctx),
      ),
  );

  app.get(
    '/v1/marketfront/webhooks/deliveries/:deliveryId/attempts',
    {
      config: { ...webhookRoute, rateClass: 'reads' },
      schema: {
        tags,
        operationId: 'listWebhookDeliveryAttempts',
        summary: 'List the tries of one of your webhook deliveries',
        description:
          'Each try of the delivery, oldest first: its attempt number (a resend counts from 1 ' +
          'again), outcome (delivered, failed, or dead when it was the last), the response ' +
          'status (null when the endpoint did not answer), latency and error. The 100 most ' +
          'recent tries are listed; attemptsOmitted counts the older ones. A try the ' +
          "partner's open breaker held back is none. A deliveryId that is not yours is 404 " +
          'WEBHOOK_DELIVERY_NOT_FOUND.',
        params: z.object({ deliveryId: guid }),
        response: {
          200: jsonResponse(webhookDeliveryAttempts, "The delivery's tries"),
          ...problemResponses('WEBHOOK_DELIVERY_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(
          subjects.ordering.listWebhookDeliveryAttempts,
          request.params,
          request.ctx,
        ),
      ),
  );

  app.post(
    '/v1/marketfront/webhooks/deliveries/:deliveryId/resend',
    {
      config: { ...webhookRoute, rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'resendWebhookDelivery',
        summary: 'Deliver one of your webhook deliveries again',
        description:
          'Whatever became of it (dead, failed or delivered), it is tried again now with a ' +
          'fresh retry schedule and the same webhook-id, so a receiver that already has it ' +
          'can tell. 202 with the delivery, pending again. No body is needed (one sent is ' +
          'ignored). A deliveryId that is not yours is 404 WEBHOOK_DELIVERY_NOT_FOUND.',
        params: z.object({ deliveryId: guid }),
        response: {
          202: jsonResponse(webhookDelivery, 'The delivery, pending again'),
          ...problemResponses('WEBHOOK_DELIVERY_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply.code(202),
        await bus.requestRaw(subjects.ordering.resendWebhookDelivery, request.params, request.ctx),
      ),
  );
};
