import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { logContextFields, withLogContext } from '../src/log-context.js';
import { resumeOrigin, storedOrigin } from '../src/message-tracing.js';
import { startTracing } from '../src/tracing.js';

const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor(exporter);
startTracing('message-tracing-test', { spanProcessors: [processor] });
/** Ended spans, once exported (the SDK's resource attributes resolve asynchronously). */
async function finishedSpans() {
  await processor.forceFlush();
  return exporter.getFinishedSpans();
}
const tracer = trace.getTracer('test');

describe('storedOrigin and resumeOrigin', () => {
  it('stores nothing outside a request', () => {
    expect(storedOrigin()).toBeNull();
  });

  it('resumes stored work in the trace and log context it was stored from', async () => {
    const request = tracer.startSpan('request');
    const stored = withLogContext({ requestId: 'req-1', partnerId: 'partner-1' }, () =>
      context.with(trace.setSpan(context.active(), request), storedOrigin),
    );
    request.end();
    expect(stored).not.toBeNull();

    const seen = await resumeOrigin(stored, 'stored work', async () => logContextFields());
    expect(seen).toMatchObject({
      requestId: 'req-1',
      partnerId: 'partner-1',
      traceId: request.spanContext().traceId,
    });
    const work = (await finishedSpans()).find((span) => span.name === 'stored work');
    expect(work?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  });

  it('runs work whose origin is missing or unreadable in a trace of its own', async () => {
    for (const stored of [
      null,
      'not json',
      '{"trace":7,"log":["x"]}',
      '{"trace":{"traceparent":5}}',
    ]) {
      const seen = await resumeOrigin(stored, 'orphan work', async () => logContextFields());
      expect(seen.requestId).toBeUndefined();
      expect(seen.traceId).toMatch(/^[0-9a-f]{32}$/);
    }
  });

  it('ends the span as failed when the work throws, and rethrows', async () => {
    exporter.reset();
    await expect(
      resumeOrigin(null, 'failing work', () => Promise.reject(new Error('boom'))),
    ).rejects.toThrow('boom');
    const [span] = await finishedSpans();
    expect(span?.name).toBe('failing work');
    expect(span?.status.code).toBe(2);
  });
});
