// The refusal report's pure parts: which directory an allowWrite entry would name, the lines, and
// what would forward a refused loopback port.
import { describe, expect, it } from 'vitest';
import { classifyConnects, connectReportLines } from '../../src/loopback-refusals.js';
import { allowTarget, refusalReportLines, type RefusalGroup } from '../../src/refusals.js';
import { allowEntryFor } from '../../src/settings/advice.js';
import { buildPolicy } from '../../src/settings/policy-builder.js';

const home = '/home/ann';

describe('allowTarget', () => {
  it('below the home directory: the first component, or the tool\'s own below a shared parent', () => {
    expect(allowTarget('/home/ann/.npm/_cacache/index-v5/ab/cd', home)).toBe('/home/ann/.npm');
    expect(allowTarget('/home/ann/.npm', home)).toBe('/home/ann/.npm');
    expect(allowTarget('/home/ann/.cache/pip/http/x', home)).toBe('/home/ann/.cache/pip');
    expect(allowTarget('/home/ann/.local/share/pnpm/store/v3/x', home)).toBe('/home/ann/.local/share/pnpm');
    expect(allowTarget('/home/ann/.local/state/pnpm', home)).toBe('/home/ann/.local/state/pnpm');
    // What the command tried to make was the shared parent itself.
    expect(allowTarget('/home/ann/.cache', home)).toBe('/home/ann/.cache');
    expect(allowTarget('/home/ann/.node_repl_history', home)).toBe('/home/ann/.node_repl_history');
  });

  it('below a shared temporary directory: its first component, or the directory for a file directly in it', () => {
    expect(allowTarget('/tmp/build-cache/a/b', home)).toBe('/tmp/build-cache');
    expect(allowTarget('/tmp/lockfile', home)).toBe('/tmp');
    expect(allowTarget('/var/tmp/x/y', home)).toBe('/var/tmp/x');
  });

  it('inside the current directory: the current directory, unless it holds the home directory', () => {
    expect(allowTarget('/home/ann/code/app/dist/x.js', home, '/home/ann/code/app')).toBe('/home/ann/code/app');
    expect(allowTarget('/tmp/t/project/a/b', home, '/tmp/t/project')).toBe('/tmp/t/project');
    expect(allowTarget('/home/ann/code/app', home, '/home/ann/code/app')).toBe('/home/ann/code');
    // A current directory that holds the home directory is no unit to offer: the tool's own is.
    expect(allowTarget('/home/ann/.npm/_cacache/x', home, '/home')).toBe('/home/ann/.npm');
    expect(allowTarget('/home/ann/.npm/_cacache/x', home, '/home/ann')).toBe('/home/ann/.npm');
  });

  it('for a write outside the home directory, no directory that holds it: the next one down on the way', () => {
    expect(allowTarget('/tmp/t/project/a', '/tmp/t/home')).toBe('/tmp/t/project');
    expect(allowTarget('/tmp/t/u/project/a', '/tmp/t/u/home')).toBe('/tmp/t/u/project');
    // A file directly in it: only the directory itself would allow it (and that is never offered).
    expect(allowTarget('/tmp/t/lockfile', '/tmp/t/home')).toBe('/tmp/t');
  });

  it('elsewhere: the nearest directory that exists', () => {
    expect(allowTarget('/usr/no-such-dir/a/b', home)).toBe('/usr');
    expect(allowTarget('/etc/srt-unit-test-file', home)).toBe('/etc');
  });
});

const group = (g: Partial<RefusalGroup> & Pick<RefusalGroup, 'kind' | 'under'>): RefusalGroup => ({ reads: 0, writes: 1, paths: [`${g.under}/x`], ...g });
const describeSource = () => 'cli --allow-write';

