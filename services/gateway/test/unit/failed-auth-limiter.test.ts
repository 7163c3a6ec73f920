import { describe, expect, it } from 'vitest';
import { clientAddressKey } from '../../src/auth/failed-auth-limiter.js';

describe('clientAddressKey', () => {
  it('counts an IPv4 address by itself, also when IPv4-mapped', () => {
    expect(clientAddressKey('203.0.113.5')).toBe('203.0.113.5');
    expect(clientAddressKey('::ffff:203.0.113.5')).toBe('203.0.113.5');
    expect(clientAddressKey('::FFFF:127.0.0.1')).toBe('127.0.0.1');
  });

  it('counts an IPv6 address by its /64, however it is written', () => {
    const key = '2001:db8:85a3:1::/64';
    for (const address of [
      '2001:db8:85a3:1::1',
      '2001:0db8:85a3:0001:ffff:ffff:ffff:ffff',
      '2001:DB8:85A3:1:0:0:0:2',
      '2001:db8:85a3:1:abcd::9%eth0',
      '2001:db8:85a3:1:0:0:192.0.2.1',
    ]) {
      expect(clientAddressKey(address), address).toBe(key);
    }
    expect(clientAddressKey('2001:db8:85a3:2::1')).not.toBe(key);
    expect(clientAddressKey('::1')).toBe('0:0:0:0::/64');
    expect(clientAddressKey('fe80::1')).toBe('fe80:0:0:0::/64');
  });

  it('keeps anything else as text of bounded length', () => {
    expect(clientAddressKey('unknown')).toBe('unknown');
    expect(clientAddressKey('x'.repeat(10_000))).toHaveLength(64);
  });
});
