import { storeProfileInput, type StoreProfileInput } from '@pcp/contracts';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NewStoreRow, StoreRow } from '../../src/db/store.table.js';
import {
  effectiveStatus,
  newOrderSubmissionSecret,
  profileToRow,
  signingSecrets,
  toCommerceStore,
  toMarketfrontStore,
  toOrderContext,
} from '../../src/domain/store-profile.js';
import { statusChangeColumns } from '../../src/domain/store-status.js';
import { storeProfile } from '@pcp/testing/fixtures';

/** A profile as the schema outputs it. */
const profile = (overrides: Partial<StoreProfileInput> = {}): StoreProfileInput =>
  storeProfileInput.parse(storeProfile(overrides));

const partnerId = randomUUID();
const storeId = randomUUID();
/** Where the store is (the handler geocodes when the profile has no coordinates). */
const location = { latitude: 41.8789, longitude: -87.6359 };
const now = new Date('2026-11-22T12:00:00.000Z');
const createdAt = new Date('2026-11-20T08:00:00.000Z');
const updatedAt = new Date('2026-11-21T09:30:00.000Z');
/** `whsec_` and the base64 of 24 bytes (32 characters, no padding). */
const SIGNING_SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;
/** What the handler passes: the fresh secret, sealed (the domain never sees plaintext). */
const SEALED = 'sb2.dev.wrapped.ciphertext';

/** The row Postgres would hand back for an inserted NewStoreRow. */
function asStored(row: NewStoreRow, extra: Partial<StoreRow> = {}): StoreRow {
  const { availability, special_days, ...rest } = row;
  return {
    ...rest,
    mode: row.mode ?? 'live',
    address2: row.address2 ?? null,
    availability: JSON.parse(availability),
    special_days: JSON.parse(special_days ?? '[]'),
    extra_prep_minutes: row.extra_prep_minutes ?? null,
    paused_by: row.paused_by ?? null,
    delivery_radius_meters: row.delivery_radius_meters ?? null,
    delivery_fee_minor: row.delivery_fee_minor ?? null,
    delivery_minimum_order_minor: row.delivery_minimum_order_minor ?? null,
    delivery_eta_minutes: row.delivery_eta_minutes ?? null,
    pickup_eta_minutes: row.pickup_eta_minutes ?? null,
    order_submission_url: row.order_submission_url ?? null,
    order_submission_secret: row.order_submission_secret ?? null,
    order_submission_previous_secret: null,
    order_submission_previous_secret_expires_at: null,
    pause_reason: row.pause_reason ?? null,
    paused_at: row.paused_at ?? null,
    resume_at: row.resume_at ?? null,
    catalog_set_id: null,
    catalog_activated_at: null,
    catalog_version: null,
    item_availability_version: 0,
    event_version: 0,
    profile_version: 0,
    created_at: createdAt,
    updated_at: updatedAt,
    ...extra,
  };
}

const storedRow = (extra: Partial<StoreRow> = {}) =>
  asStored(profileToRow(partnerId, storeId, profile(), location, SEALED), extra);

describe('effectiveStatus', () => {
  it('reads an online store as online with no pause fields', () => {
    expect(effectiveStatus(storedRow(), now)).toEqual({
      status: 'online',
      reason: null,
      pausedAt: null,
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: null,
    });
  });

  it('reads a pause whose resumeAt has passed as online', () => {
    const row = storedRow({
      status: 'paused',
      pause_reason: 'too_busy',
      paused_at: new Date(now.getTime() - 3_600_000),
      resume_at: new Date(now.getTime() - 1),
      paused_by: 'partner',
    });
    expect(effectiveStatus(row, now)).toEqual({
      status: 'online',
      reason: null,
      pausedAt: null,
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: null,
    });
    // resumeAt exactly now is over too.
    expect(effectiveStatus({ ...row, resume_at: now }, now).status).toBe('online');
  });

  it('reads a pause whose resumeAt is ahead as paused with its fields', () => {
    const pausedAt = new Date(now.getTime() - 60_000);
    const resumeAt = new Date(now.getTime() + 3_600_000);
    const row = storedRow({
      status: 'paused',
      pause_reason: 'maintenance',
      paused_at: pausedAt,
      resume_at: resumeAt,
      paused_by: 'partner',
    });
    expect(effectiveStatus(row, now)).toEqual({
      status: 'paused',
      reason: 'maintenance',
      pausedAt: pausedAt.toISOString(),
      resumeAt: resumeAt.toISOString(),
      extraPrepMinutes: null,
      pausedBy: 'partner',
    });
  });

  it('keeps a pause without resumeAt paused however late it is', () => {
    const row = storedRow({
      status: 'paused',
      pause_reason: 'other',
      paused_at: now,
      resume_at: null,
      paused_by: 'platform',
    });
    const muchLater = new Date(now.getTime() + 365 * 86_400_000);
    expect(effectiveStatus(row, muchLater)).toEqual({
      status: 'paused',
      reason: 'other',
      pausedAt: now.toISOString(),
      resumeAt: null,
      extraPrepMinutes: null,
      pausedBy: 'platform',
    });
  });

  it('reads busy with its extra minutes until its resumeAt, then online', () => {
    const resumeAt = new Date(now.getTime() + 1_800_000);
    const row = storedRow({
      status: 'busy',
      paused_at: now,
      resume_at: resumeAt,
      extra_prep_minutes: 25,
    });
    expect(effectiveStatus(row, now)).toEqual({
      status: 'busy',
      reason: null,
      pausedAt: now.toISOString(),
      resumeAt: resumeAt.toISOString(),
      extraPrepMinutes: 25,
      pausedBy: null,
    });
    expect(toMarketfrontStore(row, now)).toMatchObject({ status: 'busy', extraPrepMinutes: 25 });
    expect(effectiveStatus(row, resumeAt).status).toBe('online');
    expect(toMarketfrontStore(row, resumeAt)).toMatchObject({
      status: 'online',
      extraPrepMinutes: null,
    });
  });
});

