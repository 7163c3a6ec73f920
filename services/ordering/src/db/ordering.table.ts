import type { ColumnType, Selectable } from 'kysely';

export interface AddressTable {
  address_id: string;
  partner_id: string;
  end_user_id: string;
  fingerprint: string;
  address1: string;
  address2: string | null;
  city: string;
  state: string;
  postal_code: string;
  country: string;
  latitude: number;
  longitude: number;
  created_at: ColumnType<Date, never, never>;
  deleted_at: Date | null;
}

export interface OrderingDatabase {
  addresses: AddressTable;
}

export type AddressRow = Selectable<AddressTable>;