describe('refusalReportLines', () => {
  it('says what would allow each group, most refusals first, one path by its name', () => {
    const lines = refusalReportLines([
      group({ kind: 'read-only', under: '/home/ann/.toolx', writes: 2, paths: ['/home/ann/.toolx/a', '/home/ann/.toolx/b'], advice: { entry: '/home/ann/.toolx' } }),
      group({ kind: 'read-only', under: '/home/ann/.npm', writes: 14, advice: { entry: '/home/ann/.npm', preset: 'npm' } }),
      group({ kind: 'read-only', under: '/home/ann/.toolm', paths: ['/home/ann/.toolm'], advice: { entry: '/home/ann/.toolm', make: 'dir' } }),
      group({ kind: 'read-only', under: '/home/ann/.ssh', noAdvice: '~/.ssh is protected' }),
      group({ kind: 'denyWrite', under: '/p/dist', writes: 0, reads: 0, paths: ['/p/dist/a'], rule: { entry: 'dist', source: { scope: 'project', file: '/p/.srt/settings.json' }, line: 3 } }),
      group({ kind: 'denyRead', under: '/p/.env', writes: 0, reads: 1, paths: ['/p/.env'], rule: { entry: '.env', source: { scope: 'cli', flag: '--deny-read' } } }),
    ], { home, root: '/p' }, describeSource);
    expect(lines).toEqual([
      'refused 14 writes under ~/.npm (read-only): to allow, run with --with npm or add "npm" to presets in ~/.srt/settings.json',
      'refused 2 writes under ~/.toolx (read-only): to allow, add "~/.toolx" to filesystem.allowWrite in ~/.srt/settings.json',
      'refused writing ~/.toolm (read-only): to allow, mkdir -p ~/.toolm and add "~/.toolm" to filesystem.allowWrite in ~/.srt/settings.json',
      'refused 1 write under ~/.ssh (read-only): nothing srt offers allows it (~/.ssh is protected)',
      'refused reading /p/.env (denyRead ".env" in cli --allow-write)',
      'refused 0 writes under /p/dist (denyWrite "dist" in /p/.srt/settings.json:3)',
    ]);
  });

  it('leaves out what the caller could not write outside srt either, and cuts the list at max', () => {
    const many = Array.from({ length: 4 }, (_, i) => group({ kind: 'read-only', under: `/home/ann/.t${i}`, advice: { entry: `/home/ann/.t${i}` } }));
    const lines = refusalReportLines([...many, group({ kind: 'read-only', under: '/usr/lib', noAdvice: 'not writable outside srt either' })], { home, root: '/p' }, describeSource, 2);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe('… and 2 more places with refused reads or writes (--log FILE lists each)');
  });
});

