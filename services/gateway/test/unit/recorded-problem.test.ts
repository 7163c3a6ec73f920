import { recordedPlaceProblem, type OrderError } from '@pcp/contracts';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { problemFor, RecordedProblem } from '../../src/http/problem.js';

const docsUrl = 'https://api.partner-commerce.test/docs';
/** The request that got the replay. */
const replayRequest = {
  id: 'replay-request',
  url: '/v1/marketfront/orders/place',
} as FastifyRequest;

const unavailable = (index: number): OrderError => ({
  code: 'ITEM_UNAVAILABLE',
  message: 'The item is not available',
  pointer: `/cart/lineItems/${index}`,
});

/** A recorded place failure as ordering replies it, read through the subject's contract. */
const recorded = (problem: Record<string, unknown>) =>
  recordedPlaceProblem.parse({
    errorCode: 'ORDER_INVALID',
    detail: 'The order cannot be placed as it is; see errors',
    requestId: 'first-request',
    timestamp: '2026-11-22T18:05:00.000Z',
    ...problem,
  });

describe('a recorded place failure', () => {
  it('renders as first answered, with how many errors were left out', () => {
    const errors = Array.from({ length: 100 }, (_, index) => unavailable(index));
    const problem = problemFor(
      replayRequest,
      new RecordedProblem(recorded({ errors, errorsOmitted: 7 }), true),
      docsUrl,
    );
    expect(problem).toMatchObject({
      status: 400,
      errorCode: 'ORDER_INVALID',
      requestId: 'first-request',
      timestamp: '2026-11-22T18:05:00.000Z',
      errorsOmitted: 7,
    });
    expect(problem.errors).toEqual(errors);
  });

  it('says nothing of omitted errors when none were left out', () => {
    const problem = problemFor(
      replayRequest,
      new RecordedProblem(recorded({ errors: [unavailable(0)] }), false),
      docsUrl,
    );
    expect(problem.errors).toHaveLength(1);
    expect(problem).not.toHaveProperty('errorsOmitted');
  });
});
