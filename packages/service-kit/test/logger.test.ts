import { trace, type SpanContext } from '@opentelemetry/api';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { withLogContext } from '../src/log-context.js';
import { createLogger, scrubSecrets } from '../src/logger.js';
import { startTracing } from '../src/tracing.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const logger = createLogger(
    'test',
    'debug',
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        raw.push(chunk.toString());
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  return { logger, lines, raw };
}

const apiKey = `pcp_0123456789abcdef_${'a'.repeat(43)}`;

describe('createLogger', () => {
  it('redacts credential and card fields wherever the code puts them', () => {
    const { logger, raw } = capture();
    logger.info({
      headers: { authorization: `Bearer ${apiKey}`, 'x-api-key': apiKey },
      req: { headers: { authorization: 'Bearer x' } },
      body: { card: { cardNumber: '4242424242424242', cvc: '737', expMonth: 11, expYear: 2034 } },
      endpoint: { url: 'http://127.0.0.1/hook', secret: 'whsec_c2VjcmV0' },
      config: { PAYMENT_PROCESSOR_API_KEY: 'sk_test_x', DATABASE_URL: 'postgres://u:p@h/db' },
    });
    const text = raw.join('');
    for (const secret of [
      apiKey,
      '4242424242424242',
      '737',
      '2034',
      'whsec_',
      'sk_test_x',
      'u:p@',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('http://127.0.0.1/hook');
  });

  it('scrubs secrets inside strings: messages, errors, URLs', () => {
    const { logger, lines, raw } = capture();
    const error = new Error(`connect failed for postgres://pcp:hunter2@db:5432/pcp with ${apiKey}`);
    logger.error({ err: error, note: 'card 4242 4242 4242 4242 via Bearer abc.def' }, 'failed');
    const text = raw.join('');
    for (const secret of ['hunter2', apiKey, '4242 4242 4242 4242', 'abc.def']) {
      expect(text).not.toContain(secret);
    }
    expect(lines[0]).toMatchObject({
      err: { type: 'Error', message: expect.stringContaining('postgres://pcp:[redacted]@db') },
    });
    expect(scrubSecrets('https://user:pw@example.com/x?y=1')).toBe(
      'https://user:[redacted]@example.com/x?y=1',
    );
    expect(scrubSecrets('order 1234 for 3 items')).toBe('order 1234 for 3 items');
  });

  it('scrubs card numbers, and leaves ids whose groups are digits whole', () => {
    for (const card of [
      '4242424242424242',
      '4242 4242 4242 4242',
      '4000-0566-5566-5556',
      '378282246310005',
      '6011111111111117',
    ]) {
      expect(scrubSecrets(`charge card=${card}, declined`)).toBe(
        'charge card=[redacted], declined',
      );
    }
    for (const id of [
      'storeId=00000000-0000-4000-8000-0000000f1001',
      'orderId=12345678-1234-4234-8234-123456789012',
      'ref 4242424242424242-2 and 1234567812345678_x',
      // 16 digits, but not a card number (the Luhn check fails).
      'trace 4242424242424241',
    ]) {
      expect(scrubSecrets(id)).toBe(id);
    }
  });

  it('adds the request, partner, trace and span of the work in hand; the line wins', () => {
    // Not exporting: spans are not recorded, but their ids exist for logs and propagation.
    startTracing('test');
    const { logger, lines } = capture();
    let known: string | undefined;
    withLogContext(
      () => ({ requestId: 'r-1', partnerId: known }),
      () => {
        logger.info('before auth');
        known = 'p-1';
        logger.info('after auth');
      },
    );
    let ids: SpanContext | undefined;
    withLogContext({ requestId: 'r-2', partnerId: 'p-2' }, () =>
      trace.getTracer('test').startActiveSpan('work', (span) => {
        ids = span.spanContext();
        logger.info({ requestId: 'explicit' }, 'inside a span');
        span.end();
      }),
    );
    logger.info('outside');
    expect(lines.map(({ msg, requestId, partnerId }) => ({ msg, requestId, partnerId }))).toEqual([
      { msg: 'before auth', requestId: 'r-1', partnerId: undefined },
      { msg: 'after auth', requestId: 'r-1', partnerId: 'p-1' },
      { msg: 'inside a span', requestId: 'explicit', partnerId: 'p-2' },
      { msg: 'outside', requestId: undefined, partnerId: undefined },
    ]);
    expect(ids && trace.isSpanContextValid(ids)).toBe(true);
    expect(lines[2]).toMatchObject({ traceId: ids!.traceId, spanId: ids!.spanId });
    expect(lines[3]).not.toHaveProperty('traceId');
  });
});
