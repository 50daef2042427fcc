import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import {
  addressBlockReason,
  guardDestination,
  isOwnAddress,
  localAddresses,
  parseFibTrieLocal,
  parseIfInet6,
} from '../../src/proxy/address-guard.js';
import { embeddedIpv4, inCidr, ipBytes, parseCidr } from '../../src/proxy/ip.js';
import { network } from '../e2e/proxy-fixtures.js';

const OWN = ['203.0.113.7', 'fe80::1234', '2001:db8::77'];
const base = { network: network({}), localAddresses: () => OWN };

describe('ip parsing', () => {
  it('parses IPv4 and IPv6 including embedded IPv4', () => {
    expect([...ipBytes('1.2.3.4')!]).toEqual([1, 2, 3, 4]);
    expect([...ipBytes('::1')!]).toEqual([...new Array(15).fill(0), 1]);
    expect([...ipBytes('::ffff:1.2.3.4')!].slice(10)).toEqual([255, 255, 1, 2, 3, 4]);
    expect(ipBytes('2001:db8::1:2')![15]).toBe(2);
    expect(ipBytes('fe80::1%eth0')).toBeNull();
    expect(ipBytes('example.com')).toBeNull();
  });
  it('extracts the IPv4 carried by mapped, compatible, NAT64 and 6to4 addresses', () => {
    expect(embeddedIpv4('::ffff:169.254.169.254')).toBe('169.254.169.254');
    expect(embeddedIpv4('::ffff:a9fe:a9fe')).toBe('169.254.169.254');
    expect(embeddedIpv4('::127.0.0.1')).toBe('127.0.0.1');
    expect(embeddedIpv4('64:ff9b::7f00:1')).toBe('127.0.0.1');
    expect(embeddedIpv4('2002:7f00:1::5')).toBe('127.0.0.1');
    expect(embeddedIpv4('::1')).toBeNull();
    expect(embeddedIpv4('::')).toBeNull();
    expect(embeddedIpv4('2001:db8::1')).toBeNull();
  });
  it('matches CIDRs', () => {
    expect(inCidr(ipBytes('10.9.8.7')!, parseCidr('10.0.0.0/8')!)).toBe(true);
    expect(inCidr(ipBytes('11.0.0.1')!, parseCidr('10.0.0.0/8')!)).toBe(false);
    expect(inCidr(ipBytes('fd12::1')!, parseCidr('fc00::/7')!)).toBe(true);
    expect(inCidr(ipBytes('10.0.0.1')!, parseCidr('::/0')!)).toBe(false); // families never mix
    expect(parseCidr('10.0.0.0/33')).toBeNull();
    expect(parseCidr('10.0.0.0/x')).toBeNull();
  });
});

