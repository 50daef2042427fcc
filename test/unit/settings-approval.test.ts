// SPEC §2.4: a repository's settings file adds allow entries only once its exact content is
// approved; its deny entries always apply; root discovery counts only real repositories; deny
// entries of project files above the root apply, their allows never.
import { createHash } from 'node:crypto';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readApprovals, writeApprovals } from '../../src/settings/approvals.js';
import { buildPolicy, findRoot, isRepositoryRoot, type ApprovalSource } from '../../src/settings/index.js';
import { approveAll, load, report, world, type World } from './settings-fixtures.js';

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const approve = (w: World, ...files: string[]) =>
  writeApprovals(w.home, files.map((path) => ({ path, sha256: sha(path), approvedAt: new Date(0).toISOString() })));
const domains = (p: ReturnType<typeof load>) => p.network.allowedDomains.map((d) => d.rule.text);
const paths = (rules: { path: string }[]) => rules.map((r) => r.path);

const PROJECT = {
  network: { allowedDomains: ['api.example'], deniedDomains: ['evil.example'] },
  filesystem: { allowWrite: ['build'], allowRead: ['~/.config/tool'], denyRead: ['secrets'], denyWrite: ['.env'] },
  credentials: { envVars: [{ name: 'NPM_TOKEN', mode: 'deny' }] },
};

describe('approval of project and local files', () => {
  it.each([['project', 'repo/.srt/settings.json'], ['local', 'repo/.srt/settings.local.json']])(
    'an unapproved %s file adds no allow entry, keeps every deny, and warns once naming srt trust',
    (scope, rel) => {
      const w = world();
      const file = w.write(rel, PROJECT);
      const p = load(w);
      expect(domains(p)).toEqual([]);
      expect(p.filesystem.allowWrite).toEqual([]);
      expect(p.filesystem.allowRead).toEqual([]);
      expect(p.network.deniedDomains.map((d) => d.rule.text)).toEqual(['evil.example']);
      expect(paths(p.filesystem.denyRead)).toEqual([join(w.repo, 'secrets')]);
      expect(paths(p.filesystem.denyWrite)).toEqual([join(w.repo, '.env')]);
      expect(p.credentials.envVars.map((e) => `${e.name} ${e.mode}`)).toEqual(['NPM_TOKEN deny']);
      expect(p.warnings).toEqual([`${file}: its allow entries are not applied until you approve them: srt trust ${file}`]);
      const reason = `not approved: allow entries of a repository's settings file apply once you approve it (srt trust ${file})`;
      expect(p.ignored).toEqual([
        { key: 'network.allowedDomains[0]', value: 'api.example', source: { scope, file }, reason },
        { key: 'filesystem.allowWrite[0]', value: 'build', source: { scope, file }, reason },
        { key: 'filesystem.allowRead[0]', value: '~/.config/tool', source: { scope, file }, reason },
      ]);
    },
  );

  it('a file with no allow entries needs no approval and gets no warning', () => {
    const w = world();
    w.write('repo/.srt/settings.json', { filesystem: { denyRead: ['secrets'] } });
    const p = load(w);
    expect(p.warnings).toEqual([]);
    expect(p.ignored).toEqual([]);
  });

  it('srt trust records the exact content: approved applies, any change is unapproved again', () => {
    const w = world();
    const file = w.write('repo/.srt/settings.json', PROJECT);
    approve(w, file);
    const p = load(w);
    expect(domains(p)).toEqual(['api.example']);
    expect(paths(p.filesystem.allowWrite)).toEqual([join(w.repo, 'build')]);
    expect(p.warnings).toEqual([]);
    // One byte more (the same settings, reformatted) is another content.
    writeFileSync(file, readFileSync(file, 'utf8') + '\n');
    const q = load(w);
    expect(domains(q)).toEqual([]);
    expect(q.warnings).toEqual([expect.stringContaining('its allow entries are not applied until you approve them')]);
  });

  it('an approval is for one path: the same content elsewhere is not approved', () => {
    const w = world();
    const approved = w.write('other/.srt/settings.json', PROJECT);
    w.write('repo/.srt/settings.json', PROJECT);
    approve(w, approved);
    expect(domains(load(w))).toEqual([]);
  });

  it.each([
    ['not JSON', '{ nope'],
    ['wrong version', JSON.stringify({ version: 2, approved: [] })],
    ['a malformed entry', JSON.stringify({ version: 1, approved: [{ path: '/x', sha256: 'short', approvedAt: 'x' }] })],
    ['not an object', '[]'],
  ])('a corrupt trust record (%s) approves nothing, with a warning, never everything', (_what, text) => {
    const w = world();
    const file = w.write('repo/.srt/settings.json', PROJECT);
    approve(w, file);
    writeFileSync(join(w.home, '.srt', 'trusted.json'), text);
    const p = load(w);
    expect(domains(p)).toEqual([]);
    expect(p.warnings[0]).toMatch(/trusted\.json: corrupt .*treating every project settings file as not approved/);
    expect(readApprovals(w.home).approvals).toEqual([]);
  });

  it('the library can decide approvals itself; it is asked with the path and the hash of the bytes read', () => {
    const w = world();
    const file = w.write('repo/.srt/settings.json', PROJECT);
    const asked: Array<{ path: string; sha256: string }> = [];
    const approvals: ApprovalSource = { isApproved: (f) => { asked.push(f); return true; } };
    expect(domains(load(w, { approvals }))).toEqual(['api.example']);
    expect(asked).toEqual([{ path: file, sha256: sha(file) }]);
  });

  it('buildPolicy takes project layers as unapproved unless told otherwise (fail closed)', () => {
    const ctx = { cwd: '/w', home: '/h', root: '/w' };
    const layer = { scope: 'project' as const, file: '/w/.srt/settings.json', base: '/w', settings: { network: { allowedDomains: ['a.example'] } } };
    expect(buildPolicy(ctx, [layer]).network.allowedDomains).toEqual([]);
    expect(buildPolicy(ctx, [{ ...layer, approval: 'approved' }]).network.allowedDomains.map((d) => d.rule.text)).toEqual(['a.example']);
  });
});

