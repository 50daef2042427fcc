// The refusal report's pure parts: which directory an allowWrite entry would name, and the lines.
import { describe, expect, it } from 'vitest';
import { allowTarget, refusalReportLines, type RefusalGroup } from '../../src/refusals.js';

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
