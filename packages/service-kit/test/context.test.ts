import { contextHeaders } from '@pcp/contracts';
import { headers as createHeaders, MsgHdrsImpl } from 'nats';
import { describe, expect, it } from 'vitest';
import { readContextHeaders } from '../src/context.js';

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