describe('even approved, a repository file cannot reach outside the project', () => {
  it('allowWrite outside <root> is ignored with a warning; inside is kept', () => {
    const w = world();
    const file = w.write('repo/.srt/settings.json', { filesystem: { allowWrite: ['~', '/', '../elsewhere', '~/.ssh', 'build', './out/**', '/tmp/*'] } });
    const p = load(w, { approvals: approveAll });
    expect(paths(p.filesystem.allowWrite)).toEqual([join(w.repo, 'build'), join(w.repo, 'out/**')]);
    expect(p.ignored.map((i) => `${i.key} ${i.value}`)).toEqual([
      'filesystem.allowWrite[0] ~', 'filesystem.allowWrite[1] /', 'filesystem.allowWrite[2] ../elsewhere',
      'filesystem.allowWrite[3] ~/.ssh', 'filesystem.allowWrite[6] /tmp/*',
    ]);
    expect(p.warnings.filter((x) => x.startsWith(`${file}: filesystem.allowWrite`))).toHaveLength(5);
    expect(p.warnings[0]).toContain(`may only make paths inside the project root ${w.repo} writable`);
  });

  it('IP-literal allows for loopback, link-local, metadata and own addresses (and localhost) are ignored; public ones kept', () => {
    const ctx = { cwd: '/w', home: '/h', root: '/w', localAddresses: () => ['192.0.2.7', 'fe80::1%eth0'] };
    const entries = ['127.0.0.1:5432', '127.1', '[::1]:8080', '[::ffff:127.0.0.1]', '169.254.169.254', '[fd00:ec2::254]', '100.100.100.200',
      '0.0.0.0', 'localhost:3000', 'LOCALHOST', 'app.localhost', '192.0.2.7:22', '[fe80::1]', '93.184.216.34:443', 'example.com', '[2001:db8::1]'];
    const p = buildPolicy(ctx, [{ scope: 'project', file: '/w/.srt/settings.json', base: '/w', approval: 'approved', settings: { network: { allowedDomains: entries } } }]);
    expect(domains(p)).toEqual(['93.184.216.34:443', 'example.com', '[2001:db8::1]']);
    expect(p.ignored.map((i) => i.value)).toEqual(entries.slice(0, 13));
    expect(p.ignored[0]!.reason).toBe('project settings (which come with the repository) may not open a loopback address (127.0.0.1:5432); only managed, cli and user settings may');
    expect(p.ignored[8]!.reason).toContain("may not open the host's loopback (localhost:3000)");
    expect(p.ignored[11]!.reason).toContain('may not open an address of this host (192.0.2.7:22)');
    // The same entries are fine from the user's own settings.
    const u = buildPolicy(ctx, [{ scope: 'user', file: '/h/.srt/settings.json', base: '/h', settings: { network: { allowedDomains: entries } } }]);
    expect(u.ignored).toEqual([]);
    expect(domains(u)).toContain('127.0.0.1:5432');
  });

  it('mandatoryDenySearchDepth cannot be lowered below the user value (nor the default)', () => {
    const w = world();
    w.write('home/.srt/settings.json', { mandatoryDenySearchDepth: 6 });
    w.write('repo/.srt/settings.json', { mandatoryDenySearchDepth: 4 });
    const p = load(w);
    expect(p.mandatoryDenySearchDepth).toBe(6);
    expect(p.ignored[0]!.reason).toContain('may not search fewer levels for protected paths than 6');
    w.write('repo/.srt/settings.json', { mandatoryDenySearchDepth: 8 });
    expect(load(w).mandatoryDenySearchDepth).toBe(8);
  });
});

