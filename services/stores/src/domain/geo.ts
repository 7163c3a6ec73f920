import { EARTH_RADIUS_METERS, type Coordinates } from '@pcp/contracts';

const METERS_PER_DEGREE = (Math.PI * EARTH_RADIUS_METERS) / 180;

const radians = (degrees: number) => (degrees * Math.PI) / 180;

/** The database's distance arithmetic rounds degrees to 1/DEGREE_GRID (about 0.1 mm). */
export const DEGREE_GRID = 1e9;

/**
 * `degrees` on the DEGREE_GRID. PostgreSQL raises "value out of range: underflow" when a
 * float8 product of non-zero values rounds to zero, so a partner's 5e-324 (or a store at
 * 1e-200) must never reach radians()/power(): snapped, every difference of coordinates is 0
 * or large enough that the haversine terms stay far above the smallest double.
 */
export const snapDegrees = (degrees: number) => Math.round(degrees * DEGREE_GRID) / DEGREE_GRID;

/**
 * A latitude/longitude box holding every point within `radiusMeters` of `center`: the
 * index prefilter before exact distances. (Boxes are not split at the antimeridian.)
 */
export function boundingBox(center: Coordinates, radiusMeters: number) {
  const latDelta = radiusMeters / METERS_PER_DEGREE;
  const cosLat = Math.max(0.01, Math.cos(radians(center.latitude)));
  const lngDelta = Math.min(180, radiusMeters / (METERS_PER_DEGREE * cosLat));
  return {
    minLatitude: Math.max(-90, center.latitude - latDelta),
    maxLatitude: Math.min(90, center.latitude + latDelta),
    minLongitude: Math.max(-180, center.longitude - lngDelta),
    maxLongitude: Math.min(180, center.longitude + lngDelta),
  };
}
