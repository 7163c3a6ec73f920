// Where an outbound request may go: the URL's scheme and credentials, and its addresses
// (literal, or resolved by us and pinned for the connection) public or allow-listed.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { isPublicAddress, type AddressAllowlist } from './ip-address.js';
import { FetchFailure, notRoutable } from './outbound-failure.js';
import type { SafeOutboundOptions } from './safe-fetch.js';

/** Scheme, credentials and IP-literal checks; Node skips `lookup` for literals, so they are checked here. */
export function checkTarget(
  raw: string,
  base: URL | undefined,
  subject: string,
  options: SafeOutboundOptions,
): URL {
  let target: URL;
  try {
    target = new URL(raw, base);
  } catch {
    throw new FetchFailure('invalid_url', `${subject} is not a valid URL`);
  }
  if (target.protocol !== 'https:' && !(options.allowHttp && target.protocol === 'http:')) {
    const allowed = options.allowHttp ? 'http or https' : 'https';
    throw new FetchFailure('scheme_not_allowed', `${subject} must use ${allowed}`);
  }
  if (target.username !== '' || target.password !== '') {
    throw new FetchFailure('invalid_url', `${subject} must not contain credentials`);
  }
  const literal = unbracket(target.hostname);
  if (isIP(literal) !== 0 && !addressAllowed(literal, options.allowlist)) {
    throw notRoutable(subject, 'address_not_allowed');
  }
  return target;
}

/** A URL's hostname without the brackets of an IPv6 literal. */
export function unbracket(hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

function addressAllowed(address: string, allowlist: AddressAllowlist): boolean {
  return isPublicAddress(address) || allowlist.allows(address);
}

/**
 * Resolves the host ourselves and hands the socket only permitted addresses, so the address
 * checked is the address connected to (no DNS rebinding between check and connect).
 */
export function guardedLookup(subject: string, allowlist: AddressAllowlist): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    const query = { family: lookupOptions.family, hints: lookupOptions.hints, all: true as const };
    dnsLookup(hostname, query, (error, addresses) => {
      if (error || addresses.length === 0) {
        callback(notRoutable(subject, 'dns_failed'), []);
        return;
      }
      const permitted = addresses.filter((entry: LookupAddress) =>
        addressAllowed(entry.address, allowlist),
      );
      const first = permitted[0];
      if (first === undefined) callback(notRoutable(subject, 'address_not_allowed'), []);
      // With autoSelectFamily, net asks for every address; otherwise for one.
      else if (lookupOptions.all) callback(null, permitted);
      else callback(null, first.address, first.family);
    });
  };
}