describe('root discovery counts only real repositories (SPEC §2.4)', () => {
  it('an empty .git, a .git without HEAD or a .git file pointing nowhere is not a root', () => {
    const w = world();
    mkdirSync(join(w.repo, 'a', '.git'), { recursive: true });
    expect(isRepositoryRoot(join(w.repo, 'a'))).toBe(false);
    expect(findRoot(join(w.repo, 'a'))).toBe(w.repo);
    w.write('repo/b/.git', 'gitdir: ../nowhere\n');
    expect(findRoot(join(w.repo, 'b'))).toBe(w.repo);
    w.write('repo/c/.git/config', '');
    expect(findRoot(join(w.repo, 'c'))).toBe(w.repo);
    w.write('repo/d/.git/HEAD', 'ref: refs/heads/main\n');
    expect(findRoot(join(w.repo, 'd'))).toBe(join(w.repo, 'd'));
    w.write('gitdirs/e/HEAD', 'ref: refs/heads/main\n');
    w.write('repo/e/.git', `gitdir: ${join(w.dir, 'gitdirs/e')}\n`);
    expect(findRoot(join(w.repo, 'e'))).toBe(join(w.repo, 'e'));
  });

  it('a planted sub/.git plus sub/.srt/settings.json sheds no parent deny and adds no allow', () => {
    const w = world();
    w.write('repo/.srt/settings.json', { filesystem: { denyRead: ['~/.ssh'] }, network: { deniedDomains: ['evil.example'] } });
    mkdirSync(join(w.repo, 'sub', '.git'), { recursive: true });
    const planted = w.write('repo/sub/.srt/settings.json', {
      network: { allowedDomains: ['exfil.example'] }, filesystem: { allowRead: ['~/.ssh'], allowWrite: ['~'] }, mandatoryDenySearchDepth: 9,
    });
    const cwd = join(w.repo, 'sub');
    const r = report(w, { cwd, approvals: approveAll });
    expect(r.policy.root).toBe(w.repo);
    expect(paths(r.policy.filesystem.denyRead)).toEqual([join(w.home, '.ssh')]);
    expect(r.policy.network.deniedDomains.map((d) => d.rule.text)).toEqual(['evil.example']);
    expect(domains(r.policy)).toEqual([]);
    expect(r.policy.filesystem.allowRead).toEqual([]);
    expect(r.policy.filesystem.allowWrite).toEqual([]);
    expect(r.policy.mandatoryDenySearchDepth).toBe(3);
    const why = `only the deny entries of a settings file outside the project root (${w.repo}) apply`;
    expect(r.policy.ignored.filter((i) => i.source.file === planted).map((i) => `${i.key}: ${i.reason}`)).toEqual([
      `network.allowedDomains: ${why}`, `filesystem.allowWrite: ${why}`, `filesystem.allowRead: ${why}`, `mandatoryDenySearchDepth: ${why}`,
    ]);
  });

  it('a real nested repository is the root: its allows (approved) apply, every parent project file still adds its denies', () => {
    const w = world();
    w.write('repo/.srt/settings.json', { filesystem: { denyRead: ['~/.aws'] }, network: { allowedDomains: ['parent.example'] } });
    w.write('repo/inner/.git/HEAD', 'ref: refs/heads/main\n');
    w.write('repo/inner/.srt/settings.json', { filesystem: { allowRead: ['~/.aws'] }, network: { allowedDomains: ['inner.example'] } });
    w.write('repo/inner/pkg/.srt/settings.local.json', { filesystem: { denyWrite: ['dist'] } });
    const cwd = join(w.repo, 'inner', 'pkg');
    const p = load(w, { cwd, approvals: approveAll });
    expect(p.root).toBe(join(w.repo, 'inner'));
    expect(domains(p)).toEqual(['inner.example']);
    expect(paths(p.filesystem.denyRead)).toEqual([join(w.home, '.aws')]);
    expect(paths(p.filesystem.denyWrite)).toEqual([join(cwd, 'dist')]);
    // The inner allowRead is kept in the policy; that it cannot re-open the parent's deny is the
    // profile's business (a project allow re-opens only project denies: both are project here).
    expect(paths(p.filesystem.allowRead)).toEqual([join(w.home, '.aws')]);
  });

  it('a home directory that is a repository has only the user file there', () => {
    const w = world();
    w.write('home/.git/HEAD', 'ref: refs/heads/main\n');
    w.write('home/.srt/settings.json', { network: { allowedDomains: ['user.example'] } });
    const r = report(w, { cwd: w.home });
    expect(r.files.map((f) => f.scope)).toEqual(['user']);
    expect(domains(r.policy)).toEqual(['user.example']);
  });
});

