import { problemDetail } from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
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

/** Deeper JSON than any contract allows (a cart nests modifiers 5 levels, about 25 deep). */
const MAX_JSON_DEPTH = 64;

/** Nesting depth of parsed JSON, walked without recursion and given up past `limit`. */
function exceedsDepth(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, depth] = next;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return false;
}

/**
 * For routes whose body is the NATS payload unchanged: the service validates it against
 * the same contract and answers with the same pointers, so validating here too would only
 * repeat the work. Only a depth bound stays, so the body can be serialized for NATS
 * safely. The schema still documents the route.
 */
export const validatedByService = {
  validatorCompiler: () => (value: unknown) =>
    exceedsDepth(value, MAX_JSON_DEPTH)
      ? {
          error: new AppError(
            'REQUEST_INVALID',
            `The body nests deeper than ${MAX_JSON_DEPTH} levels`,
          ),
        }
      : { value },
};
