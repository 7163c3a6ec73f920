import { problemDetail } from '@pcp/contracts';
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
