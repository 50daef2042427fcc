// Deny/allow glob expansion on a real tree (src/platform/search.ts expandGlob).
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expandGlob, expandGlobs } from '../../src/platform/search.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'srt-glob-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const mk = (rel: string, content = '') => {
  const p = join(root, rel);
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, content);
};
mk('a/k.pem'); mk('a/b/c/k.pem'); mk('a/b/notes.txt'); mk('x/y.pem'); mk('dir.pem/inner.txt');
mkdirSync(join(root, 'empty.pem'));
symlinkSync(join(root, 'a/b/notes.txt'), join(root, 'a/link.pem'));
symlinkSync(join(root, 'a'), join(root, 'loopdir'));

const real = (g: string) => expandGlob(join(root, g)).matches.map((l) => l.real.slice(root.length + 1)).sort();

describe('expandGlob', () => {
  it('* stays within a segment, ** crosses directories; the shallowest match wins', () => {
    expect(real('a/*.pem')).toEqual(['a/b/notes.txt', 'a/k.pem']); // link.pem lands on notes.txt
    expect(real('**/*.pem')).toEqual(['a/b/c/k.pem', 'a/b/notes.txt', 'a/k.pem', 'dir.pem', 'empty.pem', 'x/y.pem']);
    expect(real('a/**')).toEqual(['a/b', 'a/b/notes.txt', 'a/k.pem']);
  });
  it('follows symlinks in the literal part (as for any literal path), never while walking', () => {
    expect(real('loopdir/*.pem')).toEqual(real('a/*.pem'));
    expect(real('**/*.pem').some((p) => p.startsWith('loopdir'))).toBe(false);
  });
  it('reports directories holding an undecodable name that may match, and only those', () => {
    writeFileSync(Buffer.from(join(root, 'x') + '/bad\xff.pem', 'latin1'), '');
    writeFileSync(Buffer.from(join(root, 'a/b') + '/bad\xff.txt', 'latin1'), '');
    const g = expandGlob(join(root, '**/*.pem'));
    expect(g.undecodable.map((l) => l.real)).toEqual([join(root, 'x')]);
    expect(expandGlob(join(root, 'x/*.txt')).undecodable).toEqual([]);
  });
  it('expands globs below one base in one walk, each as it would alone', () => {
    const globs = ['**/*.pem', 'a/**', 'a/*.pem', '**/b/**', '**/c', 'x/*', '**/nothing', 'a/b', 'missing/**/*'].map((g) => join(root, g));
    const together = expandGlobs(globs);
    for (const g of globs) expect(together.get(g)).toEqual(expandGlob(g));
    expect(together.get(join(root, '**/c'))!.matches.map((l) => l.real)).toEqual([join(root, 'a/b/c')]);
    expect(together.get(join(root, 'a/b'))!.matches).toEqual([]); // a literal path is not expanded
  });
});
