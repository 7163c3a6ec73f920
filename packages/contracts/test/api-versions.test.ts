import { describe, expect, it } from 'vitest';
import {
  API_VERSION_CHANGES,
  API_VERSIONS,
  FIRST_PINNED_API_VERSION,
  LATEST_API_VERSION,
  apiVersion,
  apiVersionChangeInput,
  apiVersionsAfter,
  compareApiVersions,
  eventDown,
  isApiVersion,
  operationExistsIn,
  requestUpSteps,
  responseDown,
  translatesOperation,
} from '../src/api-versions.js';

describe('API versions', () => {
  it('are dated, unique and oldest first, the newest last', () => {
    for (const version of API_VERSIONS) expect(version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect([...API_VERSIONS].sort()).toEqual([...API_VERSIONS]);
    expect(new Set(API_VERSIONS).size).toBe(API_VERSIONS.length);
    expect(LATEST_API_VERSION).toBe(API_VERSIONS.at(-1));
    expect(API_VERSIONS).toContain(FIRST_PINNED_API_VERSION);
  });

  it('accept only a listed date', () => {
    expect(isApiVersion('2026-11-01')).toBe(true);
    for (const value of ['2026-11-02', '2026-11-01 ', '', 20261101, null, '2026-11-01T00:00:00Z']) {
      expect(isApiVersion(value)).toBe(false);
      expect(apiVersion.safeParse(value).success).toBe(false);
    }
  });

  it('compare by date', () => {
    expect(compareApiVersions('2026-11-01', '2026-12-01')).toBeLessThan(0);
    expect(compareApiVersions('2026-12-01', '2026-11-01')).toBeGreaterThan(0);
    expect(compareApiVersions('2026-12-01', '2026-12-01')).toBe(0);
  });

  it('list the versions after one, oldest first', () => {
    expect(apiVersionsAfter('2026-11-01')).toEqual(['2026-12-01']);
    expect(apiVersionsAfter(LATEST_API_VERSION)).toEqual([]);
  });

  it('are changed by a body naming one version and nothing else', () => {
    expect(apiVersionChangeInput.safeParse({ version: '2026-12-01' }).success).toBe(true);
    for (const body of [
      {},
      { version: '2026-12-02' },
      { version: ['2026-12-01'] },
      { version: '2026-12-01', force: true },
      null,
    ]) {
      expect(apiVersionChangeInput.safeParse(body).success).toBe(false);
    }
  });
});

describe('the change registry', () => {
  const all = Object.values(API_VERSION_CHANGES).flat();

  it('names each change once, in kebab-case, with a one-line description', () => {
    expect(Object.keys(API_VERSION_CHANGES)).toEqual([...API_VERSIONS]);
    expect(API_VERSION_CHANGES[API_VERSIONS[0]]).toEqual([]);
    for (const change of all) {
      expect(change.name).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
      expect(change.description).not.toMatch(/\n/);
      expect(change.description.length).toBeGreaterThan(20);
    }
    expect(new Set(all.map((change) => change.name)).size).toBe(all.length);
  });

  it('hides the operations a version lacks, and only under older versions', () => {
    expect(operationExistsIn('2026-11-01', 'setSpecialHours')).toBe(false);
    expect(operationExistsIn('2026-11-01', 'resetTestData')).toBe(false);
    expect(operationExistsIn('2026-11-01', 'getStore')).toBe(true);
    expect(operationExistsIn(LATEST_API_VERSION, 'setSpecialHours')).toBe(true);
  });

  it('brings answers down without touching the newest version or the input', () => {
    const store = { storeId: 's', status: 'busy', extraPrepMinutes: 20, isOpenNow: true };
    const frozen = structuredClone(store);
    expect(responseDown('2026-11-01', 'getStore', store)).toEqual({
      storeId: 's',
      status: 'online',
      isOpenNow: true,
    });
    expect(store).toEqual(frozen);
    expect(responseDown(LATEST_API_VERSION, 'getStore', store)).toBe(store);
    expect(
      responseDown('2026-11-01', 'discoverStores', { stores: [store, { status: 'paused' }] }),
    ).toEqual({
      stores: [{ storeId: 's', status: 'online', isOpenNow: true }, { status: 'paused' }],
    });
    expect(translatesOperation('2026-11-01', 'getStore')).toBe(true);
    expect(translatesOperation('2026-11-01', 'listCards')).toBe(false);
    expect(translatesOperation(LATEST_API_VERSION, 'getStore')).toBe(false);
  });

  it('does not deliver an event the older version does not know', () => {
    const storeEvent = { type: 'store.status_changed', data: { storeId: 's' } };
    const orderEvent = { type: 'order.created', data: { orderId: 'o' } };
    expect(eventDown('2026-11-01', storeEvent)).toBeUndefined();
    expect(eventDown('2026-11-01', orderEvent)).toEqual(orderEvent);
    expect(eventDown(LATEST_API_VERSION, storeEvent)).toBe(storeEvent);
  });

  it('checks a request as the older version did before bringing it up', () => {
    const steps = requestUpSteps('2026-11-01', 'setStoreStatus');
    expect(steps).toHaveLength(1);
    const schema = steps[0]!.schema!;
    expect(schema.safeParse({ status: 'busy', extraPrepMinutes: 20 }).success).toBe(false);
    expect(schema.safeParse({ status: 'paused', reason: 'maintenance' }).success).toBe(true);
    const [ignore] = requestUpSteps('2026-11-01', 'changeOrderStatus');
    expect(ignore!.up!({ state: 'cancelled', unavailableItemIds: ['a'] })).toEqual({
      state: 'cancelled',
    });
    expect(requestUpSteps(LATEST_API_VERSION, 'setStoreStatus')).toEqual([]);
  });

  it('shows an endpoint and its deliveries without store events under 2026-11-01', () => {
    const endpoint = { url: 'https://x', events: ['order.created', 'catalog.activated'] };
    expect(responseDown('2026-11-01', 'getWebhook', endpoint)).toEqual({
      url: 'https://x',
      events: ['order.created'],
    });
    const deliveries = {
      deliveries: [
        { deliveryId: 'a', type: 'order.created' },
        { deliveryId: 'b', type: 'store.hours_changed' },
      ],
      nextCursor: 'c',
    };
    expect(responseDown('2026-11-01', 'listWebhookDeliveries', deliveries)).toEqual({
      deliveries: [{ deliveryId: 'a', type: 'order.created' }],
      nextCursor: 'c',
    });
    // What is not the expected shape passes unchanged (the contract already checked it).
    expect(responseDown('2026-11-01', 'listWebhookDeliveries', [])).toEqual([]);
    expect(responseDown('2026-11-01', 'getOrderTimeline', null)).toBeNull();
  });
});
