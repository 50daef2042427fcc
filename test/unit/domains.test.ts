import { describe, expect, it } from 'vitest';
import { normalizeHost, parseDomainEntry, ruleMatches, type DomainRule } from '../../src/proxy/domains.js';

function rules(raw: string, list: 'allow' | 'deny' = 'allow'): DomainRule[] {
  const r = parseDomainEntry(raw, list);
  if (!r.ok) throw new Error(r.error);
  return r.rules;
}
function one(raw: string): DomainRule {
  const r = rules(raw);
  expect(r).toHaveLength(1);
  return r[0]!;
}
function matches(raw: string, dest: string, port: number): boolean {
  const host = normalizeHost(dest);
  if (!host) throw new Error(`bad dest ${dest}`);
  return rules(raw, 'deny').some((r) => ruleMatches(r, host.host, port));
}

describe('normalizeHost', () => {
  it.each([
    ['Example.COM', 'example.com', undefined],
    ['example.com.', 'example.com', undefined],
    ['bücher.de', 'xn--bcher-kva.de', undefined],
    ['XN--BCHER-KVA.de', 'xn--bcher-kva.de', undefined],
    ['127.0.0.1', '127.0.0.1', 4],
    ['127.1', '127.0.0.1', 4],
    ['0x7f.0.0.1', '127.0.0.1', 4],
    ['2130706433', '127.0.0.1', 4],
    ['0177.0.0.1', '127.0.0.1', 4],
    ['[::1]', '::1', 6],
    ['::1', '::1', 6],
    ['[0:0:0:0:0:0:0:1]', '::1', 6],
    ['::ffff:127.0.0.1', '127.0.0.1', 4],
    ['[::ffff:7f00:1]', '127.0.0.1', 4],
    ['[2001:DB8::1]', '2001:db8::1', 6],
    ['_dmarc.example.com', '_dmarc.example.com', undefined],
  ])('%s → %s', (input, host, ip) => {
    expect(normalizeHost(input)).toEqual(ip === undefined ? { host } : { host, ip });
  });

  it.each(['', ' example.com', 'a..b', '.a.com', 'a@b.com', 'a/b', 'a?b', 'a#b', 'a%2eb', 'exa mple.com', '1.2.3.4.5',
    'foo.123', 'fe80::1%eth0', '[::1', 'a\u0000b', '256.1.1.1', 'a'.repeat(64) + '.com'])('rejects %j', (input) => {
    expect(normalizeHost(input)).toBeNull();
  });
});