describe('addressBlockReason', () => {
  it.each([
    ['127.0.0.1', /loopback/],
    ['127.255.0.9', /loopback/],
    ['0.0.0.0', /unspecified/],
    ['::', /unspecified/],
    ['::1', /loopback/],
    ['169.254.169.254', /cloud metadata/],
    ['100.100.100.200', /cloud metadata/],
    ['fd00:ec2::254', /cloud metadata/],
    ['169.254.1.1', /link-local/],
    ['fe80::1', /link-local/],
    ['224.0.0.251', /multicast/],
    ['ff02::1', /multicast/],
    ['255.255.255.255', /broadcast/],
    ['::ffff:127.0.0.1', /loopback/],
    ['::ffff:169.254.169.254', /cloud metadata/],
    ['64:ff9b::a9fe:a9fe', /cloud metadata/],
    ['2002:a9fe:a9fe::1', /cloud metadata/],
    // Every documented metadata or pod-identity endpoint, each named for what it is.
    ['169.254.170.2', /^169\.254\.170\.2 is a cloud metadata address \(AWS ECS task metadata and credentials\)$/],
    ['169.254.170.23', /cloud metadata address \(AWS EKS Pod Identity\)/],
    ['fd00:ec2::23', /cloud metadata address \(AWS over IPv6/],
    ['fd00:ec2::253', /cloud metadata address \(AWS over IPv6/],
    ['fd20:ce::254', /cloud metadata address \(GCP over IPv6\)/],
    ['168.63.129.16', /cloud metadata address \(Azure WireServer\)/],
    ['fd00:100::100:200', /cloud metadata address \(Alibaba Cloud over IPv6\)/],
    ['192.0.0.192', /cloud metadata address \(Oracle Cloud Classic\)/],
    ['fd00:c1::a9fe:a9fe', /cloud metadata address \(Oracle Cloud over IPv6\)/],
    ['169.254.42.42', /cloud metadata address \(Scaleway\)/],
    ['fd00:42::42', /cloud metadata address \(Scaleway over IPv6\)/],
    ['fd00:a9fe:a9fe::1', /cloud metadata address \(Akamai\/Linode over IPv6\)/],
    ['169.254.0.23', /cloud metadata address \(Tencent Cloud\)/],
    ['fe80::a9fe:a9fe', /cloud metadata address \(OpenStack and Hetzner over IPv6\)/],
    ['::ffff:192.0.0.192', /cloud metadata address \(Oracle Cloud Classic\)/],
    ['::ffff:0:169.254.170.23', /cloud metadata address \(AWS EKS Pod Identity\)/],
    ['64:ff9b::6464:64c8', /cloud metadata address \(Alibaba Cloud\)/],
    ['::127.0.0.1', /loopback/],
    ['203.0.113.7', /address of this host/],
    ['::ffff:203.0.113.7', /address of this host/],
    ['2001:db8::77', /address of this host/],
  ])('drops %s', (addr, why) => {
    expect(addressBlockReason(addr, 443, base)).toMatch(why);
  });

  it.each(['93.184.216.34', '2606:2800:220:1::1', '10.0.0.1', '192.168.1.1', '100.64.0.1'])('keeps %s', (addr) => {
    expect(addressBlockReason(addr, 443, base)).toBeNull();
  });

  it('applies deniedResolvedAddresses and deniedDomains IP literals, also to embedded IPv4', () => {
    const opts = { ...base, network: network({ deny: ['93.184.216.34', '5.6.7.8:22'], deniedResolvedAddresses: ['10.0.0.0/8', 'fc00::/7'] }) };
    expect(addressBlockReason('10.1.1.1', 443, opts)).toMatch(/deniedResolvedAddresses \(10\.0\.0\.0\/8\)/);
    expect(addressBlockReason('::ffff:10.1.1.1', 443, opts)).toMatch(/deniedResolvedAddresses/);
    expect(addressBlockReason('fd01::5', 443, opts)).toMatch(/deniedResolvedAddresses/);
    expect(addressBlockReason('93.184.216.34', 443, opts)).toMatch(/deniedDomains \(93\.184\.216\.34\)/);
    expect(addressBlockReason('64:ff9b::5db8:d822', 443, opts)).toMatch(/deniedDomains/);
    expect(addressBlockReason('5.6.7.8', 22, opts)).toMatch(/deniedDomains \(5\.6\.7\.8:22\)/);
    expect(addressBlockReason('5.6.7.8', 443, opts)).toBeNull();
  });

  it('an explicit IP-literal allow skips the built-in ranges but never the deny lists', () => {
    const opts = { ...base, network: network({ deniedResolvedAddresses: ['127.0.0.2/32'] }) };
    expect(addressBlockReason('127.0.0.1', 3000, opts, true)).toBeNull();
    expect(addressBlockReason('127.0.0.2', 3000, opts, true)).toMatch(/deniedResolvedAddresses/);
  });

  it('the test-only exemption covers exactly the listed address', () => {
    const opts = { ...base, testOnlyExemptAddresses: ['127.0.0.1'] };
    expect(addressBlockReason('127.0.0.1', 80, opts)).toBeNull();
    expect(addressBlockReason('::ffff:127.0.0.1', 80, opts)).toBeNull();
    expect(addressBlockReason('127.0.0.2', 80, opts)).toMatch(/loopback/);
    expect(addressBlockReason('169.254.169.254', 80, opts)).toMatch(/metadata/);
  });

  it('fails closed on an invalid deniedResolvedAddresses entry', () => {
    const opts = { ...base, network: network({ deniedResolvedAddresses: ['nonsense'] }) };
    expect(addressBlockReason('93.184.216.34', 443, opts)).toMatch(/invalid deniedResolvedAddresses/);
  });

  it('uses the real interface list by default', () => {
    expect(addressBlockReason('127.0.0.1', 80, { network: network({}) })).toMatch(/loopback/);
  });
});

describe('guardDestination', () => {
  it('resolves once and keeps only the addresses that pass, in order', async () => {
    const resolver = vi.fn(async () => ['127.0.0.1', '93.184.216.34', '169.254.169.254', '2606:2800:220:1::1', '93.184.216.34']);
    const r = await guardDestination({ host: 'example.com' }, 443, false, { ...base, resolver });
    expect(r).toEqual({ ok: true, addresses: ['93.184.216.34', '2606:2800:220:1::1'] });
    expect(resolver).toHaveBeenCalledTimes(1);
  });

  it("reads this host's addresses once per resolution, for every answer it judges, and each time anew", async () => {
    const locals = vi.fn(() => OWN);
    const resolver = async () => ['93.184.216.34', '203.0.113.7', '2606:2800:220:1::1', '2001:db8::77'];
    const r = await guardDestination({ host: 'example.com' }, 443, false, { ...base, localAddresses: locals, resolver });
    expect(r).toEqual({ ok: true, addresses: ['93.184.216.34', '2606:2800:220:1::1'] });
    expect(locals).toHaveBeenCalledTimes(1);
    // The next request reads them again: an address this host gained meanwhile is refused.
    const gained = vi.fn(() => [...OWN, '93.184.216.34']);
    const next = await guardDestination({ host: 'example.com' }, 443, false, { ...base, localAddresses: gained, resolver });
    expect(next).toEqual({ ok: true, addresses: ['2606:2800:220:1::1'] });
    expect(gained).toHaveBeenCalledTimes(1);
    // Answers the built-in ranges refuse need no read at all.
    const none = vi.fn(() => OWN);
    await guardDestination({ host: 'rebind.example' }, 443, false, { ...base, localAddresses: none, resolver: async () => ['127.0.0.1', '169.254.169.254'] });
    expect(none).not.toHaveBeenCalled();
  });

  it('refuses a name that resolves only to forbidden addresses (DNS rebinding to loopback/metadata)', async () => {
    const resolver = async () => ['127.0.0.1', '::ffff:169.254.169.254'];
    const r = await guardDestination({ host: 'rebind.example' }, 443, false, { ...base, resolver });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/resolves only to blocked addresses: 127\.0\.0\.1 is a loopback address \(allow 127\.0\.0\.1:443 to reach it\); ::ffff:169\.254\.169\.254 \(169\.254\.169\.254\) is a cloud metadata address/);
  });

  it('refuses names that do not resolve', async () => {
    const failing = async () => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    };
    const r = await guardDestination({ host: 'nx.example' }, 443, false, { ...base, resolver: failing });
    expect(r).toEqual({ ok: false, reason: 'cannot resolve nx.example (ENOTFOUND)' });
    const empty = await guardDestination({ host: 'nx.example' }, 443, false, { ...base, resolver: async () => [] });
    expect(empty.ok).toBe(false);
  });

  it('never resolves IP literals; an explicitly allowed literal is exempt, any other is judged', async () => {
    const resolver = vi.fn(async () => ['93.184.216.34']);
    expect(await guardDestination({ host: '127.0.0.1', ip: 4 }, 3000, true, { ...base, resolver })).toEqual({ ok: true, addresses: ['127.0.0.1'] });
    const r = await guardDestination({ host: '127.0.0.1', ip: 4 }, 3000, false, { ...base, resolver });
    expect(r.ok).toBe(false);
    const md = await guardDestination({ host: '169.254.169.254', ip: 4 }, 80, false, { ...base, resolver });
    expect(md.ok).toBe(false);
    expect(resolver).not.toHaveBeenCalled();
  });
});

