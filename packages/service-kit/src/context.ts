import {
  API_VERSIONS,
  LATEST_API_VERSION,
  contextHeaders,
  partnerKind,
  partnerMode,
  paymentType,
  type ApiVersion,
  type PartnerKind,
  type PartnerMode,
  type PaymentType,
} from '@pcp/contracts';
import type { MsgHdrs } from 'nats';
import { AppError } from './app-error.js';

/** Who is asking, carried in NATS headers from the gateway to every service. */
export interface RequestContext {
  readonly requestId: string;
  readonly partnerId?: string;
  readonly partnerKind?: PartnerKind;
  /**
   * The mode of the partner's key (docs/guide/sandbox.md): `partnerId` is that mode's tenant.
   * Present whenever `partnerId` is; absent on the platform's own calls.
   */
  readonly mode?: PartnerMode;
  readonly endUserId?: string;
  /** The partner's allowed payment types; absent when it may take none (or is no partner). */
  readonly paymentTypes?: readonly PaymentType[];
  /** Place's Idempotency-Key; only the place route sends one. */
  readonly idempotencyKey?: string;
  /**
   * The API version the request was made in (its PCP-Version, else its partner's pin;
   * docs/guide/versioning.md). Absent means the newest: read it with `requestApiVersion`.
   */
  readonly apiVersion?: ApiVersion;
  /** W3C trace context of the incoming request, forwarded when no tracer is active. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export function writeContextHeaders(headers: MsgHdrs, ctx: RequestContext): void {
  headers.set(contextHeaders.requestId, ctx.requestId);
  if (ctx.partnerId) headers.set(contextHeaders.partnerId, ctx.partnerId);
  if (ctx.partnerKind) headers.set(contextHeaders.partnerKind, ctx.partnerKind);
  if (ctx.mode) headers.set(contextHeaders.mode, ctx.mode);
  if (ctx.endUserId) headers.set(contextHeaders.endUserId, ctx.endUserId);
  if (ctx.paymentTypes) headers.set(contextHeaders.paymentTypes, ctx.paymentTypes.join(','));
  if (ctx.idempotencyKey) headers.set(contextHeaders.idempotencyKey, ctx.idempotencyKey);
  // The newest is what an absent header means: its requests carry no extra header.
  if (ctx.apiVersion && ctx.apiVersion !== LATEST_API_VERSION) {
    headers.set(contextHeaders.apiVersion, ctx.apiVersion);
  }
}

export function readContextHeaders(headers: MsgHdrs | undefined): RequestContext {
  // One pass over the block: each `headers.get` would copy and scan every key.
  const first = new Map<string, string>();
  for (const [key, values] of headers ?? []) if (values[0]) first.set(key, values[0]);
  const get = (name: string) => first.get(name);
  return {
    requestId: get(contextHeaders.requestId) ?? 'unknown',
    partnerId: get(contextHeaders.partnerId),
    partnerKind: oneOf(partnerKind.options, get(contextHeaders.partnerKind)),
    mode: oneOf(partnerMode.options, get(contextHeaders.mode)),
    endUserId: get(contextHeaders.endUserId),
    paymentTypes: readPaymentTypes(get(contextHeaders.paymentTypes)),
    idempotencyKey: get(contextHeaders.idempotencyKey),
    apiVersion: oneOf(API_VERSIONS, get(contextHeaders.apiVersion)),
    // Kept for the handler's own requests, which forward them when no tracer is active.
    traceparent: get(contextHeaders.traceparent),
    tracestate: get(contextHeaders.tracestate),
  };
}

/** The API version a request was made in: its context's, the newest when it names none. */
export function requestApiVersion(ctx: RequestContext): ApiVersion {
  return ctx.apiVersion ?? LATEST_API_VERSION;
}

/** The authenticated partner of a request, or FORBIDDEN when it is not of `kind`. */
export function requirePartner(ctx: RequestContext, kind: PartnerKind): string {
  if (!ctx.partnerId || ctx.partnerKind !== kind) {
    throw new AppError('FORBIDDEN', `This operation needs a ${kind} partner`);
  }
  return ctx.partnerId;
}

/**
 * The mode whose data a request may see (docs/guide/sandbox.md): its key's. A partner's request
 * without a mode is refused rather than guessed; the platform's own calls (no partner) are
 * live unless they say otherwise.
 */
export function requestMode(ctx: RequestContext): PartnerMode {
  if (ctx.mode) return ctx.mode;
  if (ctx.partnerId) throw new AppError('INTERNAL', 'A partner request without its mode');
  return 'live';
}

/** The test tenant of a test-mode request, or FORBIDDEN (the test helpers; docs/guide/sandbox.md). */
export function requireTestPartner(ctx: RequestContext): string {
  if (!ctx.partnerId || ctx.mode !== 'test') {
    throw new AppError('FORBIDDEN', 'This operation needs a test key (pcp_test_…)');
  }
  return ctx.partnerId;
}

/** `CARD,PAY_AT_STORE` → the known types in it; an absent or empty header stays absent. */
function readPaymentTypes(value: string | undefined): PaymentType[] | undefined {
  if (value === undefined) return undefined;
  return value.split(',').flatMap((part) => oneOf(paymentType.options, part) ?? []);
}

/** `value` if it is one of an enum's `options`: what its safeParse decides, without zod's cost. */
function oneOf<T extends string>(options: readonly T[], value: string | undefined): T | undefined {
  return options.find((option) => option === value);
}

/**
 * The end user a marketfront request acts for, or SESSION_USER_REQUIRED
 * (docs/guide/authentication.md#end-users).
 */
export function requireEndUser(ctx: RequestContext): string {
  if (!ctx.endUserId) {
    throw new AppError('SESSION_USER_REQUIRED', 'Send the end user as X-End-User-Id');
  }
  return ctx.endUserId;
}

/** PAYMENT_TYPE_NOT_ALLOWED unless the partner may take `type` (set by the admin command). */
export function requirePaymentType(ctx: RequestContext, type: PaymentType): void {
  if (!ctx.paymentTypes?.includes(type)) {
    throw new AppError('PAYMENT_TYPE_NOT_ALLOWED', `This partner may not take ${type} payments`);
  }
}

/**
 * The mode a read of another partner's data (a store, its catalog) is limited to
 * (docs/guide/sandbox.md#modes): the partner's, or undefined for the platform's own calls, which
 * see every mode.
 */
export function visibleMode(ctx: RequestContext): PartnerMode | undefined {
  return ctx.partnerId === undefined ? undefined : requestMode(ctx);
}
