import { dayOfWeek, exampleStoreAddress, type StoreProfileInput } from '@pcp/contracts';
import { randomUUID } from 'node:crypto';

/** Open every day, all day (an `end` of 00:00:00 is the end of the day). */
export const alwaysOpen = dayOfWeek.options.map((day) => ({
  dayOfWeek: day,
  start: '00:00:00',
  end: '00:00:00',
}));

/** A valid store profile as a commerce partner would PUT it. */
export function storeProfile(overrides: Record<string, unknown> = {}): StoreProfileInput {
  return {
    name: 'Chicago Burgers',
    phone: '+13125550100',
    timezone: 'America/Chicago',
    currency: 'USD',
    address: exampleStoreAddress,
    fulfillmentTypes: ['PICKUP', 'DELIVERY_BY_MERCHANT'],
    availability: [
      { dayOfWeek: 'Monday', start: '08:00:00', end: '22:00:00' },
      { dayOfWeek: 'Friday', start: '18:00:00', end: '00:00:00' },
    ],
    delivery: { radiusMeters: 5000, fee: 2.99, minimumOrder: 15, etaMinutes: 40 },
    pickup: { etaMinutes: 15 },
    taxRate: 0.0875,
    minimumOrder: 0,
    orderSubmissionUrl: 'https://partner.example/orders',
    ...overrides,
  };
}

export const newStoreId = () => randomUUID();