describe('statusChangeColumns', () => {
  it('clears every pause column when going online', () => {
    expect(statusChangeColumns({ status: 'online' }, now)).toEqual({
      ok: true,
      columns: {
        status: 'online',
        pause_reason: null,
        paused_at: null,
        resume_at: null,
        extra_prep_minutes: null,
        paused_by: null,
      },
    });
  });

  it('sets pausedAt to now and keeps the reason and a future resumeAt', () => {
    const resumeAt = new Date(now.getTime() + 3_600_000).toISOString();
    expect(
      statusChangeColumns({ status: 'paused', reason: 'staff_shortage', resumeAt }, now),
    ).toEqual({
      ok: true,
      columns: {
        status: 'paused',
        pause_reason: 'staff_shortage',
        paused_at: now,
        resume_at: new Date(resumeAt),
        extra_prep_minutes: null,
        paused_by: 'partner',
      },
    });
    expect(statusChangeColumns({ status: 'paused', reason: 'other' }, now)).toEqual({
      ok: true,
      columns: {
        status: 'paused',
        pause_reason: 'other',
        paused_at: now,
        resume_at: null,
        extra_prep_minutes: null,
        paused_by: 'partner',
      },
    });
    expect(
      statusChangeColumns({ status: 'paused', reason: 'other', resumeAt: null }, now),
    ).toMatchObject({
      ok: true,
      columns: { resume_at: null },
    });
  });

  it('sets busy with its extra minutes, pausedAt now and an optional future resumeAt', () => {
    const resumeAt = new Date(now.getTime() + 3_600_000).toISOString();
    expect(statusChangeColumns({ status: 'busy', extraPrepMinutes: 15, resumeAt }, now)).toEqual({
      ok: true,
      columns: {
        status: 'busy',
        pause_reason: null,
        paused_at: now,
        resume_at: new Date(resumeAt),
        extra_prep_minutes: 15,
        paused_by: null,
      },
    });
    expect(statusChangeColumns({ status: 'busy', extraPrepMinutes: 120 }, now)).toMatchObject({
      ok: true,
      columns: { status: 'busy', resume_at: null, extra_prep_minutes: 120 },
    });
  });

  it('refuses a resumeAt that is not in the future, at /resumeAt', () => {
    for (const resumeAt of [
      new Date(now.getTime() - 1).toISOString(),
      now.toISOString(),
      '2020-01-01T00:00:00Z',
    ]) {
      for (const change of [
        { status: 'paused', reason: 'other', resumeAt },
        { status: 'busy', extraPrepMinutes: 30, resumeAt },
      ] as const) {
        expect(statusChangeColumns(change, now)).toEqual({
          ok: false,
          pointer: '/resumeAt',
          message: 'resumeAt must be in the future',
        });
      }
    }
  });
});

