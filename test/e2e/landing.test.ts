// landingResolver (many paths sharing their directories) must answer exactly as resolveLanding
// does one path at a time, on a real tree with every kind of turn a path can take, and hold no
// descriptor once closed.
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { identifyReal, landingResolver, realIdentifier, resolveLanding } from '../../src/platform/landing.js';
import { tempDir } from './helpers.js';

const tmp = tempDir('srt-landing-');
afterAll(() => tmp.cleanup());

describe('landingResolver', () => {
  it('answers as resolveLanding for files, directories, symlinks (relative, absolute, through ..), missing and impossible paths; closes what it held', () => {
    const t = tmp.path;
    mkdirSync(join(t, 'a/b/c'), { recursive: true });
    writeFileSync(join(t, 'a/b/c/f'), 'x');
    writeFileSync(join(t, 'a/file'), 'x');
    symlinkSync('b/c', join(t, 'a/rel'));
    symlinkSync(join(t, 'a/b'), join(t, 'a/abs'));
    symlinkSync('../a/b/c/f', join(t, 'a/up'));
    symlinkSync('nowhere/x', join(t, 'a/dangling'));
    symlinkSync('loop2', join(t, 'a/loop1'));
    symlinkSync('loop1', join(t, 'a/loop2'));
    for (let i = 0; i < 50; i++) writeFileSync(join(t, 'a/b/c', `n${i}`), 'x');
    const paths = [
      '/', t, join(t, 'a'), join(t, 'a/b/c/f'), join(t, 'a/b/c'), join(t, 'a/rel/f'), join(t, 'a/abs/c/f'), join(t, 'a/up'),
      join(t, 'a/dangling'), join(t, 'a/missing/deeper'), join(t, 'a/file/below'), join(t, 'a/loop1'), join(t, 'a/b/../b/c/f'),
      join(t, 'a/rel'), join(t, 'a/abs'), ...Array.from({ length: 50 }, (_, i) => join(t, 'a/b/c', `n${i}`)),
      join(t, 'a/b/c/f'), // again, once its directories are held
    ];
    const fds = () => readdirSync('/proc/self/fd').length;
    const before = fds();
    const r = landingResolver();
    const together = paths.map((p) => r.resolve(p));
    expect(fds()).toBeGreaterThan(before); // it holds the directories on the way
    r.close();
    expect(fds()).toBe(before);
    expect(together).toEqual(paths.map((p) => resolveLanding(p)));
    expect(fds()).toBe(before);
    // realIdentifier (the mount plan's identities) is built on it: the same as identifyReal.
    const ids = realIdentifier();
    expect(paths.map((p) => ids.identify(p))).toEqual(paths.map((p) => identifyReal(p)));
    ids.close();
    expect(fds()).toBe(before);
    // Closed, it still answers (holding nothing).
    expect(r.resolve(join(t, 'a/rel/f'))).toEqual(resolveLanding(join(t, 'a/rel/f')));
    expect(fds()).toBe(before);
  });
});
