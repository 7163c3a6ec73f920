import type { StoreWebhookPayload, WebhookPayload } from '@pcp/contracts';
import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  createWebhookVerifier,
  WebhookVerificationError,
  type OrderWebhookEvent,
  type StoreWebhookEvent,
  type WebhookEvent,
} from '../src/index.js';

/**
 * The verifier against deliveries signed with the standardwebhooks library, as the
 * platform signs them (one signature per active secret, space-separated).
 */

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

const event: WebhookEvent = {
  type: 'order.status_changed',
  timestamp: '2026-03-01T10:00:00.000Z',
  data: {
    orderId: randomUUID(),
    storeId: randomUUID(),
    state: 'open',
    status: 'confirmed',
    previousStatus: 'pending',
    version: 2,
    estimatedReadyAt: '2026-03-01T10:30:00.000Z',
    cancelReason: null,
    cancelledBy: null,
  },
};
const body = JSON.stringify(event);

/** The headers of a delivery of `payload` signed with every one of `secrets`. */
function signed(secrets: string[], payload = body, at = new Date()) {
  const id = randomUUID();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1_000)),
    'webhook-signature': secrets
      .map((secret) => new Webhook(secret).sign(id, at, payload))
      .join(' '),
  };
}

function rejection(verify: () => unknown): WebhookVerificationError {
  try {
    verify();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('verified');
}

describe('createWebhookVerifier', () => {
  it('returns the event of a signed delivery, from a string or bytes, with any header form', () => {
    const secret = newSecret();
    const verifier = createWebhookVerifier(secret);
    const headers = signed([secret]);
    expect(verifier.verify(body, headers)).toEqual(event);
    expect(verifier.verify(new TextEncoder().encode(body), new Headers(headers))).toEqual(event);
    // Node's IncomingHttpHeaders, and names in any case.
    const shouted = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name.toUpperCase(), [value]]),
    );
    expect(verifier.verify(body, { ...shouted, 'content-type': 'application/json' })).toEqual(
      event,
    );
  });

  it('returns a store event, narrowed by its type', () => {
    const secret = newSecret();
    const storeEvent: StoreWebhookEvent = {
      type: 'store.items_availability_changed',
      timestamp: '2026-03-01T10:00:00.000Z',
      data: {
        storeId: randomUUID(),
        version: 7,
        itemAvailabilityVersion: 3,
        items: [{ itemId: randomUUID(), available: false, until: '2026-03-02T06:00:00.000Z' }],
      },
    };
    const payload = JSON.stringify(storeEvent);
    const received = createWebhookVerifier(secret).verify(payload, signed([secret], payload));
    expect(received).toEqual(storeEvent);
    if (received.type !== 'store.items_availability_changed') throw new Error(received.type);
    expect(received.data.items[0]!.available).toBe(false);
  });

  it('accepts either secret during a rotation', () => {
    const [previous, current] = [newSecret(), newSecret()];
    const rotating = createWebhookVerifier([current, previous]);
    // What the platform sends for a day: signed with both.
    const both = signed([current, previous]);
    expect(rotating.verify(body, both)).toEqual(event);
    expect(createWebhookVerifier(previous).verify(body, both)).toEqual(event);
    // A receiver holding both secrets takes a delivery signed with either alone.
    expect(rotating.verify(body, signed([previous]))).toEqual(event);
    expect(rotating.verify(body, signed([current]))).toEqual(event);
    const stranger = createWebhookVerifier(newSecret());
    expect(rejection(() => stranger.verify(body, both)).message).toMatch(/No matching signature/);
  });

  it('rejects a changed body, an old or future timestamp, another id, missing headers', () => {
    const secret = newSecret();
    const verifier = createWebhookVerifier(secret);
    const headers = signed([secret]);
    const changed = body.replace('"confirmed"', '"cancelled"');
    expect(rejection(() => verifier.verify(changed, headers)).message).toMatch(/No matching/);
    expect(rejection(() => verifier.verify(`${body} `, headers)).message).toMatch(/No matching/);
    expect(
      rejection(() => verifier.verify(body, { ...headers, 'webhook-id': randomUUID() })).message,
    ).toMatch(/No matching/);

    const sixMinutesAgo = new Date(Date.now() - 6 * 60_000);
    const old = signed([secret], body, sixMinutesAgo);
    expect(rejection(() => verifier.verify(body, old)).message).toMatch(/too old/);
    const ahead = signed([secret], body, new Date(Date.now() + 6 * 60_000));
    expect(rejection(() => verifier.verify(body, ahead)).message).toMatch(/too new/);
    // A replay of a real signature with a fresh timestamp is not signed.
    const restamped = { ...old, 'webhook-timestamp': headers['webhook-timestamp'] };
    expect(rejection(() => verifier.verify(body, restamped)).message).toMatch(/No matching/);

    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const { [name]: _missing, ...rest } = headers;
      expect(rejection(() => verifier.verify(body, rest)).message, name).toMatch(/Missing/);
      expect(
        rejection(() => verifier.verify(body, { ...rest, [name]: undefined })).message,
        name,
      ).toMatch(/Missing/);
    }
    const garbled = { ...headers, 'webhook-timestamp': 'yesterday' };
    expect(rejection(() => verifier.verify(body, garbled)).message).toMatch(/Invalid/);
  });

  it('rejects a signed body that is not an event', () => {
    const secret = newSecret();
    const verifier = createWebhookVerifier(secret);
    for (const payload of ['"hello"', '[]', 'null', '{"type":"order.created"}', 'not json']) {
      expect(() => verifier.verify(payload, signed([secret], payload)), payload).toThrow(
        WebhookVerificationError,
      );
    }
  });

  it('types the event as the platform sends it', () => {
    // Checked by the compiler (npm test type-checks the tests): the client's own type, kept
    // free of zod, is the contracts' payload.
    expectTypeOf<OrderWebhookEvent>().toEqualTypeOf<WebhookPayload>();
    // Store events: each kind with its own data, every one a payload the platform sends.
    expectTypeOf<StoreWebhookEvent>().toExtend<StoreWebhookPayload>();
    expectTypeOf<StoreWebhookEvent['type']>().toEqualTypeOf<StoreWebhookPayload['type']>();
    expectTypeOf<WebhookEvent>().toEqualTypeOf<OrderWebhookEvent | StoreWebhookEvent>();
  });

  it('needs a secret', () => {
    expect(() => createWebhookVerifier([])).toThrow(TypeError);
  });
});