describe('profileToRow', () => {
  it('stores USD money in cents and the tax rate in parts per million', () => {
    const row = profileToRow(partnerId, storeId, profile({ minimumOrder: 12.5 }), location, SEALED);
    expect(row).toMatchObject({
      store_id: storeId,
      partner_id: partnerId,
      currency: 'USD',
      delivery_fee_minor: 299,
      delivery_minimum_order_minor: 1500,
      delivery_radius_meters: 5000,
      delivery_eta_minutes: 40,
      pickup_eta_minutes: 15,
      tax_rate_ppm: 87_500,
      minimum_order_minor: 1250,
      status: 'online',
      address1: '233 S Wacker Dr',
      address2: null,
      postal_code: '60606',
      order_submission_url: 'https://partner.example/orders',
      order_submission_secret: SEALED,
    });
    expect(JSON.parse(row.availability)).toEqual(profile().availability);
  });

  it('carries the fresh sealed secret only with an orderSubmissionUrl', () => {
    // A candidate each time: the repository keeps the one stored first.
    expect(profileToRow(partnerId, storeId, profile(), location, SEALED)).toMatchObject({
      order_submission_secret: SEALED,
    });
    for (const orderSubmissionUrl of [null, undefined]) {
      const row = profileToRow(
        partnerId,
        storeId,
        profile({ orderSubmissionUrl }),
        location,
        SEALED,
      );
      expect(row.order_submission_secret).toBeNull();
    }
  });

  it('uses the currency’s own exponent (JPY 0, KWD 3)', () => {
    const yen = profileToRow(
      partnerId,
      storeId,
      profile({
        currency: 'JPY',
        delivery: { radiusMeters: 1, fee: 300, minimumOrder: 1500, etaMinutes: 30 },
      }),
      location,
      SEALED,
    );
    expect(yen).toMatchObject({
      currency: 'JPY',
      delivery_fee_minor: 300,
      delivery_minimum_order_minor: 1500,
    });
    const dinar = profileToRow(
      partnerId,
      storeId,
      profile({ currency: 'KWD', minimumOrder: 1.125 }),
      location,
      SEALED,
    );
    expect(dinar).toMatchObject({
      currency: 'KWD',
      minimum_order_minor: 1125,
      delivery_fee_minor: 2990,
    });
  });

  it('defaults the currency to USD, the minimum order to 0 and absent settings to null', () => {
    const { currency: _c, minimumOrder: _m, ...rest } = profile();
    const row = profileToRow(
      partnerId,
      storeId,
      storeProfileInput.parse({
        ...rest,
        fulfillmentTypes: ['PICKUP'],
        delivery: null,
        availability: null,
        orderSubmissionUrl: undefined,
      }),
      location,
      SEALED,
    );
    expect(row).toMatchObject({
      currency: 'USD',
      minimum_order_minor: 0,
      delivery_radius_meters: null,
      delivery_fee_minor: null,
      delivery_minimum_order_minor: null,
      delivery_eta_minutes: null,
      order_submission_url: null,
      order_submission_secret: null,
      availability: '[]',
    });
  });

  it('refuses (throws on) an amount the schema would have refused', () => {
    expect(() =>
      profileToRow(partnerId, storeId, { ...profile(), minimumOrder: 1.005 }, location, SEALED),
    ).toThrow(/precision/);
    expect(() =>
      profileToRow(partnerId, storeId, { ...profile(), taxRate: 0.1234567 }, location, SEALED),
    ).toThrow(/precision/);
  });
});

