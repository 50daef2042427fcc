// Local services, pure (SPEC §6): which allow entries become forwarded ports, the exposePorts
// grammar, what `localhost` means to the decision and the address guard, and the settings rules.
import { describe, expect, it } from 'vitest';
import { decide } from '../../src/proxy/decide.js';
import { guardDestination } from '../../src/proxy/address-guard.js';
import { describeExpose, describeForward, forwardedPorts, parseExposeEntry } from '../../src/proxy/local-services.js';
import { loopbackInjectProblems } from '../../src/doctor.js';
import { buildPolicy, SettingsError, type SettingsLayer } from '../../src/settings/index.js';
import { network } from '../e2e/proxy-fixtures.js';

const ctx = { cwd: '/work/repo', home: '/home/u', root: '/work/repo' };
const layer = (scope: SettingsLayer['scope'], settings: unknown, file = `/${scope}.json`): SettingsLayer => ({ scope, file, base: ctx.cwd, settings });
const never = async (): Promise<string[]> => { throw new Error('localhost must not be resolved'); };

describe('localhost names the host loopback', () => {
  const net = network({ allow: ['localhost:5432', '*:8080', '127.0.0.1:6379'], deny: ['[::1]:9999'] });

  it('is explicit (exempt from the built-in ranges) only when an entry names it', () => {
    const named = decide(net, 'LocalHost.', 5432);
    expect(named.allow && named.explicit && named.rule.text).toBe('localhost:5432');
    const star = decide(net, 'localhost', 8080);
    expect(star.allow && !star.explicit).toBe(true); // `*:8080` does not open the loopback
    expect(decide(net, 'localhost', 5433).allow).toBe(false);
  });

  it('covers the literals it stands for; the literals do not cover the name', () => {
    expect(decide(net, '127.0.0.1', 5432).allow).toBe(true);
    expect(decide(net, '[::1]', 5432).allow).toBe(true);
    const d = decide(net, 'localhost', 6379);
    expect(d.allow).toBe(false);
    if (!d.allow) expect(d.reason).toBe('not in network.allowedDomains');
  });

  it('is dialed at 127.0.0.1 then ::1, never resolved; deniedResolvedAddresses still apply', async () => {
    const opts = { network: network({}), resolver: never, localAddresses: () => ['127.0.0.1', '::1'] };
    expect(await guardDestination({ host: 'localhost' }, 5432, true, opts)).toEqual({ ok: true, addresses: ['127.0.0.1', '::1'] });
    const v4Denied = { ...opts, network: network({ deniedResolvedAddresses: ['127.0.0.0/8'] }) };
    expect(await guardDestination({ host: 'localhost' }, 5432, true, v4Denied)).toEqual({ ok: true, addresses: ['::1'] });
    const bothDenied = { ...opts, network: network({ deniedResolvedAddresses: ['127.0.0.0/8', '::1/128'] }) };
    const r = await guardDestination({ host: 'localhost' }, 5432, true, bothDenied);
    expect(r.ok).toBe(false);
    // Not named (an allow `*`): resolved like any name, and its loopback answer refused.
    const resolved = await guardDestination({ host: 'localhost' }, 80, false, { ...opts, resolver: async () => ['127.0.0.1'] });
    expect(resolved).toEqual({ ok: false, reason: 'resolves only to blocked addresses: 127.0.0.1 is a loopback address (allow 127.0.0.1:80 to reach it)' });
  });
});

