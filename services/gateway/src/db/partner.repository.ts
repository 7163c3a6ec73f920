import type { ApiVersion, PartnerKind, PartnerMode, PaymentType } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import type { GatewayDatabase, RateLimitOverrides } from './partner.table.js';

type Db = Kysely<GatewayDatabase>;

export function insertPartner(
  db: Db,
  partner: { kind: PartnerKind; name: string; paymentTypes: PaymentType[]; apiVersion: ApiVersion },
) {
  return db
    .insertInto('partners')
    .values({
      kind: partner.kind,
      name: partner.name,
      payment_types: partner.paymentTypes,
      rate_limits: '{}',
      api_version: partner.apiVersion,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function insertApiKey(
  db: Db,
  key: { keyId: string; partnerId: string; keyHash: Buffer; mode: PartnerMode },
) {
  return db
    .insertInto('api_keys')
    .values({ key_id: key.keyId, partner_id: key.partnerId, key_hash: key.keyHash, mode: key.mode })
    .returning(['key_id', 'mode', 'created_at'])
    .executeTakeFirstOrThrow();
}

/** The active key with that public id and its partner, for authentication. */
export function findActiveKey(db: Db, keyId: string) {
  return db
    .selectFrom('api_keys')
    .innerJoin('partners', 'partners.partner_id', 'api_keys.partner_id')
    .select([
      'api_keys.key_id',
      'api_keys.key_hash',
      'api_keys.mode',
      'partners.partner_id',
      'partners.test_partner_id',
      'partners.kind',
      'partners.payment_types',
      'partners.rate_limits',
      'partners.api_version',
    ])
    .where('api_keys.key_id', '=', keyId)
    .where('api_keys.revoked_at', 'is', null)
    .where('partners.suspended_at', 'is', null)
    .executeTakeFirst();
}

export type ActiveKey = NonNullable<Awaited<ReturnType<typeof findActiveKey>>>;

export function revokeApiKey(db: Db, keyId: string) {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('key_id', '=', keyId)
    .where('revoked_at', 'is', null)
    .returning(['key_id', 'partner_id', 'revoked_at'])
    .executeTakeFirst();
}

export function findPartner(db: Db, partnerId: string) {
  return db
    .selectFrom('partners')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .executeTakeFirst();
}

export async function listPartnersWithKeys(db: Db) {
  const [partners, keys] = await Promise.all([
    db.selectFrom('partners').selectAll().orderBy('created_at').execute(),
    db
      .selectFrom('api_keys')
      .select(['key_id', 'partner_id', 'mode', 'created_at', 'revoked_at'])
      .orderBy('created_at')
      .execute(),
  ]);
  return partners.map((partner) => ({
    partner,
    keys: keys.filter((key) => key.partner_id === partner.partner_id),
  }));
}

export function updateRateLimits(db: Db, partnerId: string, limits: RateLimitOverrides) {
  return db
    .updateTable('partners')
    .set({ rate_limits: JSON.stringify(limits) })
    .where('partner_id', '=', partnerId)
    .returningAll()
    .executeTakeFirst();
}

export function updatePaymentTypes(db: Db, partnerId: string, paymentTypes: PaymentType[]) {
  return db
    .updateTable('partners')
    .set({ payment_types: paymentTypes })
    .where('partner_id', '=', partnerId)
    .returningAll()
    .executeTakeFirst();
}

/** Suspend (a time) or resume (null) a partner; undefined when there is no such partner. */
export function updateSuspension(db: Db, partnerId: string, suspendedAt: Date | null) {
  return db
    .updateTable('partners')
    .set({ suspended_at: suspendedAt })
    .where('partner_id', '=', partnerId)
    .returning(['partner_id', 'suspended_at'])
    .executeTakeFirst();
}

/** The partner's pin, locked until the transaction ends: what a change of pin compares with. */
export function lockApiVersion(db: Db, partnerId: string) {
  return db
    .selectFrom('partners')
    .select('api_version')
    .where('partner_id', '=', partnerId)
    .forUpdate()
    .executeTakeFirst();
}

export function updateApiVersion(db: Db, partnerId: string, apiVersion: ApiVersion) {
  return db
    .updateTable('partners')
    .set({ api_version: apiVersion })
    .where('partner_id', '=', partnerId)
    .returning(['partner_id', 'api_version'])
    .executeTakeFirst();
}
