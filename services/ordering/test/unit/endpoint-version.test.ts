import { LATEST_API_VERSION } from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import { describe, expect, it } from 'vitest';
import {
  checkRegistrationIn,
  endpointApiVersion,
  renderDelivery,
} from '../../src/webhooks/endpoint-version.js';

const OLD = '2026-11-01';
// Spaced as no serializer would write it: a body sent as recorded keeps these bytes.
const orderBody =
  '{"type":"order.created",  "timestamp":"2026-11-27T18:03:00Z","data":{"orderId":"o","version":1}}';
const storeBody =
  '{"type":"store.status_changed","timestamp":"2026-11-27T18:03:00Z","data":{"status":"busy"}}';

describe('renderDelivery', () => {
  it('sends the recorded bytes to a newest-version endpoint without reading them', () => {
    expect(renderDelivery(LATEST_API_VERSION, 'not even JSON')).toBe('not even JSON');
    expect(renderDelivery(LATEST_API_VERSION, storeBody)).toBe(storeBody);
  });

  it('keeps the recorded bytes for an older endpoint when no change touches the event', () => {
    expect(renderDelivery(OLD, orderBody)).toBe(orderBody);
  });

  it('delivers nothing of an event the endpoint’s version does not know', () => {
    for (const type of [
      'store.status_changed',
      'store.hours_changed',
      'store.items_availability_changed',
      'catalog.activated',
    ]) {
      expect(renderDelivery(OLD, JSON.stringify({ type, data: {} }))).toBeUndefined();
    }
  });
});

describe('checkRegistrationIn', () => {
  const input = (events: string[]) =>
    ({ url: 'https://hooks.example/pcp', events }) as Parameters<typeof checkRegistrationIn>[1];

  it('lets an endpoint of the newest version subscribe to every kind', () => {
    expect(() =>
      checkRegistrationIn(LATEST_API_VERSION, input(['order.created', 'store.status_changed'])),
    ).not.toThrow();
  });

  it('refuses a store kind for a 2026-11-01 endpoint at its pointer, as that version did', () => {
    expect(() => checkRegistrationIn(OLD, input(['order.created']))).not.toThrow();
    let thrown: unknown;
    try {
      checkRegistrationIn(OLD, input(['order.created', 'catalog.activated']));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).code).toBe('REQUEST_INVALID');
    expect((thrown as AppError).errors).toEqual([
      expect.objectContaining({ code: 'INVALID_VALUE', pointer: '/events/1' }),
    ]);
  });
});

describe('endpointApiVersion', () => {
  it('reads a stored version, and a date this code does not know as the newest', () => {
    expect(endpointApiVersion(OLD)).toBe(OLD);
    expect(endpointApiVersion('2099-01-01')).toBe(LATEST_API_VERSION);
  });
});
