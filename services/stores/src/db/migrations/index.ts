import type { Migration } from 'kysely';
import * as createStores from './2026-11-22T0000-create-stores.js';
import * as storeCatalog from './2026-11-22T0200-store-catalog.js';
import * as storeLocationIndex from './2026-11-22T0300-store-location-index.js';
import * as storeDeliveryRadiusIndex from './2026-11-22T0400-store-delivery-radius-index.js';
import * as deliveryRadiusCap from './2026-11-23T0100-delivery-radius-cap.js';
import * as isoCurrencyDigits from './2026-11-23T0200-iso-currency-digits.js';
import * as storeCatalogVersion from './2026-11-25T0100-store-catalog-version.js';
import * as orderSubmissionSecret from './2026-11-27T0200-order-submission-secret.js';
import * as storeLocationCoveringIndex from './2026-11-30T0100-store-location-covering-index.js';
import * as sealSubmissionSecrets from './2026-12-02T0100-seal-submission-secrets.js';
import * as storeHoursBusy from './2026-12-03T0100-store-hours-busy.js';
import * as itemAvailabilityEvents from './2026-12-03T0200-item-availability-events.js';
import * as modesDataStoreMode from './2026-12-20T0100-modes-data-store-mode.js';
import * as fixturesStoreEvents from './2026-12-20T0300-fixtures-store-events.js';
import * as storeProfileVersion from './2026-12-21T0100-store-profile-version.js';
import * as deletedStoreVersions from './2026-12-22T0200-deleted-store-versions.js';
import * as bindSubmissionSecrets from './2026-12-22T0300-bind-submission-secrets.js';

/** Migrations of the `stores` schema, by name in the order they apply. */
export const storesMigrations: Record<string, Migration> = {
  '2026-11-22T0000-create-stores': createStores,
  '2026-11-22T0200-store-catalog': storeCatalog,
  '2026-11-22T0300-store-location-index': storeLocationIndex,
  '2026-11-22T0400-store-delivery-radius-index': storeDeliveryRadiusIndex,
  '2026-11-23T0100-delivery-radius-cap': deliveryRadiusCap,
  '2026-11-23T0200-iso-currency-digits': isoCurrencyDigits,
  '2026-11-25T0100-store-catalog-version': storeCatalogVersion,
  '2026-11-27T0200-order-submission-secret': orderSubmissionSecret,
  '2026-11-30T0100-store-location-covering-index': storeLocationCoveringIndex,
  '2026-12-02T0100-seal-submission-secrets': sealSubmissionSecrets,
  '2026-12-03T0100-store-hours-busy': storeHoursBusy,
  '2026-12-03T0200-item-availability-events': itemAvailabilityEvents,
  '2026-12-20T0100-modes-data-store-mode': modesDataStoreMode,
  '2026-12-20T0300-fixtures-store-events': fixturesStoreEvents,
  '2026-12-21T0100-store-profile-version': storeProfileVersion,
  '2026-12-22T0200-deleted-store-versions': deletedStoreVersions,
  '2026-12-22T0300-bind-submission-secrets': bindSubmissionSecrets,
};

export const STORES_SCHEMA = 'stores';
