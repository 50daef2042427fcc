import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultManagedPaths, findRoot } from '../../src/settings/index.js';
import { approveAll, load, loadError, report, world } from './settings-fixtures.js';

const domains = (p: ReturnType<typeof load>) => p.network.allowedDomains.map((d) => `${d.rule.text} ${d.source.scope}`);

describe('settings discovery', () => {
  it('finds every scope at its location, in scope order', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { network: { allowedDomains: ['managed.example'] } });
    w.write('etc/srt/managed-settings.d/20-b.json', { network: { allowedDomains: ['managed-b.example'] } });
    w.write('etc/srt/managed-settings.d/10-a.yaml', 'network:\n  allowedDomains: [managed-a.example]\n');
    w.write('etc/srt/managed-settings.d/README', 'not settings');
    w.write('home/.srt/settings.json', { network: { allowedDomains: ['user.example'] } });
    w.write('home/.srt-settings.json', { network: { allowedDomains: ['reference.example'] } });
    w.write('repo/.srt/settings.json', { network: { allowedDomains: ['project.example'] } });
    w.write('repo/.srt/settings.local.json', { network: { allowedDomains: ['local.example'] } });
    const cli = w.write('cli.json', { network: { allowedDomains: ['cli.example'] } });
    const r = report(w, { approvals: approveAll, settingsFiles: [cli], flags: { allowDomain: ['flag.example'] } });
    expect(r.files.map((f) => `${f.scope} ${f.path.slice(w.dir.length)}`)).toEqual([
      'managed /etc/srt/managed-settings.json',
      'managed /etc/srt/managed-settings.d/10-a.yaml',
      'managed /etc/srt/managed-settings.d/20-b.json',
      'cli /cli.json',
      'local /repo/.srt/settings.local.json',
      'project /repo/.srt/settings.json',
      'user /home/.srt-settings.json',
      'user /home/.srt/settings.json',
    ]);
    expect(domains(r.policy)).toEqual([
      'managed.example managed',
      'managed-a.example managed',
      'managed-b.example managed',
      'cli.example cli',
      'flag.example cli',
      'local.example local',
      'project.example project',
      'reference.example user',
      'user.example user',
    ]);
    expect(r.policy.network.allowedDomains.find((d) => d.rule.text === 'flag.example')!.source).toEqual({ scope: 'cli', flag: '--allow-domain' });
  });

  it('uses the git work-tree top as root, from a subdirectory, with a .git dir or a .git file', () => {
    const w = world();
    mkdirSync(join(w.repo, 'a', 'b'), { recursive: true });
    expect(findRoot(join(w.repo, 'a', 'b'))).toBe(w.repo);
    w.write('main/.git/worktrees/wt/HEAD', 'ref: refs/heads/wt\n');
    w.write('wt/.git', `gitdir: ${join(w.dir, 'main/.git/worktrees/wt')}\n`);
    mkdirSync(join(w.dir, 'wt', 'sub'));
    expect(findRoot(join(w.dir, 'wt', 'sub'))).toBe(join(w.dir, 'wt'));
    w.write('repo/.srt/settings.json', { network: { allowedDomains: ['project.example'] } });
    const p = load(w, { approvals: approveAll, cwd: join(w.repo, 'a', 'b') });
    expect(p.root).toBe(w.repo);
    expect(p.cwd).toBe(join(w.repo, 'a', 'b'));
    expect(domains(p)).toEqual(['project.example project']);
  });

  it('uses cwd as root outside a git work tree', () => {
    const w = world();
    mkdirSync(join(w.dir, 'plain', '.srt'), { recursive: true });
    w.write('plain/.srt/settings.json', { network: { allowedDomains: ['plain.example'] } });
    const p = load(w, { approvals: approveAll, cwd: join(w.dir, 'plain') });
    expect(p.root).toBe(join(w.dir, 'plain'));
    expect(domains(p)).toEqual(['plain.example project']);
  });

  it('resolves symlinks in cwd', () => {
    const w = world();
    symlinkSync(w.repo, join(w.dir, 'link'));
    expect(load(w, { cwd: join(w.dir, 'link') }).cwd).toBe(w.repo);
  });

  it('reads YAML (.yaml and .yml) and JSON alike', () => {
    const w = world();
    w.write('repo/.srt/settings.yml', 'filesystem:\n  denyRead: ["~/.ssh"]\n');
    w.write('home/.srt/settings.yaml', 'mandatoryDenySearchDepth: 5\n');
    const p = load(w);
    expect(p.filesystem.denyRead.map((r) => r.path)).toEqual([join(w.home, '.ssh')]);
    expect(p.mandatoryDenySearchDepth).toBe(5);
  });

  it('reads the { "sandbox": {...} } wrapper and ignores other top-level keys', () => {
    const w = world();
    w.write('home/.srt/settings.json', { permissions: { allow: ['x'] }, sandbox: { network: { allowedDomains: ['wrapped.example'] } } });
    expect(domains(load(w))).toEqual(['wrapped.example user']);
  });

  it('a later managed drop-in and ~/.srt/settings.json win scalars within their scope', () => {
    const w = world();
    w.write('etc/srt/managed-settings.json', { mandatoryDenySearchDepth: 2 });
    w.write('etc/srt/managed-settings.d/50.json', { mandatoryDenySearchDepth: 4 });
    w.write('home/.srt-settings.json', { allowPty: false });
    w.write('home/.srt/settings.json', { allowPty: true });
    const r = report(w);
    expect(r.policy.mandatoryDenySearchDepth).toBe(4);
    expect(r.sources.mandatoryDenySearchDepth!.file).toBe(join(w.etc, 'managed-settings.d', '50.json'));
    expect(r.policy.allowPty).toBe(true);
    expect(r.sources.allowPty!.file).toBe(join(w.home, '.srt', 'settings.json'));
  });

  it('later --settings files win over earlier ones', () => {
    const w = world();
    const a = w.write('a.json', { mandatoryDenySearchDepth: 2 });
    const b = w.write('b.yaml', 'mandatoryDenySearchDepth: 7\n');
    expect(load(w, { settingsFiles: [a, b] }).mandatoryDenySearchDepth).toBe(7);
    expect(load(w, { settingsFiles: [b, a] }).mandatoryDenySearchDepth).toBe(2);
  });

  it('resolves a relative --settings path against cwd', () => {
    const w = world();
    w.write('repo/conf/x.json', { allowPty: true });
    expect(load(w, { settingsFiles: ['conf/x.json'] }).allowPty).toBe(true);
  });

  it('managed location is fixed per platform and not taken from the environment', () => {
    process.env.SRT_MANAGED_SETTINGS = '/tmp/evil';
    try {
      expect(defaultManagedPaths('linux')).toEqual(['/etc/srt/managed-settings.json', '/etc/srt/managed-settings.d']);
      expect(defaultManagedPaths('darwin')).toEqual([
        '/Library/Application Support/srt/managed-settings.json',
        '/Library/Application Support/srt/managed-settings.d',
      ]);
    } finally {
      delete process.env.SRT_MANAGED_SETTINGS;
    }
  });

  it('a missing file is simply absent; no files gives the defaults', () => {
    const w = world();
    const r = report(w);
    expect(r.files).toEqual([]);
    expect(r.policy.network.strictAllowlist).toBe(true);
    expect(r.policy.warnings).toEqual([]);
  });

  it('an unreadable managed drop-in directory is an error, not skipped', () => {
    const w = world();
    writeFileSync(join(w.etc, 'managed-settings.d'), 'x');
    expect(loadError(w)).toBe(`${join(w.etc, 'managed-settings.d')}: expected a directory of settings files`);
  });
});
