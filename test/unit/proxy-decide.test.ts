import { describe, expect, it } from 'vitest';
import { decide } from '../../src/proxy/decide.js';
import { network } from '../e2e/proxy-fixtures.js';

const net = network({
  allow: ['example.com', '*.github.com', 'api.example.org:443', '127.0.0.1:3000', '[::1]:8080', 'bücher.de', '10.1.2.3', 'github.com'],
  deny: ['evil.example', 'bad.github.com', '*:22', '1.2.3.4'],
  reasons: { '*:22': 'use https remotes' },
});

function verdict(host: string, port: number) {
  const d = decide(net, host, port);
  return d.allow ? `allow ${d.host.host}` : `deny: ${d.reason}`;
}

describe('decide', () => {
  it.each([
    // [host, port, expected]
    ['example.com', 443, 'allow example.com'],
    ['EXAMPLE.COM', 443, 'allow example.com'],
    ['example.com.', 80, 'allow example.com'],
    ['Example.Com.', 80, 'allow example.com'],
    ['www.example.com', 443, 'deny: not in network.allowedDomains'],
    ['api.github.com', 443, 'allow api.github.com'],
    ['github.com', 443, 'allow github.com'],
    ['bad.github.com', 443, 'deny: denied by network.deniedDomains (bad.github.com)'],
    ['api.example.org', 443, 'allow api.example.org'],
    ['api.example.org', 80, 'deny: not in network.allowedDomains'],
    ['127.0.0.1', 3000, 'allow 127.0.0.1'],
    ['127.0.0.1', 3001, 'deny: not in network.allowedDomains'],
    ['[::1]', 8080, 'allow ::1'],
    ['::1', 8080, 'allow ::1'],
    ['[0:0:0:0:0:0:0:1]', 8080, 'allow ::1'],
    ['bücher.de', 443, 'allow xn--bcher-kva.de'],
    ['XN--BCHER-KVA.DE', 443, 'allow xn--bcher-kva.de'],
    ['evil.example', 443, 'deny: denied by network.deniedDomains (evil.example)'],
    ['EVIL.example.', 443, 'deny: denied by network.deniedDomains (evil.example)'],
  ])('%s:%i → %s', (host, port, expected) => {
    expect(verdict(host, port)).toBe(expected);
  });

  it('deniedDomains beats allowedDomains, with the configured reason', () => {
    expect(verdict('github.com', 22)).toBe('deny: use https remotes (network.deniedDomains: *:22)');
    expect(verdict('example.com', 22)).toBe('deny: use https remotes (network.deniedDomains: *:22)');
  });

  it.each([
    // IPv4 shorthands are normalised to the address they mean (what every client dials), so a
    // rule about that address holds for every spelling.
    ['127.1', 3000, 'allow 127.0.0.1'],
    ['2130706433', 3000, 'allow 127.0.0.1'],
    ['0x7f.1', 3000, 'allow 127.0.0.1'],
    ['0177.0.0.1', 3000, 'allow 127.0.0.1'],
    ['127.1', 3001, 'deny: not in network.allowedDomains'],
    ['16909060', 443, 'deny: denied by network.deniedDomains (1.2.3.4)'], // 1.2.3.4
    ['0x01020304', 443, 'deny: denied by network.deniedDomains (1.2.3.4)'],
    ['1.2.3.4.', 443, 'deny: denied by network.deniedDomains (1.2.3.4)'],
    // IPv6 forms that carry an IPv4 address are judged as it too
    ['[::ffff:1.2.3.4]', 443, 'deny: denied by network.deniedDomains (1.2.3.4)'],
    ['[::ffff:102:304]', 443, 'deny: denied by network.deniedDomains (1.2.3.4)'],
    ['[64:ff9b::1.2.3.4]', 443, 'deny: denied by network.deniedDomains (1.2.3.4)'],
    ['[2002:102:304::1]', 443, 'deny: denied by network.deniedDomains (1.2.3.4)'],
    ['[::ffff:127.0.0.1]', 3000, 'allow 127.0.0.1'],
    ['[::ffff:10.1.2.3]', 80, 'allow 10.1.2.3'],
  ])('hostile IP spelling %s:%i → %s', (host, port, expected) => {
    expect(verdict(host, port)).toBe(expected);
  });

  it.each([
    'example.com@evil.example',
    'evil.example@example.com',
    'example.com/evil',
    'example.com?x',
    'example.com#x',
    'exa mple.com',
    'example.com\r\nX: y',
    'example.com%00',
    '%65xample.com',
    '',
    '.',
    '..example.com',
    '[::1%eth0]',
    '[fe80::1%25lo]',
    'example.com:443',
    '*.github.com',
    '*',
    '1.2.3.256',
    'a'.repeat(64) + '.example.com',
  ])('refuses the malformed host %j', (host) => {
    const d = decide(net, host, 443);
    expect(d.allow).toBe(false);
  });

  it.each([0, -1, 65536, 99999, 1.5, Number.NaN])('refuses port %s', (port) => {
    const d = decide(net, 'example.com', port);
    expect(d.allow).toBe(false);
    if (!d.allow) expect(d.reason).toMatch(/invalid destination port/);
  });

  it('marks only IP-literal allow entries as explicit', () => {
    const a = decide(net, '127.0.0.1', 3000);
    expect(a.allow && a.explicit).toBe(true);
    const b = decide(net, 'example.com', 443);
    expect(b.allow && b.explicit).toBe(false);
    const star = decide(network({ allow: ['*'] }), '127.0.0.1', 80);
    expect(star.allow).toBe(true);
    expect(star.allow && star.explicit).toBe(false); // `*` does not exempt loopback from the guard
  });

  it('allowManagedDomainsOnly counts only managed allow entries', () => {
    const n = network({ managedAllow: ['corp.example'], allow: ['example.com'], managedOnly: true });
    expect(decide(n, 'corp.example', 443).allow).toBe(true);
    const d = decide(n, 'example.com', 443);
    expect(d.allow).toBe(false);
    if (!d.allow) expect(d.reason).toBe('not in the managed network.allowedDomains (allowManagedDomainsOnly)');
    expect(decide({ ...n, allowManagedDomainsOnly: false }, 'example.com', 443).allow).toBe(true);
  });

  it('denies everything when nothing is allowed', () => {
    expect(verdict('example.com', 443)).toBe('allow example.com');
    expect(decide(network({}), 'example.com', 443).allow).toBe(false);
  });
});