describe('store views', () => {
  it('round-trip a profile’s money values through the row', () => {
    for (const input of [
      profile(),
      profile({
        currency: 'JPY',
        minimumOrder: 500,
        delivery: { radiusMeters: 1, fee: 300, minimumOrder: 1500, etaMinutes: 30 },
      }),
      profile({
        currency: 'KWD',
        minimumOrder: 1.125,
        delivery: { radiusMeters: 1, fee: 0.25, minimumOrder: 3.5, etaMinutes: 30 },
      }),
    ]) {
      const row = asStored(profileToRow(partnerId, storeId, input, location, SEALED));
      const store = toCommerceStore(row, now);
      expect(store).toMatchObject({
        storeId,
        currency: input.currency,
        delivery: input.delivery,
        pickup: input.pickup,
        taxRate: input.taxRate,
        minimumOrder: input.minimumOrder,
        availability: input.availability,
        address: input.address,
        fulfillmentTypes: input.fulfillmentTypes,
        orderSubmissionUrl: input.orderSubmissionUrl,
        status: 'online',
        createdAt: createdAt.toISOString(),
        updatedAt: updatedAt.toISOString(),
      });
    }
  });

  it('omit partner-private fields from the marketfront view', () => {
    const row = storedRow();
    const market = toMarketfrontStore(row, now);
    expect(market).not.toHaveProperty('orderSubmissionUrl');
    expect(market).not.toHaveProperty('orderSubmissionSecret');
    expect(market).not.toHaveProperty('createdAt');
    expect(market).not.toHaveProperty('updatedAt');
    expect(market).not.toHaveProperty('partnerId');
    expect(market).toMatchObject({ storeId, name: 'Chicago Burgers', delivery: { fee: 2.99 } });
    const commerce = toCommerceStore(row, now);
    // The owner's view never holds the secret: it is shown once, when created or rotated.
    expect(commerce).not.toHaveProperty('orderSubmissionSecret');
    const {
      orderSubmissionUrl,
      orderSubmissionPreviousSecretExpiresAt,
      createdAt: _c,
      updatedAt: _u,
      ...shared
    } = commerce;
    expect(orderSubmissionUrl).toBe('https://partner.example/orders');
    expect(orderSubmissionPreviousSecretExpiresAt).toBeNull();
    expect(shared).toEqual(market);
  });

  it('show the end of a rotation overlap while it lasts, and sign with both secrets till then', () => {
    const expiresAt = new Date(now.getTime() + 60_000);
    const row = storedRow({
      order_submission_previous_secret: 'sb2.dev.previous.ciphertext',
      order_submission_previous_secret_expires_at: expiresAt,
    });
    expect(toCommerceStore(row, now).orderSubmissionPreviousSecretExpiresAt).toBe(
      expiresAt.toISOString(),
    );
    expect(signingSecrets(row, now)).toEqual([SEALED, 'sb2.dev.previous.ciphertext']);
    const later = new Date(expiresAt.getTime() + 1);
    expect(toCommerceStore(row, later).orderSubmissionPreviousSecretExpiresAt).toBeNull();
    expect(signingSecrets(row, later)).toEqual([SEALED]);
  });

  it('show the effective status', () => {
    const row = storedRow({
      status: 'paused',
      pause_reason: 'too_busy',
      paused_at: now,
      resume_at: new Date(now.getTime() + 60_000),
    });
    expect(toMarketfrontStore(row, now).status).toBe('paused');
    expect(toCommerceStore(row, new Date(now.getTime() + 60_000)).status).toBe('online');
  });

  it('show no delivery settings when the row has none', () => {
    const row = storedRow({
      delivery_radius_meters: null,
      delivery_fee_minor: null,
      delivery_minimum_order_minor: null,
      delivery_eta_minutes: null,
    });
    expect(toMarketfrontStore(row, now).delivery).toBeNull();
  });

  it('return the same USD fee for any valid amount (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e9 }),
        fc.integer({ min: 0, max: 1e9 }),
        (feeCents, minimumCents) => {
          const fee = feeCents / 100;
          const minimumOrder = minimumCents / 100;
          const input = profile({
            delivery: { radiusMeters: 100, fee, minimumOrder, etaMinutes: 10 },
            minimumOrder,
          });
          const row = profileToRow(partnerId, storeId, input, location, SEALED);
          expect(row.delivery_fee_minor).toBe(feeCents);
          const market = toMarketfrontStore(asStored(row), now);
          expect(market.delivery?.fee).toBe(fee);
          expect(market.delivery?.minimumOrder).toBe(minimumOrder);
          expect(market.minimumOrder).toBe(minimumOrder);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('newOrderSubmissionSecret', () => {
  it('is whsec_ and the base64 of 24 random bytes', () => {
    const secrets = Array.from({ length: 50 }, () => newOrderSubmissionSecret());
    for (const secret of secrets) {
      expect(secret).toMatch(SIGNING_SECRET);
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(24);
    }
    expect(new Set(secrets).size).toBe(secrets.length);
  });
});

describe('toOrderContext', () => {
  const at = new Date('2026-11-23T15:00:00.000Z');

  it('gives ordering the store, its availability at `at`, its owner, its overrides’ version and where to submit', () => {
    const row = storedRow({ item_availability_version: 7 });
    expect(toOrderContext(row, now, at)).toEqual({
      store: toMarketfrontStore(row, now),
      availability: expect.objectContaining({ storeId, at: at.toISOString(), open: true }),
      ownerPartnerId: partnerId,
      itemAvailabilityVersion: 7,
      // Never a secret: ordering's submitter asks stores.v1.order-submission.secrets.
      submission: { url: 'https://partner.example/orders' },
    });
  });

  it('has no submission without an orderSubmissionUrl, even with a kept secret', () => {
    expect(
      toOrderContext(storedRow({ order_submission_url: null }), now, at).submission,
    ).toBeNull();
  });
});