describe("this host's own addresses, as the kernel knows them", () => {
  // /proc/net/fib_trie with docker0 up but without a carrier (172.17.0.1), an AnyIP range and lo.
  const FIB = `Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 10.5.0.0/16 2 0 2
     |-- 10.5.0.0
        /16 host LOCAL
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 172.17.0.0/16 2 0 2
        |-- 172.17.0.1
           /32 host LOCAL
        |-- 172.17.255.255
           /32 link BROADCAST
`;
  it('parses every host LOCAL entry of the local table, with its prefix, and no broadcast', () => {
    expect(parseFibTrieLocal(FIB).sort()).toEqual(['10.5.0.0/16', '127.0.0.0/8', '127.0.0.1', '172.17.0.1']);
  });
  it('parses every IPv6 address of /proc/net/if_inet6', () => {
    const text = 'fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n00000000000000000000000000000001 01 80 10 80       lo\n';
    expect(parseIfInet6(text)).toEqual(['fe80:0000:0000:0000:00fc:00ff:fe00:0001', '0000:0000:0000:0000:0000:0000:0000:0001']);
  });
  it('an address inside a local range or equal to a local address is refused, in every spelling', () => {
    const locals = parseFibTrieLocal(FIB);
    for (const a of ['172.17.0.1', '10.5.3.4', '::ffff:172.17.0.1']) {
      expect(addressBlockReason(a, 80, { ...base, localAddresses: () => locals })).toMatch(/is an address of this host/);
    }
    expect(addressBlockReason('172.17.0.2', 80, { ...base, localAddresses: () => locals })).toBeNull();
    expect(isOwnAddress('fe80::fc:ff:fe00:1', ['fe80:0000:0000:0000:00fc:00ff:fe00:0001'])).toBe(true);
  });
  it('localAddresses() includes what the kernel says here', () => {
    const kernel = parseFibTrieLocal(readFileSync('/proc/net/fib_trie', 'utf8'));
    expect(localAddresses()).toEqual(expect.arrayContaining(kernel));
  });
});
