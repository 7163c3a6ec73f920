import { contextHeaders, partnerKind, type PartnerKind } from '@pcp/contracts';
import type { MsgHdrs } from 'nats';
import { AppError } from './app-error.js';

/** Who is asking, carried in NATS headers from the gateway to every service. */
export interface RequestContext {
  readonly requestId: string;
  readonly partnerId?: string;
  readonly partnerKind?: PartnerKind;
  readonly endUserId?: string;
  /** W3C trace context of the incoming request, forwarded when no tracer is active. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export function writeContextHeaders(headers: MsgHdrs, ctx: RequestContext): void {
  headers.set(contextHeaders.requestId, ctx.requestId);
  if (ctx.partnerId) headers.set(contextHeaders.partnerId, ctx.partnerId);
  if (ctx.partnerKind) headers.set(contextHeaders.partnerKind, ctx.partnerKind);
  if (ctx.endUserId) headers.set(contextHeaders.endUserId, ctx.endUserId);
}

export function readContextHeaders(headers: MsgHdrs | undefined): RequestContext {
  const get = (name: string) => headers?.get(name) || undefined;
  const kind = partnerKind.safeParse(get(contextHeaders.partnerKind));
  return {
    requestId: get(contextHeaders.requestId) ?? 'unknown',
    partnerId: get(contextHeaders.partnerId),
    partnerKind: kind.success ? kind.data : undefined,
    endUserId: get(contextHeaders.endUserId),
    // Kept for the handler's own requests, which forward them when no tracer is active.
    traceparent: get(contextHeaders.traceparent),
    tracestate: get(contextHeaders.tracestate),
  };
}

/** The authenticated partner of a request, or FORBIDDEN when it is not of `kind`. */
export function requirePartner(ctx: RequestContext, kind: PartnerKind): string {
  if (!ctx.partnerId || ctx.partnerKind !== kind) {
    throw new AppError('FORBIDDEN', `This operation needs a ${kind} partner`);
  }
  return ctx.partnerId;
}
