/**
 * One trace per partner request (issue 15): a place request's spans from the gateway's HTTP
 * server, its NATS hops into ordering and payments, their Postgres queries, the processor
 * call and the JetStream hop of the order's event all share one trace id.
 */
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { placeCardOrder, PLACE_ROUTE, startJourney, type Journey } from './partner-journey.js';

// Before anything loads pg, redis or node:http: the preload services start with, then the
// tracer provider with an in-memory exporter in place of OTLP.
const exporter = await vi.hoisted(async () => {
  await import('@pcp/service-kit/instrument');
  const { InMemorySpanExporter, SimpleSpanProcessor } =
    await import('@opentelemetry/sdk-trace-base');
  const { startTracing } = await import('@pcp/service-kit');
  const memory = new InMemorySpanExporter();
  startTracing('pcp-test', { spanProcessors: [new SimpleSpanProcessor(memory)] });
  return memory;
});

let journey: Journey;

beforeAll(async () => {
  journey = await startJourney();
});

afterAll(async () => {
  await journey?.close();
});

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** Waits until `find` sees what it looks for among the finished spans. */
async function eventually<T>(find: (spans: ReadableSpan[]) => T | undefined): Promise<T> {
  for (let tries = 0; tries < 100; tries++) {
    const found = find(exporter.getFinishedSpans());
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the spans never showed up');
}

describe('tracing', () => {
  it('gives a place request one trace across gateway, NATS, services, Postgres and JetStream', async () => {
    exporter.reset();
    // The partner's own trace context and baggage: linked to, never continued or passed on.
    const partnerTraceId = '0af7651916cd43dd8448eb211c80319c';
    const partnerSpanId = 'b7ad6b7169203331';
    const { orderId } = await placeCardOrder(journey, {
      headers: {
        traceparent: `00-${partnerTraceId}-${partnerSpanId}-01`,
        baggage: 'tenant=partner-secret',
      },
    });
    const prefix = journey.env.prefix;

    const server = await eventually((spans) =>
      spans.find((s) => s.kind === SpanKind.SERVER && s.name === `POST ${PLACE_ROUTE}`),
    );
    expect(server.attributes['http.route']).toBe(PLACE_ROUTE);
    const traceId = server.spanContext().traceId;
    expect(traceId).not.toBe(partnerTraceId);
    expect(server.parentSpanContext).toBeUndefined();
    expect(server.links.map((link) => link.context)).toEqual([
      expect.objectContaining({ traceId: partnerTraceId, spanId: partnerSpanId, isRemote: true }),
    ]);
    const inTrace = () =>
      exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);

    // Gateway → ordering over NATS: ordering's server span is the child of the gateway's
    // client span, which is the child of the HTTP request's span.
    const placeSubject = `${prefix}.ordering.v1.orders.place`;
    const gatewayClient = inTrace().find(
      (s) => s.kind === SpanKind.CLIENT && s.name === placeSubject,
    );
    expect(gatewayClient).toBeDefined();
    expect(parentOf(gatewayClient!)).toBe(server.spanContext().spanId);
    const ordering = inTrace().find((s) => s.kind === SpanKind.SERVER && s.name === placeSubject);
    expect(ordering).toBeDefined();
    expect(parentOf(ordering!)).toBe(gatewayClient!.spanContext().spanId);

    // Ordering → payments: the authorization's server span, under ordering's request.
    const authorizeSubject = `${prefix}.payments.v1.charges.authorize`;
    const payments = inTrace().find(
      (s) => s.kind === SpanKind.SERVER && s.name === authorizeSubject,
    );
    expect(payments).toBeDefined();
    const paymentsClient = inTrace().find((s) => s.spanContext().spanId === parentOf(payments!));
    expect(paymentsClient?.kind).toBe(SpanKind.CLIENT);

    // Postgres (pg instrumentation) inside ordering's and payments' handlers.
    const descendsFrom = (span: ReadableSpan, ancestor: ReadableSpan): boolean => {
      const byId = new Map(inTrace().map((s) => [s.spanContext().spanId, s]));
      for (let at: ReadableSpan | undefined = span; at; at = byId.get(parentOf(at) ?? '')) {
        if (at === ancestor) return true;
      }
      return false;
    };
    const queries = inTrace().filter(
      (s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-pg',
    );
    expect(queries.some((q) => descendsFrom(q, ordering!))).toBe(true);
    expect(queries.some((q) => descendsFrom(q, payments!))).toBe(true);
    // Payments' call to the card processor (undici), inside the authorization.
    const processorCall = inTrace().find(
      (s) =>
        s.instrumentationScope.name === '@opentelemetry/instrumentation-undici' &&
        descendsFrom(s, payments!),
    );
    expect(processorCall?.kind).toBe(SpanKind.CLIENT);

    // JetStream: the order's event is published by the outbox relay and consumed by the
    // webhook recorder in the same trace, the consumer's span a child of the publish.
    const consumer = await eventually(() =>
      inTrace().find((s) => s.kind === SpanKind.CONSUMER && s.name.startsWith(`${prefix}.events.`)),
    );
    const publish = inTrace().find((s) => s.spanContext().spanId === parentOf(consumer));
    expect(publish?.kind).toBe(SpanKind.PRODUCER);

    // The partner got its webhook for that order. The delivery (stored as a row and sent by
    // the dispatcher) continued the same trace, but the call to the partner's endpoint (another
    // tenant's) runs in a trace of its own, linked from the delivery, and carries no baggage.
    const [received] = await journey.receiver.waitFor(1, (request) =>
      JSON.stringify(request.payload).includes(orderId!),
    );
    const delivery = await eventually(() =>
      inTrace().find((s) => s.name === 'webhook deliver' && descendsFrom(s, consumer)),
    );
    const outbound = await eventually((spans) =>
      spans.find(
        (s) =>
          s.name === 'outbound webhook URL' &&
          s.links.some((link) => link.context.spanId === delivery.spanContext().spanId),
      ),
    );
    const outboundTraceId = outbound.spanContext().traceId;
    expect(outboundTraceId).not.toBe(traceId);
    expect(outboundTraceId).not.toBe(partnerTraceId);
    expect(received!.headers.baggage).toBeUndefined();
    expect(String(received!.headers.traceparent).split('-')[1]).toBe(outboundTraceId);
    const webhookCall = await eventually((spans) =>
      spans.find(
        (s) =>
          // safeRequest sends over node:http (its own address checks), not fetch.
          s.instrumentationScope.name === '@opentelemetry/instrumentation-http' &&
          s.kind === SpanKind.CLIENT &&
          parentOf(s) === outbound.spanContext().spanId,
      ),
    );
    expect(
      webhookCall.attributes['http.response.status_code'] ??
        webhookCall.attributes['http.status_code'],
    ).toBe(204);
  });
});
