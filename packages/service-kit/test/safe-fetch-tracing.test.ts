/**
 * Outbound requests to partner URLs (webhooks, store submissions, catalog downloads) start a
 * trace of their own: the receiver, another tenant, sees neither the caller's trace id nor
 * its baggage, while our span links back to the caller's.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// Before node:http loads: the preload services start with, then an in-memory exporter.
const { exporter, processor } = await vi.hoisted(async () => {
  await import('../src/instrument.js');
  const { InMemorySpanExporter, SimpleSpanProcessor } =
    await import('@opentelemetry/sdk-trace-base');
  const { startTracing } = await import('../src/tracing.js');
  const memory = new InMemorySpanExporter();
  const simple = new SimpleSpanProcessor(memory);
  startTracing('safe-fetch-tracing-test', { spanProcessors: [simple] });
  // A worker that ran another file first has node:http loaded already: requiring it again
  // lets the http instrumentation patch it all the same.
  const { createRequire } = await import('node:module');
  createRequire(import.meta.url)('node:http');
  return { exporter: memory, processor: simple };
});

const { parseAllowlist } = await import('../src/ip-address.js');
const { safeRequest } = await import('../src/safe-fetch.js');

const received: http.IncomingHttpHeaders[] = [];
const server = http.createServer((req, res) => {
  received.push(req.headers);
  req.resume();
  res.writeHead(204).end();
});
let url = '';

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  server.close();
  await once(server, 'close');
});

describe('safeRequest and the caller trace', () => {
  it('sends its own trace id and no baggage, and links its span to the caller', async () => {
    const caller = trace.getTracer('test').startSpan('incoming partner request');
    const baggage = propagation.createBaggage({ tenant: { value: 'someone-else' } });
    const active = propagation.setBaggage(trace.setSpan(context.active(), caller), baggage);

    const result = await context.with(active, () =>
      safeRequest(url, {
        method: 'POST',
        body: Buffer.from('{}'),
        headers: { 'content-type': 'application/json' },
        allowHttp: true,
        allowlist: parseAllowlist('127.0.0.1/32'),
        maxBytes: 1024,
        urlName: 'webhook url',
        connectTimeoutMs: 2_000,
        totalTimeoutMs: 5_000,
      }),
    );
    caller.end();
    expect(result).toMatchObject({ ok: true, status: 204 });

    const headers = received.at(-1)!;
    expect(headers.baggage).toBeUndefined();
    // Instrumented http does send a traceparent, but of a trace other than the caller's.
    const traceparent = String(headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const sentTraceId = traceparent.split('-')[1];
    expect(sentTraceId).not.toBe(caller.spanContext().traceId);

    await processor.forceFlush();
    const outbound = exporter
      .getFinishedSpans()
      .find((span) => span.name === 'outbound webhook url');
    expect(outbound?.spanContext().traceId).toBe(sentTraceId);
    expect(outbound?.parentSpanContext).toBeUndefined();
    expect(outbound?.links.map((link) => link.context.spanId)).toEqual([
      caller.spanContext().spanId,
    ]);
  });
});
