import { describe, expect, it } from 'vitest';
import { isPublicAddress, parseAllowlist } from '../src/ip-address.js';

describe('isPublicAddress', () => {
  const cases: [string, boolean][] = [
    ['8.8.8.8', true],
    ['1.1.1.1', true],
    ['2606:4700:4700::1111', true],
    ['::ffff:8.8.8.8', true],
    ['10.0.0.1', false],
    ['172.16.5.4', false],
    ['172.31.255.255', false],
    ['192.168.1.1', false],
    ['127.0.0.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['0.1.2.3', false],
    ['255.255.255.255', false],
    ['224.0.0.1', false],
    ['192.0.0.1', false],
    ['192.0.2.1', false],
    ['198.51.100.1', false],
    ['203.0.113.1', false],
    ['198.18.0.1', false],
    ['198.19.255.1', false],
    ['240.0.0.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['fd12::1', false],
    ['fec0::1', false],
    ['ff02::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:169.254.169.254', false],
    // IPv4-compatible (deprecated) form: ipaddr.js calls it 'unicast'.
    ['::127.0.0.1', false],
    ['64:ff9b::a00:1', false],
    ['2002:a00:1::1', false],
    ['2001::1', false],
    ['2001:db8::1', false],
    ['100::1', false],
    // Non-canonical IPv4 spellings are not addresses the socket layer accepts.
    ['127.1', false],
    ['0x7f.0.0.1', false],
    ['134744072', false],
    ['not-an-ip', false],
    ['', false],
  ];

  it.each(cases)('%s → %s', (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });
});

describe('parseAllowlist', () => {
  it('is empty for a blank value', () => {
    expect(parseAllowlist('').isEmpty).toBe(true);
    expect(parseAllowlist(' , ,').isEmpty).toBe(true);
    expect(parseAllowlist('').allows('127.0.0.1')).toBe(false);
  });

  it('admits addresses inside IPv4 CIDR ranges only', () => {
    const list = parseAllowlist('127.0.0.1/32, 10.1.0.0/16');
    expect(list.isEmpty).toBe(false);
    expect(list.allows('127.0.0.1')).toBe(true);
    expect(list.allows('127.0.0.2')).toBe(false);
    expect(list.allows('10.1.200.3')).toBe(true);
    expect(list.allows('10.2.0.1')).toBe(false);
    expect(list.allows('::ffff:10.1.0.9')).toBe(true);
    expect(list.allows('::1')).toBe(false);
    expect(list.allows('garbage')).toBe(false);
  });

  it('admits addresses inside IPv6 CIDR ranges and bare addresses', () => {
    const list = parseAllowlist('fd00:1::/32,::1,192.168.0.7');
    expect(list.allows('fd00:1:2::3')).toBe(true);
    expect(list.allows('fd00:2::3')).toBe(false);
    expect(list.allows('::1')).toBe(true);
    expect(list.allows('192.168.0.7')).toBe(true);
    expect(list.allows('192.168.0.8')).toBe(false);
  });

  it.each([
    'localhost',
    'partner.internal',
    'metadata.google.internal',
    '10.0.0.0/33',
    '::1/129',
    'not a host',
    'http://x.example',
    '-bad.example',
    '10.0.0.300',
  ])('throws naming the bad entry %s', (entry) => {
    expect(() => parseAllowlist(`127.0.0.1/32, ${entry}`)).toThrow(entry);
  });
});
