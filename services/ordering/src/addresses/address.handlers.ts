import { subjects, type SavedAddress } from '@pcp/contracts';
import {
  AppError,
  handle,
  requireEndUser,
  requirePartner,
  type BusClient,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { deleteAddress, listAddresses, saveAddress } from './address.repository.js';
import type { AddressRow, OrderingDatabase } from '../db/ordering.table.js';
import { addressFingerprint } from './address-fingerprint.js';

function owner(ctx: RequestContext) {
  return { partnerId: requirePartner(ctx, 'distribution'), endUserId: requireEndUser(ctx) };
}

export function toSavedAddress(row: AddressRow): SavedAddress {
  return {
    addressId: row.address_id,
    address1: row.address1,
    address2: row.address2,
    city: row.city,
    state: row.state,
    postalCode: row.postal_code,
    country: row.country,
    latitude: row.latitude,
    longitude: row.longitude,
    createdAt: row.created_at.toISOString(),
  };
}

function addressInvalid(pointer: string): AppError {
  const message = 'No saved address with this addressId belongs to the end user';
  return new AppError('ADDRESS_INVALID', message, {
    errors: [{ code: 'ADDRESS_INVALID', message, pointer }],
  });
}

/** Saved addresses of (partner, end user), geocoded by the stores service when saved. */
export function addressHandlers(
  db: Kysely<OrderingDatabase>,
  bus: BusClient,
  maxAddresses: number,
): HandlerBinding[] {
  return [
    handle(subjects.ordering.saveAddress, async (input, ctx) => {
      const { partnerId, endUserId } = owner(ctx);
      // ADDRESS_INVALID (422) when it cannot be resolved, with its pointer.
      const resolved = await bus.request(subjects.stores.geocode, { address: input }, ctx);
      const saved = await saveAddress(
        db,
        {
          address_id: randomUUID(),
          partner_id: partnerId,
          end_user_id: endUserId,
          fingerprint: addressFingerprint(input),
          address1: input.address1,
          address2: input.address2 ?? null,
          city: input.city,
          state: input.state,
          postal_code: input.postalCode,
          country: input.country,
          latitude: resolved.latitude,
          longitude: resolved.longitude,
        },
        maxAddresses,
      );
      if ('limitReached' in saved) {
        throw new AppError(
          'ADDRESS_LIMIT_REACHED',
          'The end user holds the most saved addresses allowed; delete one first',
        );
      }
      return { address: toSavedAddress(saved.row), created: saved.created };
    }),

    handle(subjects.ordering.listAddresses, async (_input, ctx) => {
      const { partnerId, endUserId } = owner(ctx);
      return { addresses: (await listAddresses(db, partnerId, endUserId)).map(toSavedAddress) };
    }),

    handle(subjects.ordering.deleteAddress, async ({ addressId }, ctx) => {
      const { partnerId, endUserId } = owner(ctx);
      if (!(await deleteAddress(db, partnerId, endUserId, addressId))) {
        throw addressInvalid('/addressId');
      }
      return { deleted: true as const };
    }),
  ];
}
