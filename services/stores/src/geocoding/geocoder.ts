import type { Coordinates, CustomerLocation, PostalAddress } from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import { createRequire } from 'node:module';

/** The part of the `zipcodes` package (CommonJS, untyped) this geocoder uses. */
interface ZipcodesGazetteer {
  lookup(code: string): { latitude: number; longitude: number } | undefined;
}
const zipcodes = createRequire(import.meta.url)('zipcodes') as ZipcodesGazetteer;

/** Turns a postal address into coordinates; null when it cannot. */
export interface Geocoder {
  geocode(address: PostalAddress): Coordinates | null;
}

/**
 * Offline geocoding from the postal-code gazetteer the `zipcodes` package ships (US ZIP
 * codes and Canadian forward sortation areas): the centroid of the address's postal code.
 * Good enough for discovery and delivery radii; a street-level geocoder can replace it
 * behind the same interface.
 */
export function createGazetteerGeocoder(): Geocoder {
  return {
    geocode(address) {
      const key = gazetteerKey(address);
      const record = key ? zipcodes.lookup(key) : undefined;
      return record ? { latitude: record.latitude, longitude: record.longitude } : null;
    },
  };
}

function gazetteerKey({ country, postalCode }: PostalAddress): string | null {
  const code = postalCode.trim().toUpperCase();
  if (country === 'US') return /^(\d{5})(-\d{4})?$/.exec(code)?.[1] ?? null;
  if (country === 'CA') return /^([A-Z]\d[A-Z]) ?\d[A-Z]\d$/.exec(code)?.[1] ?? null;
  return null;
}

/** Coordinates are used as given; an address is geocoded or refused (422, with a pointer). */
export function locate(location: CustomerLocation, geocoder: Geocoder, pointerRoot: string) {
  if (!('address1' in location))
    return { latitude: location.latitude, longitude: location.longitude, address: null };
  const point = geocoder.geocode(location);
  if (!point) {
    const message = `No location is known for postal code ${location.postalCode} in ${location.country}`;
    throw new AppError('ADDRESS_INVALID', message, {
      errors: [{ code: 'ADDRESS_INVALID', message, pointer: `${pointerRoot}/postalCode` }],
    });
  }
  return { ...point, address: { ...location, address2: location.address2 ?? null } };
}
