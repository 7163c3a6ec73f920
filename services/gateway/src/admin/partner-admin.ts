import {
  API_VERSIONS,
  apiVersion,
  guid,
  LATEST_API_VERSION,
  partnerKind,
  partnerMode,
  paymentType,
  type ApiVersion,
  type PartnerKind,
  type PartnerMode,
  type PaymentType,
} from '@pcp/contracts';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { generateApiKey, parseApiKey } from '../auth/api-key.js';
import {
  findPartner,
  insertApiKey,
  insertPartner,
  listPartnersWithKeys,
  lockApiVersion,
  revokeApiKey,
  updateApiVersion,
  updatePaymentTypes,
  updateRateLimits,
  updateSuspension,
} from '../db/partner.repository.js';
import type { GatewayDatabase, RateLimitOverrides } from '../db/partner.table.js';
import { apiVersionUsage as readApiVersionUsage } from '../db/request-log.repository.js';
import { deleteSessionsOf } from '../db/session.repository.js';

type Db = Kysely<GatewayDatabase>;

export class AdminError extends Error {}

/** Distribution partners may take both payment types unless told otherwise; commerce none. */
function defaultPaymentTypes(kind: PartnerKind): PaymentType[] {
  return kind === 'distribution' ? ['CARD', 'PAY_AT_STORE'] : [];
}

function parsePaymentTypes(values: string[]): PaymentType[] {
  const parsed = values.map((value) => {
    const type = paymentType.safeParse(value);
    if (!type.success) throw new AdminError(`unknown payment type ${value} (CARD, PAY_AT_STORE)`);
    return type.data;
  });
  return [...new Set(parsed)];
}

function parseMode(value: string | undefined): PartnerMode {
  const mode = partnerMode.safeParse(value ?? 'live');
  if (!mode.success) throw new AdminError('--mode must be live or test');
  return mode.data;
}

/**
 * Create a partner (with its test tenant, docs/guide/sandbox.md#modes) and its first API key,
 * of `mode` (default live); the key is returned once and never stored. It is pinned to the
 * newest API version; its test tenant is the same row, so it shares that pin.
 */
export async function createPartner(
  db: Db,
  input: { kind: string; name: string; paymentTypes?: string[]; mode?: string },
): Promise<{
  partnerId: string;
  testPartnerId: string;
  kind: PartnerKind;
  apiVersion: ApiVersion;
  mode: PartnerMode;
  keyId: string;
  apiKey: string;
}> {
  const kind = partnerKind.safeParse(input.kind);
  if (!kind.success) throw new AdminError('--kind must be commerce or distribution');
  const mode = parseMode(input.mode);
  const name = input.name.trim();
  if (!name || name.length > 200) throw new AdminError('--name must be 1 to 200 characters');
  const paymentTypes = input.paymentTypes && parsePaymentTypes(input.paymentTypes);
  return db.transaction().execute(async (trx) => {
    const partner = await insertPartner(trx, {
      kind: kind.data,
      name,
      paymentTypes: paymentTypes ?? defaultPaymentTypes(kind.data),
      apiVersion: LATEST_API_VERSION,
    });
    const key = generateApiKey(mode);
    await insertApiKey(trx, {
      keyId: key.keyId,
      partnerId: partner.partner_id,
      keyHash: key.keyHash,
      mode,
    });
    return {
      partnerId: partner.partner_id,
      testPartnerId: partner.test_partner_id,
      kind: partner.kind,
      apiVersion: LATEST_API_VERSION,
      mode,
      keyId: key.keyId,
      apiKey: key.apiKey,
    };
  });
}

/**
 * An additional key for a partner, of `mode` (default live): rotation (create the new one,
 * then revoke the old), or its first key of the other mode.
 */
export async function createKey(db: Db, partnerId: string, input: { mode?: string } = {}) {
  const mode = parseMode(input.mode);
  if (!guid.safeParse(partnerId).success || !(await findPartner(db, partnerId))) {
    throw new AdminError(`no partner ${partnerId}`);
  }
  const key = generateApiKey(mode);
  await insertApiKey(db, { keyId: key.keyId, partnerId, keyHash: key.keyHash, mode });
  return { partnerId, mode, keyId: key.keyId, apiKey: key.apiKey };
}

const KEY_ID = /^[0-9a-f]{16}$/;

/** The key id in a whole key or a bare key id: what `revoke-key --key-stdin` reads. */
export function keyIdOf(keyIdOrKey: string): string {
  const text = keyIdOrKey.trim();
  const keyId = KEY_ID.test(text) ? text : parseApiKey(text);
  if (keyId === null) throw new AdminError('not a key id (16 hex digits) or an API key');
  return keyId;
}

/** Revoke by key id (the 16 hex digits after `pcp_<mode>_`, as `list-partners` shows). */
export async function revokeKey(db: Db, keyId: string) {
  if (!KEY_ID.test(keyId)) throw new AdminError('--key-id must be 16 hex digits');
  // Its console sessions end with it (gateways also stop honouring them on the announcement).
  const revoked = await db.transaction().execute(async (trx) => {
    const key = await revokeApiKey(trx, keyId);
    if (key) await deleteSessionsOf(trx, { keyId });
    return key;
  });
  if (!revoked) throw new AdminError(`no active key ${keyId}`);
  return { keyId: revoked.key_id, partnerId: revoked.partner_id, revokedAt: revoked.revoked_at };
}

