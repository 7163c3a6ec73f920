import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

// IANA's global unicast block. ipaddr.js calls everything it has no name for 'unicast',
// including IPv4-compatible ::a.b.c.d and unassigned space, so IPv6 must also lie in here.
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** Parses only the forms the socket layer connects to (not '127.1' or '0x7f.0.0.1'). */
function parseStrict(ip: string): Address | undefined {
  if (isIP(ip) === 0) return undefined;
  try {
    // process() turns ::ffff:a.b.c.d into a.b.c.d so the embedded IPv4 address is judged.
    return ipaddr.process(ip);
  } catch {
    return undefined;
  }
}

/** True for a global unicast address (v4 or v6; IPv4-mapped v6 judged by its v4 part). False for anything unparseable. */
export function isPublicAddress(ip: string): boolean {
  const address = parseStrict(ip);
  if (address === undefined) return false;
  // ipaddr.js 2.5 names every IPv4 special-purpose block (0/8, 192.0.0/24, 198.18/15, 240/4, ...)
  // and the IPv6 ones (NAT64 'rfc6052', '6to4', 'teredo', fc00::/7, ...); all of those are refused.
  if (address.range() !== 'unicast') return false;
  return address.kind() === 'ipv4' || address.match(IPV6_GLOBAL_UNICAST);
}

export interface AddressAllowlist {
  allows(address: string): boolean;
  readonly isEmpty: boolean;
}

function parseCidr(entry: string): [Address, number] | undefined {
  const slash = entry.indexOf('/');
  const base = slash === -1 ? entry : entry.slice(0, slash);
  const version = isIP(base);
  if (version === 0) return undefined;
  if (slash === -1) return [ipaddr.parse(base), version === 4 ? 32 : 128];
  try {
    return ipaddr.parseCIDR(entry);
  } catch {
    return undefined;
  }
}

/**
 * Comma-separated CIDRs and bare addresses; blank → empty list. Throws Error naming the bad
 * entry. Host names are refused: a listed name would admit whatever it resolves to (loopback,
 * the metadata address), so the address ranges a private host lives in are listed instead.
 */
export function parseAllowlist(value: string): AddressAllowlist {
  const ranges: [Address, number][] = [];
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const range = parseCidr(entry);
    if (range === undefined) {
      throw new Error(
        `address allow-list entry "${entry}" is not a CIDR range or an IP address (list the addresses a host resolves to, not its name)`,
      );
    }
    ranges.push(range);
  }

  return {
    isEmpty: ranges.length === 0,
    allows(address: string): boolean {
      const parsed = parseStrict(address);
      if (parsed === undefined) return false;
      // match() throws when the families differ.
      return ranges.some(([net, bits]) => net.kind() === parsed.kind() && parsed.match(net, bits));
    },
  };
}
