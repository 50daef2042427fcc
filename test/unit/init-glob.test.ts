// The read gate's glob matcher in C (init/glob.c), held against the one glob grammar
// (src/glob.ts): generated globs against generated paths must give the same shallowest match,
// and a rename of a directory it does not hide, let through, must never uncover a path below it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { matchTokens, parseGlob } from '../../src/glob.js';

const here = dirname(fileURLToPath(import.meta.url));
const HELPER_DIR = join(here, '..', '..', 'init');
const SOURCES = [join(here, 'c', 'glob-check.c'), join(HELPER_DIR, 'glob.c')];

/** The driver (test/unit/c/glob-check.c) with the helper's glob.c, compiled once per source. */
function driver(): string {
  const hash = createHash('sha256');
  for (const f of [...SOURCES, join(HELPER_DIR, 'helper.h')]) hash.update(readFileSync(f));
  const bin = join(tmpdir(), `srt-glob-check-${hash.digest('hex').slice(0, 16)}`);
  if (!existsSync(bin)) {
    const tmp = `${bin}.${process.pid}`;
    execFileSync('cc', ['-O2', '-std=gnu11', '-Wall', '-Wextra', '-Werror', '-o', tmp, ...SOURCES]);
    renameSync(tmp, bin);
  }
  return bin;
}

type Query = ['m', string, string | Buffer] | ['x', string, string, string];

function ask(queries: Query[]): string[] {
  const input = Buffer.concat(queries.flatMap((q) => q.map((f) => Buffer.concat([Buffer.from(f), Buffer.from([0])]))));
  return execFileSync(driver(), [], { input, maxBuffer: 1 << 28 }).toString().split('\n').slice(0, queries.length);
}

/** The oracle: the shortest prefix of `path` ending a component (never "/" alone) the glob matches. */
function shallowest(glob: string, path: string): number {
  const tokens = parseGlob(glob);
  for (let i = 1; i <= path.length; i++) {
    if (i < path.length && path[i] !== '/') continue;
    if (matchTokens(tokens, path.slice(0, i))) return Buffer.byteLength(path.slice(0, i));
  }
  return 0;
}

/** A small deterministic generator (mulberry32). */
function rng(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

const GLOB_PARTS = ['a', 'b', '.', 'é', '/', '*', '**', '**/', '?', '[ab]', '[!a]', '[a-c]', '[', ']', 'x.pem', '.env', 'secrets'];
const PATH_PARTS = ['a', 'b', 'c', '.', 'é', '😀', 'ab', 'x.pem', '.env', 'secrets', 'ba'];

function randomGlob(r: (n: number) => number): string {
  let g = '/r/';
  for (let k = 1 + r(6); k > 0; k--) g += GLOB_PARTS[r(GLOB_PARTS.length)];
  return g;
}

const SEGMENTS = ['a', 'b', 'secrets', '*', '**', '?', '[ab]', '*.pem', 'x.pem', '.env', 'a*', '[!a]b', 'é?'];

/** A glob of whole segments (`**` alone in one), as deny entries are written. */
function segmentGlob(r: (n: number) => number): string {
  return '/r/' + Array.from({ length: 1 + r(4) }, () => SEGMENTS[r(SEGMENTS.length)]).join('/');
}

function randomPath(r: (n: number) => number): string {
  const segs = ['r'];
  for (let k = 1 + r(5); k > 0; k--) {
    let s = '';
    for (let j = 1 + r(3); j > 0; j--) s += PATH_PARTS[r(PATH_PARTS.length)];
    segs.push(s);
  }
  return '/' + segs.join('/');
}

describe.skipIf(process.platform !== 'linux')('the read gate\'s glob matcher (init/glob.c)', () => {
  it('finds the same shallowest match as src/glob.ts on generated globs and paths', () => {
    const r = rng(7);
    const queries: Query[] = [];
    const expected: string[] = [];
    for (let i = 0; i < 400; i++) {
      const glob = randomGlob(r);
      let valid = true;
      try { parseGlob(glob); } catch { valid = false; }
      for (let j = 0; j < 25; j++) {
        const path = randomPath(r);
        queries.push(['m', glob, path]);
        expected.push(valid ? String(shallowest(glob, path)) : 'invalid');
      }
    }
    const got = ask(queries);
    const diffs = queries.map((q, i) => [q, expected[i], got[i]] as const).filter(([, e, g]) => e !== g);
    expect(diffs.slice(0, 5)).toEqual([]);
  });

  it('a byte that is not UTF-8 is one character only wildcards match', () => {
    const bad = (s: string) => Buffer.concat([Buffer.from('/r/'), Buffer.from([0xff]), Buffer.from(s)]);
    expect(ask([
      ['m', '/r/*.pem', bad('.pem')], ['m', '/r/?.pem', bad('.pem')], ['m', '/r/[!a].pem', bad('.pem')],
      ['m', '/r/[a-z].pem', bad('.pem')], ['m', '/r/x.pem', bad('.pem')], ['m', '/r/**/.env', bad('/.env')],
    ])).toEqual(['8', '8', '8', '0', '0', '9']);
  });

  it('a rename is refused exactly when it may uncover a match: never for a name-only glob', () => {
    expect(ask([
      ['x', '/r/**/.env', '/r/a', '/r/b'],
      ['x', '/r/**/*.pem', '/r/a/b', '/r/c'],
      ['x', '/r/**/secrets/**', '/r/a/secrets', '/r/a/s2'],
      ['x', '/r/**/secrets/**', '/r/a/s2', '/r/a/secrets'],
      ['x', '/r/**/secrets/**', '/r/a', '/r/b'],
      ['x', '/r/a/**/*.pem', '/r/a/x', '/r/b'],
      ['x', '/r/a/**/*.pem', '/r/b', '/r/a/x'],
      ['x', '/r/*/key', '/r/a', '/r/b/c'],
    ])).toEqual(['0', '0', '1', '0', '0', '1', '0', '1']);
  });

  it('never lets through a rename that uncovers a generated path', () => {
    const r = rng(11);
    const cases: { glob: string; from: string; to: string; rests: string[] }[] = [];
    const short = () => '/r/' + Array.from({ length: 1 + r(3) }, () => PATH_PARTS[r(PATH_PARTS.length)]).join('/');
    for (let i = 0; i < 5000; i++) {
      const glob = r(2) ? segmentGlob(r) : randomGlob(r);
      try { parseGlob(glob); } catch { continue; }
      const rests = Array.from({ length: 20 }, () => short().slice('/r/'.length));
      cases.push({ glob, from: short(), to: short(), rests });
    }
    const got = ask(cases.map((c) => ['x', c.glob, c.from, c.to] as Query));
    let uncovering = 0;
    for (const [i, c] of cases.entries()) {
      // A hidden directory is never moved (the gate refuses it first): only what lies below counts.
      if (shallowest(c.glob, c.from) > 0) continue;
      const uncovered = c.rests.find((rest) => shallowest(c.glob, `${c.from}/${rest}`) > 0 && shallowest(c.glob, `${c.to}/${rest}`) === 0);
      if (uncovered !== undefined) uncovering++;
      if (uncovered !== undefined) expect(got[i], `${c.glob}: ${c.from} -> ${c.to} uncovers ${uncovered}`).toBe('1');
    }
    expect(uncovering).toBeGreaterThan(50); // the generator does reach the cases that matter
  });
});
