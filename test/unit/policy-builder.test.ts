import { describe, expect, it } from 'vitest';
import { buildPolicy, buildPolicyWithSources, SettingsError, type SettingsLayer } from '../../src/settings/index.js';
import { settingsJsonSchema } from '../../src/settings/schema.js';

const ctx = { cwd: '/work/repo/sub', home: '/home/u', root: '/work/repo' };
const user = (settings: unknown, file = '/home/u/.srt/settings.json'): SettingsLayer => ({ scope: 'user', file, base: '/home/u/.srt', settings });
const managed = (settings: unknown): SettingsLayer => ({ scope: 'managed', file: '/etc/srt/managed-settings.json', base: ctx.cwd, settings });
const build = (...layers: SettingsLayer[]) => buildPolicy(ctx, layers);

describe('buildPolicy defaults', () => {
  it('with no settings at all', () => {
    const p = buildPolicy(ctx, []);
    expect(p).toEqual({
      cwd: ctx.cwd,
      home: ctx.home,
      root: ctx.root,
      network: {
        allowedDomains: [],
        deniedDomains: [],
        deniedDomainReasons: {},
        strictAllowlist: true,
        allowManagedDomainsOnly: false,
        deniedResolvedAddresses: [],
        allowUnixSockets: [],
        allowAllUnixSockets: false,
        allowLocalBinding: false,
        exposePorts: [],
      },
      filesystem: { allowWrite: [], denyWrite: [], denyRead: [], allowRead: [], disabled: false, allowManagedReadPathsOnly: false },
      credentials: { envVars: [], files: [], awsPairs: [], sigv4: { presigned: 'deny', streaming: 'deny', sigv4a: 'deny', mint: 'deny' }, allowPlaintextInject: false },
      mandatoryDenySearchDepth: 3,
      enableWeakerNestedSandbox: false,
      allowNestedUserNamespaces: false,
      allowPty: false,
      allowAppleEvents: false,
      enableWeakerNetworkIsolation: false,
      warnings: [],
      ignored: [],
    });
  });

  it('tlsTerminate {} gets maxTunnels 256 and handshakeTimeoutMs 10000', () => {
    const p = build(user({ network: { tlsTerminate: {} } }));
    expect(p.network.tlsTerminate).toEqual({
      excludeDomains: [],
      extraCaCertPaths: [],
      maxTunnels: 256,
      handshakeTimeoutMs: 10000,
      source: { scope: 'user', file: '/home/u/.srt/settings.json' },
    });
  });

  it('tlsTerminate paths are absolute and excludeDomains parsed', () => {
    const p = build(
      user({
        network: {
          tlsTerminate: { caCertPath: 'ca.pem', caKeyPath: '~/ca.key', excludeDomains: ['MTLS.example.net.'], extraCaCertPaths: ['/etc/ssl/corp.pem'], maxTunnels: 8 },
        },
      }),
    );
    const t = p.network.tlsTerminate!;
    expect(t.caCertPath).toBe('/home/u/.srt/ca.pem');
    expect(t.caKeyPath).toBe('/home/u/ca.key');
    expect(t.excludeDomains.map((r) => r.text)).toEqual(['mtls.example.net']);
    expect(t.extraCaCertPaths).toEqual(['/etc/ssl/corp.pem']);
    expect(t.maxTunnels).toBe(8);
  });

  it('a user CA key joins the credential deny set; CA files and extra CAs are write-protected', () => {
    const src = { scope: 'user', file: '/home/u/.srt/settings.json' };
    const p = build(
      user({
        network: { tlsTerminate: { caCertPath: 'ca.pem', caKeyPath: '~/ca.key', extraCaCertPaths: ['/etc/ssl/corp.pem'] } },
        credentials: { files: [{ path: '~/ca.key', mode: 'mask' }] },
      }),
    );
    expect(p.credentials.files.filter((f) => f.path === '/home/u/ca.key')).toEqual([
      { path: '/home/u/ca.key', glob: false, mode: 'deny', injectInto: ['headers'], onExtractNoMatch: 'warn', maskDuplicates: false, source: src },
    ]);
    expect(p.filesystem.denyWrite.map((r) => r.path)).toEqual(['/home/u/.srt/ca.pem', '/home/u/ca.key', '/etc/ssl/corp.pem']);
    // An ephemeral CA has no key file: nothing to deny.
    expect(build(user({ network: { tlsTerminate: {} } })).credentials.files).toEqual([]);
  });

  it('credential entries get injectInto ["headers"], onExtractNoMatch "warn" and maskDuplicates false by default; injectHosts are canonical', () => {
    const p = build(
      user({
        network: { tlsTerminate: {} },
        credentials: {
          envVars: [
            { name: 'JWT', mode: 'mask', decode: 'jwt', maskClaims: ['sub'], injectHosts: ['API.example.COM.', 'bücher.de', '[0:0::1]', '*.Example.org:8443'] },
            { name: 'K', mode: 'mask', injectInto: ['query', 'body', 'query'], source: { command: ['pass', 'k'] } },
          ],
          files: [{ path: '~/.config/gh/hosts.yml', mode: 'mask', extract: 'oauth_token:\\s*(\\S+)', onExtractNoMatch: 'error' }],
        },
      }),
    );
    const src = { scope: 'user', file: '/home/u/.srt/settings.json' };
    const [jwt, k] = p.credentials.envVars;
    expect(jwt).toMatchObject({ name: 'JWT', mode: 'mask', decode: 'jwt', maskClaims: ['sub'], injectInto: ['headers'], onExtractNoMatch: 'warn', source: src });
    expect(jwt!.injectHosts!.map((r) => r.text)).toEqual(['api.example.com', 'xn--bcher-kva.de', '[::1]', '*.example.org:8443']);
    expect(k).toMatchObject({ name: 'K', injectInto: ['query', 'body'], sourceCommand: ['pass', 'k'] });
    expect(k!.injectHosts).toBeUndefined();
    expect(p.credentials.files).toEqual([
      {
        path: '/home/u/.config/gh/hosts.yml',
        glob: false,
        mode: 'mask',
        extract: 'oauth_token:\\s*(\\S+)',
        injectInto: ['headers'],
        onExtractNoMatch: 'error',
        maskDuplicates: false,
        source: src,
      },
    ]);
    expect(p.warnings).toEqual([]);
  });

  it('an injectHosts entry that is not a host is a settings error naming the entry', () => {
    expect(() => build(user({ credentials: { envVars: [{ name: 'T', mode: 'mask', injectHosts: ['https://api.example.com/'] }] } })))
      .toThrow(/credentials\.envVars\[0\]\.injectHosts\[0\]: invalid domain entry "https:\/\/api\.example\.com\/".*write "api\.example\.com"/);
    expect(() => build(user({ credentials: { files: [{ path: '/x', mode: 'mask', injectHosts: ['[fe80::1%eth0]'] }] } })))
      .toThrow(/credentials\.files\[0\]\.injectHosts\[0\]/);
    expect(() => build(user({ credentials: { envVars: [{ name: 'T', mode: 'deny', source: { command: ['x'] } }] } })))
      .toThrow(/source: requires mode "mask"/);
  });
});

