import {
  apiVersionChangesAfter,
  apiVersionsAfter,
  isApiVersion,
  LATEST_API_VERSION,
  type ApiVersion,
  type ApiVersionChangeResult,
  type ApiVersionPin,
} from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { Principal } from '../auth/authenticator.js';
import { lockApiVersion, updateApiVersion } from '../db/partner.repository.js';
import type { GatewayDatabase } from '../db/partner.table.js';

/** A partner's API version pin (docs/guide/requests.md#api-version): read and moved forward. */
export interface ApiVersionPins {
  readonly read: (principal: Principal) => ApiVersionPin;
  readonly moveForward: (
    principal: Principal,
    version: ApiVersion,
  ) => Promise<ApiVersionChangeResult>;
}

/** The pin the request runs under: the authenticator always sets it. */
const pinOf = (principal: Principal): ApiVersion => principal.apiVersion ?? LATEST_API_VERSION;

export function createApiVersionPins(deps: {
  db: Kysely<GatewayDatabase>;
  /** Every gateway (this one included) forgets the partner's cached keys: they hold the pin. */
  announce: (partnerId: string) => Promise<void>;
}): ApiVersionPins {
  return {
    read(principal) {
      const pin = pinOf(principal);
      return {
        apiVersion: pin,
        latestVersion: LATEST_API_VERSION,
        newerVersions: apiVersionsAfter(pin),
        changes: apiVersionChangesAfter(pin),
      };
    },

    async moveForward(principal, version) {
      // Locked, so two upgrades at once each see the other's result, and neither answers a
      // previousVersion that was already gone.
      const previous = await deps.db.transaction().execute(async (trx) => {
        const row = await lockApiVersion(trx, principal.accountId);
        // The key authenticated a moment ago: its partner was there.
        if (!row) throw new AppError('UNAUTHORIZED', 'Send a valid API key');
        // As text: a pin a newer release wrote is still newer than every version known here.
        if (version < row.api_version) {
          throw new AppError(
            'API_VERSION_DOWNGRADE',
            `Your partner is pinned to ${row.api_version}: it can move to ${row.api_version} ` +
              'or later only',
          );
        }
        if (version !== row.api_version) {
          await updateApiVersion(trx, principal.accountId, version);
        }
        return row.api_version;
      });
      if (previous !== version) await deps.announce(principal.accountId);
      return {
        version,
        previousVersion: isApiVersion(previous) ? previous : LATEST_API_VERSION,
      };
    },
  };
}
