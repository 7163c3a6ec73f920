import type { components, paths } from '@pcp/client';
import createClient from 'openapi-fetch';

/**
 * The console's only way to the platform: the gateway's public API on this origin, typed
 * from the OpenAPI document (`@pcp/client`'s generated paths), authenticated by the session
 * cookie. Every unsafe request carries the session's CSRF token, which lives in memory only.
 */

export type ProblemDetail = components['schemas']['ProblemDetail'];

/** The JSON body a path's method answers with `status`. */
type Body<
  P extends keyof paths,
  M extends 'get' | 'put' | 'post',
  S extends number = 200,
> = paths[P][M] extends { responses: { [K in S]: { content: { 'application/json': infer B } } } }
  ? B
  : never;

export type Store = Body<'/v1/commerce/stores/{storeId}', 'get'>;
export type StoreList = Body<'/v1/commerce/stores', 'get'>;
export type StoreStatus = Body<'/v1/commerce/stores/{storeId}/status', 'get'>;
export type SpecialHours = Body<'/v1/commerce/stores/{storeId}/special-hours', 'get'>;
export type ItemAvailability = Body<'/v1/commerce/stores/{storeId}/item-availability', 'get'>;
export type WeeklyWindow = Store['availability'][number];
export type Order = Body<'/v1/marketfront/orders/{orderId}', 'get'>;
export type OrderSummary = components['schemas']['OrderSummary'];
export type OrderTimeline = components['schemas']['OrderTimeline'];
export type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type StoreOrder = Body<'/v1/commerce/stores/{storeId}/orders', 'get'>['orders'][number];
export type OrderStatusChange = NonNullable<
  paths['/v1/commerce/orders/{orderId}/status']['post']['requestBody']
>['content']['application/json'];
export type RequestLogPage = Body<'/v1/commerce/requests', 'get'>;
export type RequestErrorGroups = Body<'/v1/commerce/requests/errors', 'get'>;
export type ApiKeyList = Body<'/v1/commerce/keys', 'get'>;
export type RateLimitUsage = Body<'/v1/commerce/rate-limits', 'get'>;
export type ApiVersionPin = Body<'/v1/commerce/api-version', 'get'>;
export type MarketStore = Body<'/v1/marketfront/stores/{storeId}', 'get'>;
export type TestResetResult = Body<'/v1/test/reset', 'post'>;

/** What the gateway answers for a session (POST /v1/sessions, GET /v1/sessions/current). */
export type Session = components['schemas']['Session'];

/** A refused request: the gateway's ProblemDetail, or one made up for a network failure. */
export class ApiProblem extends Error {
  constructor(readonly problem: ProblemDetail) {
    super(`${problem.errorCode}: ${problem.detail}`);
    this.name = 'ApiProblem';
  }
}

let csrfToken: string | undefined;

/** Remember (or forget) the session's CSRF token: memory only, never storage or the URL. */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

const unsafe = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

let sessionEnded: () => void = () => undefined;

/**
 * What to do when the API answers 401 to a signed-in page: the session expired or was ended
 * (signed out elsewhere, its key revoked), so the app goes back to the sign-in page.
 */
export function onSessionEnded(listener: () => void): void {
  sessionEnded = listener;
}

export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });
api.use({
  onRequest({ request }) {
    if (csrfToken && unsafe.has(request.method)) request.headers.set('x-csrf-token', csrfToken);
    return request;
  },
  onResponse({ request, response }) {
    // A 401 of the session routes is an answer (no session, a wrong key), not an ending.
    const sessionRoute = new URL(request.url).pathname.startsWith('/v1/sessions');
    if (response.status === 401 && !sessionRoute) {
      setCsrfToken(undefined);
      sessionEnded();
    }
    return response;
  },
});

function isProblem(value: unknown): value is ProblemDetail {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ProblemDetail).errorCode === 'string' &&
    typeof (value as ProblemDetail).status === 'number'
  );
}

function problemOf(status: number, body: unknown, path: string): ProblemDetail {
  if (isProblem(body)) return body;
  return {
    type: 'about:blank',
    title: status === 0 ? 'Network error' : `HTTP ${status}`,
    status,
    detail:
      status === 0
        ? 'The platform could not be reached; check your connection and retry.'
        : 'The platform answered without a ProblemDetail.',
    instance: path,
    requestId: '',
    timestamp: new Date().toISOString(),
    errorCode: status === 0 ? 'NETWORK_ERROR' : `HTTP_${status}`,
    errorCategory: 'dependency',
    retryable: true,
  };
}

/**
 * The data of an openapi-fetch call, or an ApiProblem thrown with the gateway's
 * ProblemDetail: `await ok(api.GET('/v1/commerce/stores'))`.
 */
export async function ok<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let result: Awaited<typeof call>;
  try {
    result = await call;
  } catch {
    throw new ApiProblem(problemOf(0, undefined, ''));
  }
  if (result.error !== undefined || !result.response.ok) {
    const path = new URL(result.response.url || location.href).pathname;
    throw new ApiProblem(problemOf(result.response.status, result.error, path));
  }
  return result.data as T;
}

/** Exchange a pasted API key for a session cookie; the key goes nowhere else. */
export async function signIn(apiKey: string): Promise<Session> {
  const session = await ok(api.POST('/v1/sessions', { body: { apiKey } }));
  setCsrfToken(session.csrfToken);
  return session;
}

/** The cookie's session after a reload, or undefined when there is none (401). */
export async function currentSession(): Promise<Session | undefined> {
  try {
    const session = await ok(api.GET('/v1/sessions/current'));
    setCsrfToken(session.csrfToken);
    return session;
  } catch (error) {
    if (error instanceof ApiProblem && error.problem.status === 401) return undefined;
    throw error;
  }
}

/** End the session on the server (its cookie is cleared); the token is forgotten here too. */
export async function signOut(): Promise<void> {
  try {
    await ok(api.DELETE('/v1/sessions/current'));
  } finally {
    setCsrfToken(undefined);
  }
}