describe('a name that resolves to loopback (SPEC §6: ["myapp.test", "127.0.0.1:3000"])', () => {
  const judge = (allow: string[], answer: string[], port = 3000, more: Parameters<typeof network>[0] = {}) =>
    guardDestination({ host: 'myapp.test' }, port, false, { network: network({ allow, ...more }), resolver: async () => answer, localAddresses: () => ['127.0.0.1', '::1'] });

  it('is allowed where the loopback literal it resolves to is allowed with that port', async () => {
    expect(await judge(['myapp.test', '127.0.0.1:3000'], ['127.0.0.1'])).toEqual({ ok: true, addresses: ['127.0.0.1'] });
    expect(await judge(['myapp.test', '127.0.0.1'], ['127.0.0.1'])).toEqual({ ok: true, addresses: ['127.0.0.1'] });
    // `localhost` stands for 127.0.0.1 and ::1; the IPv4-mapped spelling is judged as its IPv4.
    expect(await judge(['myapp.test', 'localhost:3000'], ['::1', '::ffff:127.0.0.1'])).toEqual({ ok: true, addresses: ['::1', '::ffff:127.0.0.1'] });
    // Only the addresses whose literal is allowed: the rest of the answer is refused as before.
    expect(await judge(['myapp.test', '127.0.0.1:3000'], ['127.0.0.2', '127.0.0.1', '169.254.169.254'])).toEqual({ ok: true, addresses: ['127.0.0.1'] });
  });

  it('stays refused without that literal: another port, another loopback address, a wildcard or `*`', async () => {
    const hint = 'resolves only to blocked addresses: 127.0.0.1 is a loopback address (allow 127.0.0.1:3000 to reach it)';
    expect(await judge(['myapp.test'], ['127.0.0.1'])).toEqual({ ok: false, reason: hint });
    expect(await judge(['myapp.test', '127.0.0.1:3001'], ['127.0.0.1'])).toEqual({ ok: false, reason: hint });
    expect((await judge(['myapp.test', '127.0.0.1:3000'], ['127.0.0.5'])).ok).toBe(false);
    expect((await judge(['myapp.test', '*:3000', '*.example'], ['127.0.0.1'])).ok).toBe(false);
    // The name itself must still be allowed: the decision comes first (gate.ts), not asked here.
    expect(decide(network({ allow: ['127.0.0.1:3000'] }), 'myapp.test', 3000).allow).toBe(false);
  });

  it('keeps every deny: deniedDomains on the literal, deniedResolvedAddresses, allowManagedDomainsOnly', async () => {
    expect((await judge(['myapp.test', '127.0.0.1'], ['127.0.0.1'], 3000, { deny: ['127.0.0.1:3000'] })).ok).toBe(false);
    expect((await judge(['myapp.test', '127.0.0.1:3000'], ['127.0.0.1'], 3000, { deniedResolvedAddresses: ['127.0.0.0/8'] })).ok).toBe(false);
    // Under allowManagedDomainsOnly a user's literal does not count, a managed one does.
    expect((await judge(['127.0.0.1:3000'], ['127.0.0.1'], 3000, { managedAllow: ['myapp.test'], managedOnly: true })).ok).toBe(false);
    expect((await judge([], ['127.0.0.1'], 3000, { managedAllow: ['myapp.test', '127.0.0.1:3000'], managedOnly: true })).ok).toBe(true);
  });
});

describe('forwardedPorts', () => {
  it('every loopback entry with a port, on its own address; localhost on both', () => {
    const n = network({ allow: ['localhost:5432', '127.0.0.1:6379', '[::1]:8080', '127.0.0.2:80', 'localhost', '127.0.0.1', 'example.com:443', '*:22', '10.0.0.1:80', '[::ffff:127.0.0.1]:9000'] });
    expect(forwardedPorts(n).map((f) => [f.host, f.port, f.listen])).toEqual([
      ['localhost', 5432, ['127.0.0.1', '::1']],
      ['127.0.0.1', 6379, ['127.0.0.1']],
      ['::1', 8080, ['::1']],
      ['127.0.0.2', 80, ['127.0.0.2']],
      ['127.0.0.1', 9000, ['127.0.0.1']], // the mapped spelling is that IPv4 address
    ]);
  });

  it('one listener per inside address: a literal entry takes its address before localhost does', () => {
    // All three claim 127.0.0.1 and ::1: the literals win, localhost is left with nothing.
    const n = network({ allow: ['localhost:5432', '127.0.0.1:5432', '[::1]:5432'] });
    expect(forwardedPorts(n).map((f) => [f.rule, f.listen])).toEqual([['127.0.0.1:5432', ['127.0.0.1']], ['[::1]:5432', ['::1']]]);
    const m = network({ allow: ['localhost:5432', '127.0.0.1:5432'] });
    expect(forwardedPorts(m).map((f) => [f.rule, f.listen])).toEqual([['localhost:5432', ['::1']], ['127.0.0.1:5432', ['127.0.0.1']]]);
  });

  it('only entries that count: under allowManagedDomainsOnly, managed ones', () => {
    const n = network({ managedAllow: ['localhost:5432'], allow: ['localhost:6379'], managedOnly: true });
    expect(forwardedPorts(n).map((f) => f.rule)).toEqual(['localhost:5432']);
  });

  it('describes itself for srt config and --dry-run', () => {
    expect(describeForward({ host: 'localhost', port: 5432, listen: ['127.0.0.1', '::1'] })).toBe('sandbox 127.0.0.1:5432, [::1]:5432 → host localhost:5432');
    expect(describeExpose({ hostAddress: '::1', hostPort: 8080, sandboxPort: 80 })).toBe('host [::1]:8080 → sandbox 127.0.0.1:80');
  });
});

