import type { Coordinates } from '@pcp/contracts';

/** Mean Earth radius (IUGG), the sphere the distances are measured on. */
export const EARTH_RADIUS_METERS = 6_371_008.8;
const METERS_PER_DEGREE = (Math.PI * EARTH_RADIUS_METERS) / 180;

const radians = (degrees: number) => (degrees * Math.PI) / 180;

/** Great-circle (haversine) distance in meters. */
export function distanceMeters(a: Coordinates, b: Coordinates): number {
  const h =
    Math.sin(radians(b.latitude - a.latitude) / 2) ** 2 +
    Math.cos(radians(a.latitude)) *
      Math.cos(radians(b.latitude)) *
      Math.sin(radians(b.longitude - a.longitude) / 2) ** 2;
  return 2 * EARTH_RADIUS_METERS * Math.asin(Math.min(1, Math.sqrt(h)));
}

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