describe('paths', () => {
  it('expands ~, resolves relative paths against the base and detects globs', () => {
    const p = build(
      user({
        filesystem: {
          denyRead: ['~/', '~', '~/.ssh', 'rel/dir/', '/abs/../abs2', '**/*.pem', '/data/file?.txt', '/x/[abc]', '/y/[', { path: '/lit/*', literal: true }],
        },
      }),
    );
    expect(p.filesystem.denyRead.map((r) => [r.original, r.path, r.glob])).toEqual([
      ['~/', '/home/u', false],
      ['~/.ssh', '/home/u/.ssh', false],
      ['rel/dir/', '/home/u/.srt/rel/dir', false],
      ['/abs/../abs2', '/abs2', false],
      ['**/*.pem', '/home/u/.srt/**/*.pem', true],
      ['/data/file?.txt', '/data/file?.txt', true],
      ['/x/[abc]', '/x/[abc]', true],
      ['/y/[', '/y/[', false],
      ['/lit/*', '/lit/*', false],
    ]);
  });

  it('keeps a trailing /** on write entries for the sandbox to interpret', () => {
    const p = build(user({ filesystem: { allowWrite: ['/tmp/cache/**'] } }));
    expect(p.filesystem.allowWrite[0]).toMatchObject({ path: '/tmp/cache/**', glob: true });
  });

  it('flags resolve against cwd and carry the flag as source', () => {
    const p = buildPolicy(ctx, [], { allowWrite: ['out'], denyRead: ['~/.aws'], allowDomain: ['x.example'] });
    expect(p.filesystem.allowWrite).toEqual([{ path: '/work/repo/sub/out', glob: false, original: 'out', source: { scope: 'cli', flag: '--allow-write' }, key: 'filesystem.allowWrite[0]' }]);
    expect(p.filesystem.denyRead[0]!.path).toBe('/home/u/.aws');
    expect(p.network.allowedDomains[0]!.source).toEqual({ scope: 'cli', flag: '--allow-domain' });
  });
});

