import { problemDetail } from '@pcp/contracts';
import type { FastifyReply } from 'fastify';
import type { RateClass } from '../db/partner.table.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which kind of partner may call the route; absent for public routes (health, docs). */
    area?: 'commerce' | 'distribution';
    rateClass?: RateClass;
  }
}

/** ProblemDetail responses to document on a route, by status. */
export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(
    [401, 403, 429, 503, 504, ...statuses].map((status) => [status, problemDetail]),
  );
}

/**
 * Send a service's result bytes as the response body, unparsed (the service's handler is
 * typed by the same contract the route documents).
 */
export function forwardJson(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(body);
}