describe('exposePorts entries', () => {
  // Without an address: the host's localhost, both loopbacks (::1 where the host has it).
  const both = (hostPort: number, sandboxPort: number) => [
    { hostAddress: '127.0.0.1', hostPort, sandboxPort }, { hostAddress: '::1', hostPort, sandboxPort, ifAvailable: true },
  ];
  it.each([
    [3000, both(3000, 3000)],
    ['3000', both(3000, 3000)],
    ['8080:80', both(8080, 80)],
    ['127.0.0.1:8080:80', [{ hostAddress: '127.0.0.1', hostPort: 8080, sandboxPort: 80 }]],
    ['127.0.0.9:8080:80', [{ hostAddress: '127.0.0.9', hostPort: 8080, sandboxPort: 80 }]],
    ['[::1]:8080:80', [{ hostAddress: '::1', hostPort: 8080, sandboxPort: 80 }]],
  ] as const)('%s', (entry, expected) => {
    expect(parseExposeEntry(entry)).toEqual(expected);
  });

  it.each([
    [0, /invalid port/],
    [65536, /invalid port/],
    ['08080', /invalid port/],
    ['a:b:c:d', /invalid entry/],
    ['::1:8080:80', /invalid entry/],
    ['[127.0.0.1]:8080:80', /invalid address/],
    ['0.0.0.0:3000:3000', /only the host's loopback can be exposed/],
    ['192.168.1.5:3000:3000', /only the host's loopback/],
    ['localhost:3000:3000', /only the host's loopback/],
    ['[fe80::1%eth0]:3000:3000', /invalid entry|only the host's loopback/],
    [3128, /port 3128 cannot be exposed: srt's HTTP proxy listens on 127\.0\.0\.1:3128 inside the sandbox/],
    ['9000:1080', /port 1080 cannot be exposed: srt's SOCKS5 proxy/],
  ] as const)('refuses %s', (entry, message) => {
    const r = parseExposeEntry(entry);
    expect(typeof r).toBe('string');
    expect(r).toMatch(message);
  });
});

describe('settings', () => {
  it('exposePorts: a union over scopes, de-duplicated, with sources', () => {
    const p = buildPolicy(ctx, [layer('user', { network: { exposePorts: [3000, '8080:80'] } }), layer('cli', { network: { exposePorts: ['127.0.0.1:3000:3000', 9000] } })]);
    const cli = { scope: 'cli', file: '/cli.json' };
    const user = { scope: 'user', file: '/user.json' };
    expect(p.network.exposePorts).toEqual([
      { hostAddress: '127.0.0.1', hostPort: 3000, sandboxPort: 3000, source: cli },
      { hostAddress: '127.0.0.1', hostPort: 9000, sandboxPort: 9000, source: cli },
      { hostAddress: '::1', hostPort: 9000, sandboxPort: 9000, ifAvailable: true, source: cli },
      { hostAddress: '::1', hostPort: 3000, sandboxPort: 3000, ifAvailable: true, source: user },
      { hostAddress: '127.0.0.1', hostPort: 8080, sandboxPort: 80, source: user },
      { hostAddress: '::1', hostPort: 8080, sandboxPort: 80, ifAvailable: true, source: user },
    ]);
  });

  it('exposePorts: an entry that names [::1] takes the ::1 of one that named no address, in any order; --expose is cli scope', () => {
    for (const list of [[3000, '[::1]:3000:4000'], ['[::1]:3000:4000', 3000]]) {
      const p = buildPolicy(ctx, [layer('user', { network: { exposePorts: list } })]);
      expect(p.network.exposePorts.map((e) => [e.hostAddress, e.hostPort, e.sandboxPort, e.ifAvailable ?? false]).sort()).toEqual([
        ['127.0.0.1', 3000, 3000, false], ['::1', 3000, 4000, false],
      ]);
    }
    const flag = buildPolicy(ctx, [], { expose: ['3000'] });
    expect(flag.network.exposePorts.map((e) => [e.hostAddress, e.source])).toEqual([
      ['127.0.0.1', { scope: 'cli', flag: '--expose' }], ['::1', { scope: 'cli', flag: '--expose' }],
    ]);
    expect(() => buildPolicy(ctx, [], { expose: ['0.0.0.0:80:80'] })).toThrow(/^--expose: "0\.0\.0\.0:80:80": only the host's loopback/);
  });

  it('errors name the file, the key and the fix', () => {
    const err = (settings: unknown) => {
      try {
        buildPolicy(ctx, [layer('user', settings)]);
      } catch (e) {
        if (e instanceof SettingsError) return e.lines.join('\n');
        throw e;
      }
      return 'no error';
    };
    expect(err({ network: { exposePorts: [3000, '3000:4000'] } })).toBe(
      '/user.json: network.exposePorts[1]: host 127.0.0.1:3000 → sandbox 127.0.0.1:4000 conflicts with host 127.0.0.1:3000 → sandbox 127.0.0.1:3000 (/user.json)');
    expect(err({ network: { exposePorts: [true] } })).toMatch(/^\/user\.json: network\.exposePorts\[0\]: /);
    expect(err({ network: { allowedDomains: ['localhost:1080'] } })).toBe(
      '/user.json: network.allowedDomains[0]: "localhost:1080": a host loopback port is forwarded into the sandbox at the same port, and srt\'s SOCKS5 proxy listens on 127.0.0.1:1080 inside the sandbox; this port cannot be forwarded');
    expect(err({ network: { allowedDomains: ['example.com:3128', '*:1080', 'localhost'] } })).toBe('no error'); // not forwarded
    expect(err({ network: { allowedDomains: ['[::1]:4000'], exposePorts: ['5000:4000'] } })).toBe(
      '/user.json: network.exposePorts: host 127.0.0.1:5000 → sandbox 127.0.0.1:4000: sandbox port 4000 is already forwarded from the host by network.allowedDomains "[::1]:4000" (/user.json); use another port');
  });

  it('an invalid entry is an error even in a scope whose exposePorts are ignored', () => {
    expect(() => buildPolicy(ctx, [layer('project', { network: { exposePorts: ['0.0.0.0:80:80'] } })])).toThrow(/only the host's loopback/);
    const p = buildPolicy(ctx, [layer('project', { network: { exposePorts: [3000] } })]);
    expect(p.network.exposePorts).toEqual([]);
    expect(p.ignored.map((i) => i.key)).toEqual(['network.exposePorts']);
  });
});

describe('srt doctor: loopback inject hosts (loopbackInjectProblems)', () => {
  const policyOf = (network: object, injectHosts?: string[]) => buildPolicy(ctx, [layer('user', {
    network: { tlsTerminate: {}, ...network },
    credentials: { envVars: [{ name: 'T', mode: 'mask', ...(injectHosts ? { injectHosts } : {}) }] },
  })]);

  it('a forwarded, terminated port is fine; macOS, a port below 1024 without root, no port, excludeDomains are not', () => {
    const ok = policyOf({ allowedDomains: ['localhost:9443'] }, ['localhost:9443']);
    expect(loopbackInjectProblems(ok, 'linux', false)).toEqual([]);
    expect(loopbackInjectProblems(ok, 'darwin', false)).toEqual([expect.stringMatching(/^T → localhost:9443: on macOS a client that keeps loopback direct \(NO_PROXY\) reaches it without srt/)]);
    const low = policyOf({ allowedDomains: ['127.0.0.1:443'] });
    expect(loopbackInjectProblems(low, 'linux', true)).toEqual([]);
    expect(loopbackInjectProblems(low, 'linux', false)).toEqual([expect.stringMatching(/^T → 127\.0\.0\.1:443: no forwarded port serves it .*ports below 1024 only when srt runs as root/)]);
    expect(loopbackInjectProblems(policyOf({ allowedDomains: ['localhost'] }, ['localhost']), 'linux', false)).toEqual([expect.stringMatching(/^T → localhost: no forwarded port serves it/)]);
    const excluded = policyOf({ allowedDomains: ['localhost:9443'], tlsTerminate: { excludeDomains: ['localhost:9443'] } }, ['localhost:9443']);
    expect(loopbackInjectProblems(excluded, 'linux', false)).toEqual(['T → localhost:9443: in network.tlsTerminate.excludeDomains, so its TLS is never terminated: nothing is injected there']);
    // Not on the loopback, or nothing injected at all (no termination: credentials.masking says so).
    expect(loopbackInjectProblems(policyOf({ allowedDomains: ['api.github.com'] }), 'darwin', false)).toEqual([]);
    expect(loopbackInjectProblems(buildPolicy(ctx, [layer('user', { network: { allowedDomains: ['localhost'] }, credentials: { envVars: [{ name: 'T', mode: 'mask' }] } })]), 'darwin', false)).toEqual([]);
  });
});
