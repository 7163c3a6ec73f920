// The zipcodes package ships no types; this is the part the gazetteer geocoder uses.
declare module 'zipcodes' {
  interface ZipRecord {
    zip: string;
    latitude: number;
    longitude: number;
    city: string;
    state: string;
    country: string;
  }
  export function lookup(zip: string): ZipRecord | undefined;
  const zipcodes: { lookup: typeof lookup };
  export default zipcodes;
}