describe('network', () => {
  it('parses domain entries with parseDomainEntry, normalised and de-duplicated', () => {
    const p = build(user({ network: { allowedDomains: ['GitHub.com', 'github.com.', '*.npmjs.org', 'api.example.com:443', '[::1]:8080', '127.0.0.1:3000'] } }));
    expect(p.network.allowedDomains.map((d) => d.rule.text)).toEqual(['github.com', '*.npmjs.org', 'api.example.com:443', '[::1]:8080', '127.0.0.1:3000']);
    expect(p.network.allowedDomains[0]!.rule.raw).toBe('GitHub.com');
  });

  it('turns parse warnings into policy warnings naming file and key', () => {
    const p = build(user({ network: { allowedDomains: ['*'], deniedDomains: ['2001:db8::1:443'] } }));
    expect(p.warnings).toEqual([
      '/home/u/.srt/settings.json: network.allowedDomains[0]: allowedDomains entry "*" allows every destination',
      '/home/u/.srt/settings.json: network.deniedDomains[0]: deniedDomains entry "2001:db8::1:443" is ambiguous without brackets; denying [2001:db8::1:443] and [2001:db8::1]:443',
    ]);
    expect(p.network.deniedDomains.map((d) => d.rule.text)).toEqual(['[2001:db8::1:443]', '[2001:db8::1]:443']);
  });

  it('validates and normalises deniedResolvedAddresses', () => {
    const p = build(user({ network: { deniedResolvedAddresses: ['10.0.0.0/8', '192.168.1.1', 'FD00::/8', '10.0.0.0/8'] } }));
    expect(p.network.deniedResolvedAddresses).toEqual(['10.0.0.0/8', '192.168.1.1/32', 'fd00::/8']);
    expect(() => build(user({ network: { deniedResolvedAddresses: ['fd00::/129'] } }))).toThrow(SettingsError);
    expect(() => build(user({ network: { deniedResolvedAddresses: ['10.0.0.0/08'] } }))).toThrow(SettingsError);
  });

  it('warns about a reason for a domain that is not denied', () => {
    const p = build(user({ network: { deniedDomainReasons: { 'x.example': 'because' } } }));
    expect(p.warnings).toEqual(['network.deniedDomainReasons: "x.example" names no deniedDomains entry, so it is never shown']);
  });
});

