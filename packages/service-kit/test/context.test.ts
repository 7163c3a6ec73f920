import { contextHeaders, LATEST_API_VERSION } from '@pcp/contracts';
import { headers as createHeaders, MsgHdrsImpl } from 'nats';
import { describe, expect, it } from 'vitest';
import {
  readContextHeaders,
  requestApiVersion,
  writeContextHeaders,
  type RequestContext,
} from '../src/context.js';

/** A header block as the receiving side decodes it. */
function received(values: Record<string, string>) {
  const headers = createHeaders() as MsgHdrsImpl;
  for (const [key, value] of Object.entries(values)) headers.set(key, value);
  return MsgHdrsImpl.decode(headers.encode());
}

describe('readContextHeaders', () => {
  it('reads the context, keeping only known kinds, modes and payment types', () => {
    expect(
      readContextHeaders(
        received({
          [contextHeaders.requestId]: 'req-1',
          [contextHeaders.partnerId]: 'partner-1',
          [contextHeaders.partnerKind]: 'distribution',
          [contextHeaders.mode]: 'test',
          [contextHeaders.paymentTypes]: 'CARD,BOGUS,PAY_AT_STORE',
          [contextHeaders.traceparent]: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        }),
      ),
    ).toEqual({
      requestId: 'req-1',
      partnerId: 'partner-1',
      partnerKind: 'distribution',
      mode: 'test',
      paymentTypes: ['CARD', 'PAY_AT_STORE'],
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    });
  });

  it('drops unknown or empty values, and names a request without an id unknown', () => {
    const ctx = readContextHeaders(
      received({
        [contextHeaders.partnerKind]: 'admin',
        [contextHeaders.mode]: 'LIVE',
        [contextHeaders.endUserId]: '',
        [contextHeaders.paymentTypes]: '',
      }),
    );
    expect(ctx.requestId).toBe('unknown');
    expect(ctx.partnerKind).toBeUndefined();
    expect(ctx.mode).toBeUndefined();
    expect(ctx.endUserId).toBeUndefined();
    expect(ctx.paymentTypes).toBeUndefined();
    expect(readContextHeaders(undefined).requestId).toBe('unknown');
  });
});

describe('the API version of a request', () => {
  /** `ctx` written as the gateway sends it and read as a service gets it. */
  const carried = (ctx: RequestContext) => {
    const headers = createHeaders() as MsgHdrsImpl;
    writeContextHeaders(headers, ctx);
    return { headers, read: readContextHeaders(MsgHdrsImpl.decode(headers.encode())) };
  };

  it('carries an older version to the service', () => {
    const { headers, read } = carried({ requestId: 'req-1', apiVersion: '2026-11-01' });
    expect(headers.get(contextHeaders.apiVersion)).toBe('2026-11-01');
    expect(read.apiVersion).toBe('2026-11-01');
    expect(requestApiVersion(read)).toBe('2026-11-01');
  });

  it('sends no header for the newest, and reads its absence as the newest', () => {
    const { headers, read } = carried({ requestId: 'req-1', apiVersion: LATEST_API_VERSION });
    expect(headers.has(contextHeaders.apiVersion)).toBe(false);
    expect(read.apiVersion).toBeUndefined();
    expect(requestApiVersion(read)).toBe(LATEST_API_VERSION);
  });

  it('reads a value that is not a version as the newest', () => {
    for (const value of ['2026-11-02', '2026-11-01, 2026-12-01', 'x'.repeat(10_000)]) {
      const read = readContextHeaders(received({ [contextHeaders.apiVersion]: value }));
      expect(read.apiVersion).toBeUndefined();
      expect(requestApiVersion(read)).toBe(LATEST_API_VERSION);
    }
  });
});
