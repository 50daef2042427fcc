import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approveAll, load, report, world } from './settings-fixtures.js';

// Every weakening a repository's settings might try (SPEC §2.4), with the key it is reported under.
const WEAKENINGS: Array<[string, object]> = [
  ['filesystem.disabled', { filesystem: { disabled: true } }],
  ['credentials.envVars[0]', { credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }] } }],
  ['credentials.files[0]', { credentials: { files: [{ path: '~/.netrc', mode: 'mask' }] } }],
  ['credentials.awsPairs', { credentials: { awsPairs: [{ accessKeyIdVar: 'K', secretAccessKeyVar: 'S' }] } }],
  ['credentials.sigv4', { credentials: { sigv4: { presigned: 'passthrough' } } }],
  ['credentials.allowPlaintextInject', { credentials: { allowPlaintextInject: true } }],
  ['network.tlsTerminate', { network: { tlsTerminate: {} } }],
  ['network.strictAllowlist', { network: { strictAllowlist: false } }],
  ['network.allowAllUnixSockets', { network: { allowAllUnixSockets: true } }],
  ['network.allowUnixSockets', { network: { allowUnixSockets: ['/var/run/docker.sock'] } }],
  ['enableWeakerNestedSandbox', { enableWeakerNestedSandbox: true }],
  ['allowNestedUserNamespaces', { allowNestedUserNamespaces: true }],
  ['allowAppleEvents', { allowAppleEvents: true }],
  ['enableWeakerNetworkIsolation', { enableWeakerNetworkIsolation: true }],
  ['network.httpProxyPort', { network: { httpProxyPort: 8080 } }],
  ['network.socksProxyPort', { network: { socksProxyPort: 1080 } }],
  ['network.exposePorts', { network: { exposePorts: [3000] } }],
  ['mandatoryDenySearchDepth', { mandatoryDenySearchDepth: 1 }],
  ['network.allowLocalBinding', { network: { allowLocalBinding: true } }],
  ['allowPty', { allowPty: true }],
];