describe('allow entries that open more than they seem to', () => {
  it.each([['*.com', 'com'], ['*.io:443', 'io'], ['*.co.uk', 'co.uk'], ['*.com.au', 'com.au']])('%s warns: a public suffix', (entry, suffix) => {
    const p = buildPolicy({ cwd: '/w', home: '/h', root: '/w' }, [{ scope: 'user', file: '/h/.srt/settings.json', base: '/h', settings: { network: { allowedDomains: [entry] } } }]);
    expect(p.warnings).toEqual([`/h/.srt/settings.json: network.allowedDomains: "${entry}" allows every host under the public suffix .${suffix}; name the domain (*.example.${suffix})`]);
  });
  it('*.example.com does not', () => {
    const p = buildPolicy({ cwd: '/w', home: '/h', root: '/w' }, [{ scope: 'user', base: '/h', settings: { network: { allowedDomains: ['*.example.com', '*.github.io'] } } }]);
    expect(p.warnings).toEqual([]);
  });
});

describe("another user's settings file in a parent directory", () => {
  // Only root can make a file owned by a third user; for others the case cannot arise in a test.
  it.runIf(process.geteuid?.() === 0)('is ignored with a warning (a /tmp/.srt planted by someone else)', () => {
    const w = world();
    const planted = w.write('shared/.srt/settings.json', '{ broken');
    w.write('shared/proj/.git/HEAD', 'ref: refs/heads/main\n');
    chownSync(join(w.dir, 'shared/.srt'), 4242, 4242);
    chownSync(planted, 4242, 4242);
    const p = load(w, { cwd: join(w.dir, 'shared/proj') });
    expect(p.warnings).toContain(`${planted}: ignored — it belongs to another user (uid 4242), not to you or root`);
    // A file of this user in the same place applies (its denies).
    chownSync(join(w.dir, 'shared/.srt'), 0, 0);
    writeFileSync(planted, JSON.stringify({ filesystem: { denyRead: ['x'] } }));
    chownSync(planted, 0, 0);
    expect(load(w, { cwd: join(w.dir, 'shared/proj') }).filesystem.denyRead.map((r) => r.path)).toEqual([join(w.dir, 'shared/x')]);
  });
});