describe('parseDomainEntry', () => {
  it('parses hosts, wildcards, ports and IP literals', () => {
    expect(one('github.com')).toMatchObject({ kind: 'host', host: 'github.com', text: 'github.com' });
    expect(one('*.npmjs.org')).toMatchObject({ kind: 'wildcard', host: 'npmjs.org', text: '*.npmjs.org' });
    expect(one('api.example.com:443')).toMatchObject({ host: 'api.example.com', port: 443, text: 'api.example.com:443' });
    expect(one('[::1]:8080')).toMatchObject({ host: '::1', port: 8080, ip: 6, text: '[::1]:8080' });
    expect(one('[2001:db8::1]:443')).toMatchObject({ host: '2001:db8::1', port: 443, ip: 6 });
    expect(one('127.0.0.1:3000')).toMatchObject({ host: '127.0.0.1', port: 3000, ip: 4 });
    expect(one('EXAMPLE.com.')).toMatchObject({ host: 'example.com', text: 'example.com' });
    expect(one('*.Bücher.DE')).toMatchObject({ kind: 'wildcard', host: 'xn--bcher-kva.de' });
    expect(one('*:22')).toMatchObject({ kind: 'any', port: 22, text: '*:22' });
  });

  it('warns when the allow list allows everything', () => {
    const r = parseDomainEntry('*', 'allow');
    expect(r).toMatchObject({ ok: true, warning: 'allowedDomains entry "*" allows every destination' });
    expect(parseDomainEntry('*', 'deny')).toEqual({ ok: true, rules: [expect.objectContaining({ kind: 'any' })] });
  });

  it.each([
    ['', 'empty domain entry'],
    ['host:0', 'invalid port "0"'],
    ['host:99999', 'invalid port "99999"'],
    ['host:080', 'invalid port "080"'],
    ['host:', 'invalid port ""'],
    ['[::1]:0', 'invalid port "0"'],
    ['a.*.com', 'wildcard "*" is only allowed'],
    ['*foo.com', 'wildcard "*" is only allowed'],
    ['*.*.com', 'invalid wildcard'],
    ['*.1.2.3.4', 'invalid wildcard'],
    ['allowed.com@evil.com', 'spaces, "@", path or query'],
    ['example.com/path', 'spaces, "@", path or query'],
    ['example.com?q', 'spaces, "@", path or query'],
    ['[::1', 'bad bracketed IPv6'],
    ['[example.com]', 'is not an IPv6 address'],
    ['[fe80::1%25eth0]', 'is not an IPv6 address'],
    ['exa_mple..com', 'invalid host'],
    ['zz::yy', 'not an IPv6 address'],
    ['a:b:c', 'not an IPv6 address'],
  ])('rejects %j in both lists', (raw, message) => {
    for (const list of ['allow', 'deny'] as const) {
      const r = parseDomainEntry(raw, list);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toContain(message);
    }
  });

  it('ambiguous unbracketed IPv6 in an allow list: host+port reading only, else dropped', () => {
    const withPort = parseDomainEntry('::1:8080', 'allow');
    expect(withPort).toMatchObject({ ok: true, rules: [{ host: '::1', port: 8080 }] });
    expect(withPort.ok && withPort.warning).toContain('ambiguous');
    const dropped = parseDomainEntry('2001:db8::1', 'allow');
    expect(dropped).toMatchObject({ ok: true, rules: [] });
    expect(dropped.ok && dropped.warning).toContain('dropped');
  });

  it('ambiguous unbracketed IPv6 in a deny list: every reading is denied', () => {
    const r = parseDomainEntry('::1:8080', 'deny');
    expect(r.ok && r.rules.map((x) => x.text)).toEqual(['[::1:8080]', '[::1]:8080']);
    expect(r.ok && r.warning).toContain('ambiguous');
    const addr = parseDomainEntry('2001:db8::1', 'deny');
    expect(addr.ok && addr.rules.map((x) => x.text)).toEqual(['[2001:db8::1]']);
  });
});

describe('ruleMatches', () => {
  it.each([
    ['example.com', 'example.com', 443, true],
    ['example.com', 'EXAMPLE.com.', 80, true],
    ['example.com', 'www.example.com', 443, false],
    ['example.com', 'example.com.evil.net', 443, false],
    ['example.com', 'notexample.com', 443, false],
    ['*.example.com', 'a.example.com', 443, true],
    ['*.example.com', 'a.b.example.com', 443, true],
    ['*.example.com', 'example.com', 443, false],
    ['*.example.com', 'badexample.com', 443, false],
    ['example.com:443', 'example.com', 443, true],
    ['example.com:443', 'example.com', 80, false],
    ['*:22', 'github.com', 22, true],
    ['*:22', 'github.com', 443, false],
    ['*', '10.1.2.3', 1, true],
    ['bücher.de', 'xn--bcher-kva.de', 443, true],
    ['127.0.0.1', '127.1', 80, true],
    ['127.0.0.1', '2130706433', 80, true],
    ['127.0.0.1', '[::ffff:127.0.0.1]', 80, true],
    ['[::1]:8080', '::1', 8080, true],
    ['[::1]:8080', '[0::1]', 8080, true],
    ['[::1]:8080', '::1', 8081, false],
    ['*.1.0.0.127.in-addr.arpa', '127.0.0.1', 80, false],
  ])('%s covers %s:%i → %s', (rule, dest, port, expected) => {
    expect(matches(rule, dest, port)).toBe(expected);
  });
});

describe('a URL or a path in a domain entry says what to write instead', () => {
  it.each([
    ['https://api.example.com/v1', 'api.example.com'],
    ['http://user:pw@x.example:8080/p?q', 'x.example:8080'],
    ['example.com/path', 'example.com'],
    ['example.com:443/x', 'example.com:443'],
  ])('%s → write %s', (entry, hint) => {
    const r = parseDomainEntry(entry, 'allow');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toBe(`invalid domain entry "${entry}": a domain has no scheme, spaces, "@", path or query; write "${hint}"`);
  });
  it('no hint where there is nothing sensible to suggest', () => {
    const r = parseDomainEntry('a b', 'allow');
    expect(!r.ok && r.error).toBe('invalid domain entry "a b": a domain has no scheme, spaces, "@", path or query');
  });
});
