import {
  orderLimits,
  toMinorUnits,
  type FulfillmentInput,
  type OrderClient,
  type OrderError,
} from '@pcp/contracts';
import { isPublicAddress } from '@pcp/service-kit';

/** A client context problem: each is a 400 of its own code (the spec's Errors table). */
export interface ClientProblem {
  readonly code: 'CLIENT_CONTEXT_REQUIRED' | 'CLIENT_IP_INVALID' | 'CLIENT_USER_AGENT_INVALID';
  readonly message: string;
  readonly pointer: string;
}

/**
 * The end customer's context, checked before anything else is looked at: present with an
 * ip and a user agent that are not blank, an ip that parses and is public (not private,
 * loopback, link-local, CGNAT or reserved; IPv4-mapped IPv6 judged as its IPv4), and a user
 * agent of at most 512 characters.
 */
export function checkClient(client: OrderClient | null | undefined): ClientProblem | undefined {
  const ip = client?.ip?.trim();
  const userAgent = client?.userAgent;
  if (!client || !ip || !userAgent?.trim()) {
    return {
      code: 'CLIENT_CONTEXT_REQUIRED',
      message: 'Send client.ip and client.userAgent of the end customer',
      pointer: !client ? '/client' : !ip ? '/client/ip' : '/client/userAgent',
    };
  }
  if (!isPublicAddress(ip)) {
    return {
      code: 'CLIENT_IP_INVALID',
      message: 'client.ip must be the end customer’s public address',
      pointer: '/client/ip',
    };
  }
  if (userAgent.length > orderLimits.userAgentMaxLength) {
    return {
      code: 'CLIENT_USER_AGENT_INVALID',
      message: `client.userAgent must be at most ${orderLimits.userAgentMaxLength} characters`,
      pointer: '/client/userAgent',
    };
  }
  return undefined;
}

/**
 * The fulfillment rules of the spec that are business problems
 * (docs/guide/orders.md#order-request): a scheduled time exactly when SCHEDULED, and then in the
 * future; delivery instructions of at most 500 characters. Returns the instant the order is for
 * (now for ASAP), or null when it has none.
 */
export function checkFulfillment(
  fulfillment: FulfillmentInput,
  now: Date,
): { errors: OrderError[]; orderTime: Date | null } {
  const errors: OrderError[] = [];
  const problem = (code: string, message: string, pointer: string) =>
    errors.push({ code, message, pointer });
  let orderTime: Date | null = now;
  if (fulfillment.scheduleType === 'ASAP') {
    if (fulfillment.scheduledTime != null) {
      problem(
        'SCHEDULED_TIME_NOT_ALLOWED',
        'An ASAP order has no scheduledTime',
        '/fulfillment/scheduledTime',
      );
    }
  } else if (fulfillment.scheduledTime == null) {
    orderTime = null;
    problem(
      'SCHEDULED_TIME_REQUIRED',
      'A SCHEDULED order needs a scheduledTime',
      '/fulfillment/scheduledTime',
    );
  } else {
    orderTime = new Date(fulfillment.scheduledTime);
    if (orderTime.getTime() <= now.getTime()) {
      problem(
        'SCHEDULED_TIME_IN_PAST',
        'The scheduledTime must be in the future',
        '/fulfillment/scheduledTime',
      );
    }
  }
  if (
    fulfillment.mode === 'DELIVERY_BY_MERCHANT' &&
    fulfillment.instructions &&
    fulfillment.instructions.length > orderLimits.instructionsMaxLength
  ) {
    problem(
      'INSTRUCTIONS_TOO_LONG',
      `Delivery instructions must be at most ${orderLimits.instructionsMaxLength} characters`,
      '/fulfillment/instructions',
    );
  }
  return { errors, orderTime };
}

/**
 * An amount of the request in minor units of the store's currency, or a PRECISION_EXCEEDED
 * problem at its pointer when it has more fraction digits than the currency allows.
 */
export function amountInCurrency(
  amount: number,
  currency: string,
  pointer: string,
): { minor: number } | { error: OrderError } {
  const minor = toMinorUnits(amount, currency);
  if (minor === null) {
    return {
      error: {
        code: 'PRECISION_EXCEEDED',
        message: `The amount has more fraction digits than ${currency} allows`,
        pointer,
      },
    };
  }
  return { minor };
}