describe.each([
  ['project', 'repo/.srt/settings.json'],
  ['local', 'repo/.srt/settings.local.json'],
])('%s settings cannot weaken the policy', (scope, rel) => {
  it.each(WEAKENINGS)('%s is ignored with one warning', (key, doc) => {
    const w = world();
    const file = w.write(rel, doc);
    const p = load(w);
    expect(p.ignored).toEqual([{ key, source: { scope, file }, reason: expect.stringContaining(`${scope} settings`) }]);
    const warnings = p.warnings.filter((x) => x.includes('ignored'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ${key.replace(/[[\].]/g, '\\$&')}: ignored — ${scope} settings \\(which come with the repository\\) may not `));
    // Nothing weaker than the defaults got through.
    expect(p.filesystem.disabled).toBe(false);
    expect(p.credentials.envVars).toEqual([]);
    expect(p.credentials.files).toEqual([]);
    expect(p.credentials.awsPairs).toEqual([]);
    expect(p.credentials.sigv4).toEqual({ presigned: 'deny', streaming: 'deny', sigv4a: 'deny', mint: 'deny' });
    expect(p.credentials.allowPlaintextInject).toBe(false);
    expect(p.network.tlsTerminate).toBeUndefined();
    expect(p.network.strictAllowlist).toBe(true);
    expect(p.network.allowAllUnixSockets).toBe(false);
    expect(p.network.allowUnixSockets).toEqual([]);
    expect(p.network.httpProxyPort).toBeUndefined();
    expect(p.network.socksProxyPort).toBeUndefined();
    expect(p.network.exposePorts).toEqual([]);
    expect(p.enableWeakerNestedSandbox || p.allowNestedUserNamespaces || p.allowAppleEvents || p.enableWeakerNetworkIsolation).toBe(false);
    expect(p.mandatoryDenySearchDepth).toBe(3);
    expect(p.network.allowLocalBinding || p.allowPty).toBe(false);
  });

  it('may narrow and add allow entries, and deny credentials', () => {
    const w = world();
    w.write('home/.srt/settings.json', { network: { strictAllowlist: false }, filesystem: { disabled: true } });
    w.write(rel, {
      network: { allowedDomains: ['api.example'], deniedDomains: ['evil.example'], strictAllowlist: true },
      filesystem: { disabled: false, allowWrite: ['build'], denyRead: ['secrets'] },
      credentials: { envVars: [{ name: 'NPM_TOKEN', mode: 'deny' }], allowPlaintextInject: false },
      enableWeakerNestedSandbox: false,
    });
    const p = load(w, { approvals: approveAll });
    expect(p.ignored).toEqual([]);
    expect(p.network.strictAllowlist).toBe(true);
    expect(p.filesystem.disabled).toBe(false);
    expect(p.network.allowedDomains.map((d) => d.rule.text)).toEqual(['api.example']);
    expect(p.credentials.envVars.map((e) => `${e.name} ${e.mode}`)).toEqual(['NPM_TOKEN deny']);
  });

  it('keeps the deny credential entries of a list whose mask entries are dropped', () => {
    const w = world();
    w.write(rel, { credentials: { envVars: [{ name: 'A', mode: 'mask' }, { name: 'B', mode: 'deny' }] } });
    const p = load(w);
    expect(p.credentials.envVars.map((e) => `${e.name} ${e.mode}`)).toEqual(['B deny']);
    expect(p.ignored.map((i) => i.key)).toEqual(['credentials.envVars[0]']);
    expect(p.ignored[0]!.reason).toContain('A, mode "mask"');
  });
});

describe('the same keys are honoured in user, cli and managed settings', () => {
  it.each(['home/.srt/settings.json', 'cli.json', 'etc/srt/managed-settings.json'])('%s', (rel) => {
    const w = world();
    const file = w.write(rel, {
      network: { strictAllowlist: false, tlsTerminate: {}, allowUnixSockets: ['/run/x.sock'], httpProxyPort: 8080 },
      filesystem: { disabled: true },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }], allowPlaintextInject: true },
      allowNestedUserNamespaces: true,
    });
    const p = load(w, rel === 'cli.json' ? { settingsFiles: [file] } : {});
    expect(p.ignored).toEqual([]);
    expect(p.network.strictAllowlist).toBe(false);
    expect(p.network.tlsTerminate).toBeDefined();
    expect(p.network.allowUnixSockets).toEqual(['/run/x.sock']);
    expect(p.network.httpProxyPort).toBe(8080);
    expect(p.filesystem.disabled).toBe(true);
    expect(p.credentials.envVars[0]!.mode).toBe('mask');
    expect(p.allowNestedUserNamespaces).toBe(true);
  });
});

describe('managed-only keys', () => {
  it.each([
    ['home/.srt/settings.json', 'user'],
    ['cli.json', 'cli'],
    ['repo/.srt/settings.json', 'project'],
    ['repo/.srt/settings.local.json', 'local'],
  ])('are ignored with a warning in %s', (rel, scope) => {
    const w = world();
    const file = w.write(rel, { network: { allowManagedDomainsOnly: true }, filesystem: { allowManagedReadPathsOnly: true } });
    const p = load(w, scope === 'cli' ? { settingsFiles: [file] } : {});
    expect(p.network.allowManagedDomainsOnly).toBe(false);
    expect(p.filesystem.allowManagedReadPathsOnly).toBe(false);
    expect(p.ignored).toEqual([
      { key: 'network.allowManagedDomainsOnly', source: { scope, file }, reason: 'only managed settings may set this' },
      { key: 'filesystem.allowManagedReadPathsOnly', source: { scope, file }, reason: 'only managed settings may set this' },
    ]);
    expect(p.warnings).toEqual([
      `${file}: network.allowManagedDomainsOnly: ignored — only managed settings may set this`,
      `${file}: filesystem.allowManagedReadPathsOnly: ignored — only managed settings may set this`,
    ]);
  });

  it('allowManagedDomainsOnly: only managed allowedDomains count; other denies still add', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { network: { allowManagedDomainsOnly: true, allowedDomains: ['corp.example'] } });
    const user = w.write('home/.srt/settings.json', { network: { allowedDomains: ['user.example'], deniedDomains: ['bad.example'] } });
    const project = w.write('repo/.srt/settings.json', { network: { allowedDomains: ['project.example'] } });
    const p = load(w, { approvals: approveAll, flags: { allowDomain: ['flag.example'] } });
    expect(p.network.allowManagedDomainsOnly).toBe(true);
    expect(p.network.allowedDomains.map((d) => d.rule.text)).toEqual(['corp.example']);
    expect(p.network.deniedDomains.map((d) => d.rule.text)).toEqual(['bad.example']);
    expect(p.ignored.map((i) => `${i.key} ${i.source.file ?? i.source.flag}`)).toEqual([
      'network.allowedDomains --allow-domain',
      `network.allowedDomains ${project}`,
      `network.allowedDomains ${user}`,
    ]);
    expect(p.ignored[0]!.reason).toBe('managed settings set allowManagedDomainsOnly, so only managed allowedDomains count');
  });

  it('allowManagedReadPathsOnly: only managed allowRead entries count', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { filesystem: { allowManagedReadPathsOnly: true, allowRead: ['/opt/tools'] } });
    w.write('home/.srt/settings.json', { filesystem: { allowRead: ['~/.ssh'], denyRead: ['~/.aws'] } });
    const p = load(w);
    expect(p.filesystem.allowRead.map((r) => r.path)).toEqual(['/opt/tools']);
    expect(p.filesystem.denyRead.map((r) => r.path)).toEqual([join(w.home, '.aws')]);
    expect(p.ignored.map((i) => i.key)).toEqual(['filesystem.allowRead']);
  });

  it('allowManagedDomainsOnly: false in managed changes nothing', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { network: { allowManagedDomainsOnly: false } });
    w.write('home/.srt/settings.json', { network: { allowedDomains: ['user.example'] } });
    expect(load(w, { approvals: approveAll }).network.allowedDomains.map((d) => d.rule.text)).toEqual(['user.example']);
  });
});

describe('once managed settings configure the filesystem, only managed may disable it', () => {
  it.each([
    ['managed sets filesystem at all', { filesystem: {} }],
    ['managed denies a credential file', { credentials: { files: [{ path: '/etc/shadow', mode: 'deny' }] } }],
  ])('%s', (_what, managed) => {
    const w = world();
    w.write('etc/srt/managed-settings.json', managed);
    const user = w.write('home/.srt/settings.json', { filesystem: { disabled: true } });
    const cli = w.write('cli.json', { filesystem: { disabled: true } });
    const r = report(w, { settingsFiles: [cli] });
    expect(r.policy.filesystem.disabled).toBe(false);
    expect(r.sources['filesystem.disabled']).toEqual({ scope: 'default' });
    expect(r.policy.ignored.map((i) => `${i.key} ${i.source.file}`)).toEqual([`filesystem.disabled ${cli}`, `filesystem.disabled ${user}`]);
    expect(r.policy.warnings).toContain(
      `${user}: filesystem.disabled: ignored — managed settings configure the filesystem, so only they may set filesystem.disabled`,
    );
  });

  it('managed itself may still disable it', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { filesystem: { disabled: true } });
    expect(load(w).filesystem.disabled).toBe(true);
  });

  it('a managed mask entry alone does not take the key away', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { credentials: { files: [{ path: '/x', mode: 'mask' }] } });
    w.write('home/.srt/settings.json', { filesystem: { disabled: true } });
    expect(load(w).filesystem.disabled).toBe(true);
  });
});

describe('merging', () => {
  it('scalars: managed > cli > local > project > user > default, each with its source', () => {
    const w = world();
    const key = 'mandatoryDenySearchDepth';
    const files = {
      user: w.write('home/.srt/settings.json', { [key]: 1, allowPty: true, network: { allowLocalBinding: true, strictAllowlist: false } }),
      project: w.write('repo/.srt/settings.json', { [key]: 2, allowPty: false, network: { allowLocalBinding: true } }),
      local: w.write('repo/.srt/settings.local.json', { [key]: 3, network: { allowLocalBinding: false } }),
      cli: w.write('cli.json', { [key]: 4, network: { strictAllowlist: true } }),
      managed: w.write('etc/srt/managed-settings.json', { [key]: 5 }),
    };
    const r = report(w, { settingsFiles: [files.cli] });
    expect(r.policy.mandatoryDenySearchDepth).toBe(5);
    expect(r.sources[key]).toEqual({ scope: 'managed', file: files.managed });
    expect(r.policy.allowPty).toBe(false);
    expect(r.sources.allowPty).toEqual({ scope: 'project', file: files.project });
    expect(r.policy.network.allowLocalBinding).toBe(false);
    expect(r.sources['network.allowLocalBinding']).toEqual({ scope: 'local', file: files.local });
    expect(r.policy.network.strictAllowlist).toBe(true);
    expect(r.sources['network.strictAllowlist']).toEqual({ scope: 'cli', file: files.cli });
    expect(r.sources.allowAppleEvents).toEqual({ scope: 'default' });
  });

  it('lists: union in scope order, de-duplicated, first source kept', () => {
    const w = world();
    const user = w.write('home/.srt/settings.json', { network: { allowedDomains: ['b.example', 'A.example'] } });
    const project = w.write('repo/.srt/settings.json', { network: { allowedDomains: ['a.example', 'c.example'] } });
    const p = load(w, { approvals: approveAll });
    expect(p.network.allowedDomains.map((d) => `${d.rule.text} ${d.source.file}`)).toEqual([
      `a.example ${project}`,
      `c.example ${project}`,
      `b.example ${user}`,
    ]);
  });

  it('deny entries only add: no scope removes another scope\'s deny', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { network: { deniedDomains: ['evil.example'] }, filesystem: { denyRead: ['/secret'], denyWrite: ['/etc'] } });
    w.write('home/.srt/settings.json', { network: { deniedDomains: [], allowedDomains: ['evil.example'] }, filesystem: { denyRead: [], allowWrite: ['/etc'] } });
    w.write('repo/.srt/settings.json', { credentials: { envVars: [{ name: 'TOKEN', mode: 'deny' }] } });
    const p = load(w);
    expect(p.network.deniedDomains.map((d) => d.rule.text)).toEqual(['evil.example']);
    expect(p.filesystem.denyRead.map((r) => r.path)).toEqual(['/secret']);
    expect(p.filesystem.denyWrite.map((r) => r.path)).toEqual(['/etc']);
    expect(p.credentials.envVars.map((e) => `${e.name} ${e.mode} ${e.source.scope}`)).toEqual(['TOKEN deny project']);
  });

  it('deny beats mask for the same variable or file, whatever the scopes', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', {
      network: { tlsTerminate: {} },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.github.com'] }], files: [{ path: '/h/hosts.yml', mode: 'mask' }] },
    });
    w.write('home/.srt/settings.json', { credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'deny' }] } });
    w.write('repo/.srt/settings.json', { credentials: { files: [{ path: { path: '/h/hosts.yml', literal: true }, mode: 'deny' }] } });
    const p = load(w);
    expect(p.credentials.envVars).toEqual([
      { name: 'GH_TOKEN', mode: 'deny', injectInto: ['headers'], onExtractNoMatch: 'warn', source: { scope: 'user', file: join(w.home, '.srt', 'settings.json') } },
    ]);
    expect(p.credentials.files.map((f) => `${f.path} ${f.mode} ${f.source.scope}`)).toEqual(['/h/hosts.yml deny project']);
  });

  it('of two masks for one variable the higher scope wins', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { network: { tlsTerminate: {} }, credentials: { envVars: [{ name: 'T', mode: 'mask', injectHosts: ['a.example'] }] } });
    w.write('home/.srt/settings.json', { credentials: { envVars: [{ name: 'T', mode: 'mask', injectHosts: ['b.example'] }] } });
    expect(load(w).credentials.envVars.map((e) => e.injectHosts?.map((r) => r.text))).toEqual([['a.example']]);
  });

  it('deniedDomainReasons: keyed by normalised entry, higher scope wins', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { network: { deniedDomains: ['GitHub.com:22'], deniedDomainReasons: { 'github.com:22': 'use https remotes' } } });
    w.write('home/.srt/settings.json', { network: { deniedDomainReasons: { 'GITHUB.COM:22': 'mine' } } });
    const r = report(w);
    expect(r.policy.network.deniedDomainReasons).toEqual({ 'github.com:22': 'use https remotes' });
    expect(r.sources['network.deniedDomainReasons["github.com:22"]']!.scope).toBe('managed');
  });
});

describe('relative path bases (SPEC §2.3)', () => {
  it('project/local → root; cli and ~/.srt-settings.json → cwd; ~/.srt/settings.json → ~/.srt; managed → cwd', () => {
    const w = world();
    const cwd = join(w.repo, 'sub');
    w.write('repo/sub/.keep', '');
    w.write('repo/.srt/settings.json', { filesystem: { allowWrite: ['from-project'] } });
    w.write('repo/.srt/settings.local.json', { filesystem: { allowWrite: ['from-local'] } });
    w.write('home/.srt-settings.json', { filesystem: { allowWrite: ['from-reference'] } });
    w.write('home/.srt/settings.json', { filesystem: { allowWrite: ['from-user'] } });
    w.write('etc/srt/managed-settings.json', { filesystem: { allowWrite: ['from-managed'] } });
    const cli = w.write('elsewhere/cli.json', { filesystem: { allowWrite: ['from-cli'] } });
    const p = load(w, { approvals: approveAll, cwd, settingsFiles: [cli], flags: { allowWrite: ['from-flag'] } });
    expect(Object.fromEntries(p.filesystem.allowWrite.map((r) => [r.original, r.path]))).toEqual({
      'from-managed': join(cwd, 'from-managed'),
      'from-cli': join(cwd, 'from-cli'),
      'from-flag': join(cwd, 'from-flag'),
      'from-local': join(w.repo, 'from-local'),
      'from-project': join(w.repo, 'from-project'),
      'from-reference': join(cwd, 'from-reference'),
      'from-user': join(w.home, '.srt', 'from-user'),
    });
  });
});
