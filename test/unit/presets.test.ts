import { describe, expect, it } from 'vitest';
import { buildPolicy, type SettingsLayer } from '../../src/settings/index.js';
import { PRESETS } from '../../src/settings/presets.js';
import { parseDomainEntry } from '../../src/proxy/domains.js';

const ctx = { cwd: '/work/repo', home: '/home/u', root: '/work/repo' };
const layer = (scope: SettingsLayer['scope'], settings: unknown, approval?: SettingsLayer['approval']): SettingsLayer =>
  ({ scope, file: `/${scope}.json`, base: ctx.cwd, settings, ...(approval ? { approval } : {}) });

describe('toolchain presets', () => {
  it('every preset is valid data: parseable domains, home-relative caches, protected places inside a cache', () => {
    for (const [name, p] of Object.entries(PRESETS)) {
      expect(p.summary, name).not.toBe('');
      expect(p.allowedDomains.length, name).toBeGreaterThan(0);
      for (const d of p.allowedDomains) expect(parseDomainEntry(d, 'allow'), `${name} ${d}`).toMatchObject({ ok: true });
      for (const c of [...p.caches, ...p.protect]) expect(c, name).toMatch(/^~\/[^*?[]+$/);
      for (const x of p.protect) expect(p.caches.some((c) => x.startsWith(`${c}/`)), `${name} ${x}`).toBe(true);
    }
  });

  it('a user preset adds its domains, its caches (created when missing) and its protected places, credited to the preset', () => {
    const p = buildPolicy(ctx, [layer('user', { presets: ['npm'] })]);
    const source = { scope: 'user', file: '/user.json', preset: 'npm' };
    expect(p.network.allowedDomains.map((d) => [d.rule.text, d.source])).toEqual([['registry.npmjs.org', source]]);
    expect(p.filesystem.allowWrite).toEqual([{ path: '/home/u/.npm', glob: false, original: '~/.npm', source, create: true, key: 'filesystem.allowWrite[0]' }]);
    expect(p.filesystem.denyWrite).toEqual([{ path: '/home/u/.npm/_npx', glob: false, original: '~/.npm/_npx', source, key: 'filesystem.denyWrite[0]' }]);
    expect(p.warnings).toEqual([]);
  });

  it('--with is CLI scope; managed presets apply too', () => {
    const p = buildPolicy(ctx, [layer('managed', { presets: ['pip'] })], { with: ['cargo', 'cargo'] });
    expect(p.network.allowedDomains.map((d) => `${d.rule.text} ${d.source.scope} ${d.source.preset} ${d.source.flag ?? d.source.file}`)).toEqual([
      'pypi.org managed pip /managed.json', 'files.pythonhosted.org managed pip /managed.json',
      'index.crates.io cli cargo --with', 'static.crates.io cli cargo --with', 'crates.io cli cargo --with',
    ]);
  });

  it('a repository file never names presets, approved or not', () => {
    for (const approval of ['approved', 'unapproved'] as const) {
      const p = buildPolicy(ctx, [layer('project', { presets: ['npm'] }, approval)]);
      expect(p.network.allowedDomains).toEqual([]);
      expect(p.filesystem.allowWrite).toEqual([]);
      expect(p.ignored).toEqual([expect.objectContaining({ key: 'presets', reason: expect.stringContaining('may not name presets') })]);
    }
  });

  it('allowManagedDomainsOnly holds back a user preset\'s domains but keeps its caches', () => {
    const p = buildPolicy(ctx, [layer('managed', { network: { allowManagedDomainsOnly: true } }), layer('user', { presets: ['npm'] })]);
    expect(p.network.allowedDomains).toEqual([]);
    expect(p.filesystem.allowWrite.map((r) => r.path)).toEqual(['/home/u/.npm']);
    expect(p.ignored.map((i) => `${i.key} ${i.source.preset}`)).toEqual(['network.allowedDomains npm']);
  });

  it('an unknown preset name is a settings error naming the choices', () => {
    expect(() => buildPolicy(ctx, [layer('user', { presets: ['npx'] })])).toThrow(/presets\[0\]: expected "npm", "pnpm"/);
  });
});