export async function listPartners(db: Db) {
  const partners = await listPartnersWithKeys(db);
  return partners.map(({ partner, keys }) => ({
    partnerId: partner.partner_id,
    testPartnerId: partner.test_partner_id,
    kind: partner.kind,
    name: partner.name,
    paymentTypes: partner.payment_types,
    rateLimits: partner.rate_limits,
    createdAt: partner.created_at,
    suspendedAt: partner.suspended_at,
    apiVersion: partner.api_version,
    keys: keys.map((key) => ({
      keyId: key.key_id,
      mode: key.mode,
      createdAt: key.created_at,
      revokedAt: key.revoked_at,
    })),
  }));
}

/** Raise (or lower) one partner's per-minute limits; classes left out keep their value. */
export async function setRateLimits(db: Db, partnerId: string, limits: RateLimitOverrides) {
  for (const [rateClass, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1 || value > 1_000_000) {
      throw new AdminError(`--${rateClass} must be a whole number from 1 to 1000000`);
    }
  }
  const partner = guid.safeParse(partnerId).success ? await findPartner(db, partnerId) : undefined;
  if (!partner) throw new AdminError(`no partner ${partnerId}`);
  const updated = await updateRateLimits(db, partnerId, { ...partner.rate_limits, ...limits });
  return { partnerId, rateLimits: updated?.rate_limits ?? limits };
}

/** Replace the payment types a partner may use (checked against the contract's types). */
export async function setPaymentTypes(db: Db, partnerId: string, values: string[]) {
  const paymentTypes = parsePaymentTypes(values);
  const updated = guid.safeParse(partnerId).success
    ? await updatePaymentTypes(db, partnerId, paymentTypes)
    : undefined;
  if (!updated) throw new AdminError(`no partner ${partnerId}`);
  return { partnerId, paymentTypes: updated.payment_types };
}

/**
 * Suspend a partner (every key refused until resumed, its console sessions ended) or resume
 * it; keys stay as they are.
 */
export async function setSuspended(db: Db, partnerId: string, suspended: boolean) {
  const updated = guid.safeParse(partnerId).success
    ? await db.transaction().execute(async (trx) => {
        const partner = await updateSuspension(trx, partnerId, suspended ? new Date() : null);
        if (partner && suspended) await deleteSessionsOf(trx, { partnerId });
        return partner;
      })
    : undefined;
  if (!updated) throw new AdminError(`no partner ${partnerId}`);
  return { partnerId, suspendedAt: updated.suspended_at };
}

/**
 * Pin a partner to a version, older or newer (docs/guide/requests.md#api-version): the
 * operator's way back, which a partner's own upgrade refuses. Says what it was and whether
 * that changed.
 */
export async function setApiVersion(db: Db, partnerId: string, version: string) {
  const parsed = apiVersion.safeParse(version);
  if (!parsed.success) {
    throw new AdminError(`--version must be one of ${API_VERSIONS.join(', ')}`);
  }
  const previous = guid.safeParse(partnerId).success
    ? await db.transaction().execute(async (trx) => {
        const row = await lockApiVersion(trx, partnerId);
        if (row && row.api_version !== parsed.data) {
          await updateApiVersion(trx, partnerId, parsed.data);
        }
        return row?.api_version;
      })
    : undefined;
  if (previous === undefined) throw new AdminError(`no partner ${partnerId}`);
  return {
    partnerId,
    previousVersion: previous,
    version: parsed.data,
    changed: previous !== parsed.data,
  };
}

/** The most partners `api-version-usage` lists: the output stays readable whatever the log. */
export const MAX_USAGE_PARTNERS = 100;

/** An ISO 8601 date (midnight UTC) or date-time with its offset. */
const isoInstant = z.union([z.iso.date(), z.iso.datetime({ offset: true })]);

/**
 * Which partners still call which API version (docs/guide/versioning.md#deprecation), from the
 * request log: each partner's requests per version since `since` (the whole log, its retention
 * window, by default), in `version` only when given; the partners with the most requests
 * first, at most MAX_USAGE_PARTNERS of them (`partnersOmitted` says how many more).
 */
export async function apiVersionUsage(db: Db, input: { version?: string; since?: string } = {}) {
  let version: ApiVersion | undefined;
  if (input.version !== undefined) {
    const parsed = apiVersion.safeParse(input.version);
    if (!parsed.success)
      throw new AdminError(`--version must be one of ${API_VERSIONS.join(', ')}`);
    version = parsed.data;
  }
  let since: Date | undefined;
  if (input.since !== undefined) {
    const parsed = isoInstant.safeParse(input.since);
    if (!parsed.success) {
      throw new AdminError('--since must be an ISO 8601 date or date-time with its offset');
    }
    since = new Date(parsed.data);
  }
  const rows = await readApiVersionUsage(db, {
    ...(since ? { since } : {}),
    ...(version ? { version } : {}),
    maxPartners: MAX_USAGE_PARTNERS,
  });
  const partners = new Map<
    string,
    {
      partnerId: string;
      name: string;
      apiVersion: string;
      requests: number;
      versions: { version: string | null; requests: number; lastAt: string }[];
    }
  >();
  for (const row of rows) {
    let partner = partners.get(row.partner_id);
    if (!partner) {
      partner = {
        partnerId: row.partner_id,
        name: row.name,
        apiVersion: row.pin,
        requests: Number(row.total),
        versions: [],
      };
      partners.set(row.partner_id, partner);
    }
    partner.versions.push({
      version: row.api_version,
      requests: Number(row.requests),
      lastAt: row.last_at.toISOString(),
    });
  }
  const counted = rows[0] ? Number(rows[0].partners) : 0;
  return {
    since: since?.toISOString() ?? null,
    version: version ?? null,
    partners: [...partners.values()],
    partnersOmitted: counted - partners.size,
  };
}