describe('refused loopback connections', () => {
  const ctx = { cwd: '/work/p', home, root: '/work/p', localAddresses: () => [] };
  const user = (settings: unknown, scope: 'user' | 'project' = 'user') => ({
    scope, file: scope === 'user' ? `${home}/.srt/settings.json` : '/work/p/.srt/settings.json', base: scope === 'user' ? `${home}/.srt` : '/work/p', settings,
  });
  const add = (e: string) => `to allow, run with --allow-domain ${e}, or add "${e}" to network.allowedDomains in ~/.srt/settings.json`;

  it('127.0.0.1 and ::1 are one localhost entry; another loopback address its own literal; counts add up', () => {
    const policy = buildPolicy(ctx, [user({})]);
    const { groups, records } = classifyConnects(policy, [
      { address: '127.0.0.1', port: 18080, count: 2 }, { address: '::1', port: 18080, count: 1 }, { address: '127.0.0.2', port: 5432, count: 5 },
    ], false);
    expect(groups).toEqual([
      { target: '127.0.0.2:5432', count: 5, allow: '127.0.0.2:5432', hint: add('127.0.0.2:5432') },
      { target: 'localhost:18080', count: 3, allow: 'localhost:18080', hint: add('localhost:18080') },
    ]);
    expect(records.map((r) => [r.target, r.count, r.allow])).toEqual([
      ['127.0.0.1:18080', 2, 'localhost:18080'], ['[::1]:18080', 1, 'localhost:18080'], ['127.0.0.2:5432', 5, '127.0.0.2:5432'],
    ]);
    expect(connectReportLines(groups, 0)).toEqual([
      `no forwarded port 127.0.0.2:5432 (5 connections refused): ${add('127.0.0.2:5432')}`,
      `no forwarded port 18080 (3 connections refused): ${add('localhost:18080')}`,
    ]);
  });

  it('a port the run exposes is served by the command itself (not up yet): never reported as a missing forward', () => {
    const policy = buildPolicy(ctx, [user({ network: { exposePorts: ['18080'] } })]);
    const { groups, records } = classifyConnects(policy, [
      { address: '127.0.0.1', port: 18080, count: 2 }, { address: '::1', port: 18080, count: 1 }, { address: '127.0.0.1', port: 18081, count: 1 },
    ], false);
    expect(groups.map((g) => g.target)).toEqual(['localhost:18081']);
    expect(records.map((r) => r.target)).toEqual(['127.0.0.1:18081']);
  });

  it('a port below 1024 keeps its port in the entry, and is offered only where srt runs as root', () => {
    const policy = buildPolicy(ctx, [user({})]);
    const refused = [{ address: '127.0.0.1', port: 80, count: 1 }];
    expect(classifyConnects(policy, refused, true).groups[0]).toMatchObject({ allow: 'localhost:80', hint: add('localhost:80') });
    expect(classifyConnects(policy, refused, false).groups[0]).toEqual({ target: 'localhost:80', count: 1, hint: 'srt forwards ports below 1024 only when it runs as root' });
  });

  it('a deny entry is named, never suggested away; an unapproved project entry gets srt trust; an entry without the port is not enough', () => {
    const denied = buildPolicy(ctx, [user({ network: { deniedDomains: ['localhost'] } })]);
    const g = classifyConnects(denied, [{ address: '127.0.0.1', port: 18080, count: 1 }], true).groups[0]!;
    expect(g.allow).toBeUndefined();
    expect(g.hint).toBe(`network.deniedDomains "localhost" in ${home}/.srt/settings.json refuses it`);

    const unapproved = buildPolicy(ctx, [user({}), user({ network: { allowedDomains: ['localhost:18080'] } }, 'project')]);
    const u = classifyConnects(unapproved, [{ address: '127.0.0.1', port: 18080, count: 1 }], true).groups[0]!;
    expect(u.allow).toBeUndefined();
    expect(u.hint).toMatch(/^to allow, it is listed in \/work\/p\/\.srt\/settings\.json, which you have not approved: srt trust /);

    const portless = buildPolicy(ctx, [user({ network: { allowedDomains: ['localhost'] } })]);
    expect(classifyConnects(portless, [{ address: '::1', port: 18080, count: 1 }], true).groups[0]).toMatchObject({
      allow: 'localhost:18080', hint: `${add('localhost:18080')} (localhost does not forward a port)`,
    });
  });

  it('pairs past the supervisor\'s list are counted in one line', () => {
    expect(connectReportLines([], 7)).toEqual(['… and 7 more connections refused to loopback ports nothing listened on']);
  });
});

describe('allowEntryFor', () => {
  it('drops the default web ports, except for a loopback destination (only an entry with a port is forwarded)', () => {
    expect(allowEntryFor('example.com', 443)).toBe('example.com');
    expect(allowEntryFor('example.com', 8443)).toBe('example.com:8443');
    expect(allowEntryFor('localhost', 80)).toBe('localhost:80');
    expect(allowEntryFor('127.0.0.1', 443)).toBe('127.0.0.1:443');
    expect(allowEntryFor('::1', 80)).toBe('[::1]:80');
    expect(allowEntryFor('2001:db8::1', 443)).toBe('[2001:db8::1]');
  });
});