describe('reference-tool compatibility', () => {
  it('accepts an @anthropic-ai/sandbox-runtime settings file, warning once per unsupported key', () => {
    const file = '/home/u/.srt-settings.json';
    const p = build(
      user(
        {
          network: {
            allowedDomains: ['github.com'],
            deniedDomains: [],
            allowLocalBinding: true,
            mitmProxy: { socketPath: '/tmp/m.sock', domains: ['x.example'] },
            parentProxy: { http: 'http://proxy:3128' },
            allowMachLookup: ['com.1password.*'],
          },
          filesystem: { denyRead: ['~/.ssh'], allowWrite: ['.'], denyWrite: [], allowGitConfig: true },
          ignoreViolations: { '*': ['/tmp'] },
          ripgrep: { command: 'rg' },
          mandatoryDenySearchDepth: 4,
          enableWeakerNestedSandbox: false,
          allowPty: true,
          seccomp: { applyPath: '/x' },
          bwrapPath: '/usr/bin/bwrap',
          socatPath: '/usr/bin/socat',
          git: { safeDirectories: [] },
        },
        file,
      ),
    );
    expect(p.network.allowedDomains.map((d) => d.rule.text)).toEqual(['github.com']);
    expect(p.allowPty).toBe(true);
    expect(p.mandatoryDenySearchDepth).toBe(4);
    expect(p.ignored.map((i) => i.key).sort()).toEqual(
      [
        'bwrapPath',
        'filesystem.allowGitConfig',
        'git',
        'ignoreViolations',
        'network.allowMachLookup',
        'network.mitmProxy',
        'network.parentProxy',
        'ripgrep',
        'seccomp',
        'socatPath',
      ].sort(),
    );
    expect(p.ignored.find((i) => i.key === 'ripgrep')?.reason).toBe('a reference-tool key srt does not implement (srt runs its own tools (rg) only from the system directories, never from a configured path)');
    // One line for the file instead of a warning per key on every run.
    expect(p.warnings).toEqual([]);
    expect(p.notices).toEqual([`${file}: 10 reference-tool keys handled differently (srt config lists them)`]);
  });

  it('accepts $schema for editor support without comment', () => {
    expect(build(user({ $schema: 'https://example/schema.json' })).warnings).toEqual([]);
  });
});

describe('sources', () => {
  it('records where every scalar came from', () => {
    const { sources } = buildPolicyWithSources(ctx, [managed({ allowPty: true }), user({ mandatoryDenySearchDepth: 2 })]);
    expect(sources.allowPty).toEqual({ scope: 'managed', file: '/etc/srt/managed-settings.json' });
    expect(sources.mandatoryDenySearchDepth).toEqual({ scope: 'user', file: '/home/u/.srt/settings.json' });
    expect(sources['network.strictAllowlist']).toEqual({ scope: 'default' });
  });

  it('does not mutate the caller\'s settings objects', () => {
    const settings = { network: { strictAllowlist: false } };
    buildPolicy(ctx, [{ scope: 'project', file: '/work/repo/.srt/settings.json', base: ctx.root, settings }]);
    expect(settings).toEqual({ network: { strictAllowlist: false } });
  });
});

describe('srt schema', () => {
  it('is generated from the zod schema, strict, with every top-level key', () => {
    const doc = settingsJsonSchema() as { $defs: { settings: object } };
    const schema = doc.$defs.settings as { type: string; additionalProperties: boolean; properties: Record<string, { properties?: object }> };
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['network', 'filesystem', 'credentials', 'mandatoryDenySearchDepth', 'allowPty']));
    expect(Object.keys(schema.properties.network!.properties!)).toEqual(expect.arrayContaining(['allowedDomains', 'tlsTerminate', 'deniedResolvedAddresses']));
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });
});

describe('reference-tool files', () => {
  it('a reference file that sets allowWrite makes its list the whole one; srt files and reference files without it do not', () => {
    const ref = (settings: unknown): SettingsLayer => ({ ...user(settings, '/home/u/.srt-settings.json'), reference: true });
    expect(build(ref({ filesystem: { allowWrite: [] } })).filesystem.wholeWriteList).toEqual({ scope: 'user', file: '/home/u/.srt-settings.json' });
    expect(build(ref({ filesystem: { denyRead: ['~/.ssh'] } })).filesystem.wholeWriteList).toBeUndefined();
    expect(build(user({ filesystem: { allowWrite: [] } })).filesystem.wholeWriteList).toBeUndefined();
  });
});
