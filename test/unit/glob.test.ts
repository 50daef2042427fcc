// The one glob tokenizer and its two outputs: the JavaScript RegExp (Linux expansion, the access
// model) and the POSIX ERE Seatbelt matches paths with. The ERE is checked with the C library's
// regcomp/regexec (test/unit/ere/ere-match.c), a real POSIX engine.
import { describe, expect, it } from 'vitest';
import { globBase, globMatcher, globToEre, globToRegExp, isGlob, parseGlob, tokensToEre } from '../../src/glob.js';
import { checkEre, ereMatch, ereMatchAll } from './sbpl-checker.js';

describe('glob grammar', () => {
  it('tokens, literal brackets and the single isGlob', () => {
    expect(parseGlob('/a/**/b*?[!x-z]')).toEqual([
      { kind: 'text', text: '/a/' }, { kind: 'segments' }, { kind: 'text', text: 'b' }, { kind: 'star' }, { kind: 'char' },
      { kind: 'class', negated: true, ranges: [[0x78, 0x7a]] },
    ]);
    for (const literal of ['/a/[', '/a/[]', '/a/[b/c]', '/a/b]', '/plain path (1)']) expect(isGlob(literal), literal).toBe(false);
    for (const glob of ['/a/*', '/a/?', '/a/[bc]', '/a/[!b]', '/a/**']) expect(isGlob(glob), glob).toBe(true);
    expect(isGlob('/a/[z-a]')).toBe(true); // malformed, but glob syntax: the settings report it
    expect(() => globToRegExp('/a/[z-a]')).toThrow(/Range out of order/);
    expect(globBase('/a/b/*.pem')).toBe('/a/b');
    expect(globBase('/*/x')).toBe('/');
  });

  it('globToRegExp keeps its meaning: `**` crosses segments, `*` and `?` do not, classes never match /', () => {
    const re = globToRegExp('/w/**/*.pem');
    expect(re.test('/w/k.pem')).toBe(true);
    expect(re.test('/w/a/b/k.pem')).toBe(true);
    expect(re.test('/w/a/k.pemx')).toBe(false);
    expect(globToRegExp('/w/*.pem').test('/w/a/k.pem')).toBe(false);
    expect(globToRegExp('/w/f?[ab]').test('/w/fxb')).toBe(true);
    expect(globToRegExp('/w/[!a]x').test('/w//x')).toBe(false);
    expect(globToRegExp('/w/[.-0]x').test('/w//x')).toBe(false);
    expect(globToRegExp('/w/a.b+(c)$').test('/w/a.b+(c)$')).toBe(true);
    expect(globToRegExp('/w/a.b').test('/w/aXb')).toBe(false);
    expect(globToRegExp('/w/?').test('/w/😀')).toBe(true); // one character, not one UTF-16 unit
    expect(globToRegExp('/w/*').test('/w/new\nline')).toBe(true);
  });

  it('bracket expressions with ERE-special members stay portable POSIX', () => {
    const cases: [string, string[], string[]][] = [
      ['/x/[]', ['/x/[]'], ['/x/]']],
      ['/x/[\\]', ['/x/\\'], ['/x/]', '/x/a']],
      ['/x/[-^]', ['/x/^', '/x/-'], ['/x/a']],
      ['/x/[^-]', ['/x/^', '/x/a'], ['/x/-', '/x//']],
      ['/x/[!^-]', ['/x/a', '/x/]'], ['/x/^', '/x/-', '/x//']],
      ['/x/[[a]', ['/x/[', '/x/a'], ['/x/]']],
      ['/x/[a-c.]', ['/x/b', '/x/.'], ['/x/d']],
      ['/x/[!]]', ['/x/!]'], ['/x/!', '/x/a]']],
      ['/x/[!\\[^]', ['/x/a', '/x/]'], ['/x/\\', '/x/[', '/x/^']],
      ['/x/[*-,]', ['/x/+', '/x/*', '/x/,'], ['/x/-', '/x/a']],
    ];
    for (const [glob, yes, no] of cases) {
      const ere = globToEre(glob);
      checkEre(ere);
      const js = globToRegExp(glob);
      const got = ereMatch(ere, [...yes, ...no]);
      expect(got, `${glob} → ${ere}`).toEqual([...yes.map(() => true), ...no.map(() => false)]);
      expect([...yes, ...no].map((p) => js.test(p)), glob).toEqual(got);
    }
  });

  it('case folding (deny side on case-insensitive volumes) widens ASCII letters only', () => {
    const ere = `^${tokensToEre(parseGlob('/U/.git/[h]ooks/*.Sh'), { foldCase: true })}$`;
    expect(ereMatch(ere, ['/U/.git/hooks/a.sh', '/u/.GIT/HOOKS/A.SH', '/U/.git/hooks/a.sx', '/U/.git/hooks/d/a.sh'])).toEqual([true, true, false, false]);
    expect(ereMatch(`^${tokensToEre(parseGlob('/é'), { foldCase: true })}$`, ['/é', '/É'])).toEqual([true, false]);
  });
});

/** A deterministic PRNG (tests must not flake). */
function prng(seed: number) {
  let s = seed >>> 0;
  const next = () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s; };
  return { int: (n: number) => next() % n, pick: <T,>(xs: readonly T[]): T => xs[next() % xs.length]! };
}

// Characters paths are made of in the fuzz: letters, spaces, quotes, parentheses, regex and glob
// metacharacters, non-ASCII (two, three and four bytes in UTF-8), a newline.
const ALPHABET = [...'abcAB01 _-.\'"()[]{}|\\^$+?*!,;:=@#%&~`<>\n', 'é', 'ß', '日', '本', '😀', 'ñ'];

function randomName(r: ReturnType<typeof prng>, max = 6): string {
  return Array.from({ length: 1 + r.int(max) }, () => r.pick(ALPHABET)).join('');
}

/** A random glob, and paths built from it (so that some match) plus random ones. */
function randomCase(r: ReturnType<typeof prng>): { glob: string; paths: string[] } {
  const segs = Array.from({ length: 1 + r.int(4) }, () => {
    const parts: string[] = [];
    for (let k = 0; k < 1 + r.int(3); k++) {
      const roll = r.int(10);
      if (roll === 0) parts.push('*');
      else if (roll === 1) parts.push('?');
      else if (roll === 2) parts.push(`[${r.int(2) ? '!' : ''}${randomName(r, 3).replace(/[\]/]/g, '')}${r.int(2) ? `${r.pick(['a', '0', 'A'])}-${r.pick(['z', '9', 'Z'])}` : ''}]`);
      else parts.push(randomName(r, 4).replace(/\//g, ''));
    }
    return r.int(8) === 0 ? '**' : parts.join('');
  });
  const glob = `/${segs.join('/')}`;
  const instantiate = (): string => `/${segs.map((seg) => {
    if (seg === '**') return Array.from({ length: r.int(3) }, () => randomName(r)).join('/') || randomName(r);
    return seg.replace(/\*|\?|\[[^\]/]*\]/g, (w) => (w === '*' ? randomName(r, 3).repeat(r.int(2)) : w === '?' ? r.pick(ALPHABET) : r.pick([...w.slice(1, -1)])));
  }).join('/')}`.replace(/\/+/g, '/');
  const paths = new Set<string>([glob]);
  for (let k = 0; k < 12; k++) paths.add(instantiate());
  for (let k = 0; k < 6; k++) paths.add(`/${Array.from({ length: 1 + r.int(4) }, () => randomName(r)).join('/')}`);
  return { glob, paths: [...paths] };
}

describe('glob fuzz: the Seatbelt regex and the JavaScript RegExp agree', () => {
  it('on random globs and paths (spaces, quotes, parentheses, unicode, metacharacters), in a character locale', () => {
    const r = prng(1815);
    const cases = Array.from({ length: 600 }, () => randomCase(r)).filter(({ glob }) => {
      try { globToRegExp(glob); return true; } catch { return false; } // a backwards range is a settings error
    });
    expect(cases.length).toBeGreaterThan(400);
    const eres = cases.map(({ glob }) => globToEre(glob));
    for (const ere of eres) checkEre(ere);
    // One engine run for every case (a spawn per case is slow on a loaded machine): each regex
    // meets every case's paths; each case is judged on its own paths.
    const subjects = [...new Set(cases.flatMap(({ paths }) => paths))];
    const column = new Map(subjects.map((p, j) => [p, j]));
    const matrix = ereMatchAll(eres, subjects);
    let positives = 0;
    const disagreements: string[] = [];
    cases.forEach(({ glob, paths }, k) => {
      const js = globToRegExp(glob);
      for (const p of paths) {
        const ere = matrix[k]![column.get(p)!];
        if (js.test(p)) positives++;
        if (js.test(p) !== ere) disagreements.push(`${JSON.stringify(glob)} on ${JSON.stringify(p)}: js=${js.test(p)} ere=${ere}`);
      }
    });
    expect(disagreements.slice(0, 10)).toEqual([]);
    expect(positives).toBeGreaterThan(1000); // the fuzz exercises matches, not only misses
  }, 240_000);

  it('in a byte locale too, for ASCII paths; `*` and `**` also cover names that are not UTF-8', () => {
    const r = prng(77);
    const isAscii = (s: string) => [...s].every((c) => c.charCodeAt(0) < 0x80);
    const cases: { glob: string; subjects: string[] }[] = [];
    for (let k = 0; k < 300; k++) {
      const { glob, paths } = randomCase(r);
      const subjects = paths.filter(isAscii);
      if (!isAscii(glob) || subjects.length === 0) continue;
      try { globToRegExp(glob); } catch { continue; }
      cases.push({ glob, subjects });
    }
    // One engine run for all cases, as above.
    const all = [...new Set(cases.flatMap(({ subjects }) => subjects))];
    const column = new Map(all.map((p, j) => [p, j]));
    const matrix = ereMatchAll(cases.map(({ glob }) => globToEre(glob)), all, 'C');
    let compared = 0;
    cases.forEach(({ glob, subjects }, k) => {
      const js = globToRegExp(glob);
      expect(subjects.map((p) => matrix[k]![column.get(p)!]), glob).toEqual(subjects.map((p) => js.test(p)));
      compared += subjects.length;
    });
    expect(compared).toBeGreaterThan(500);
    const bytes = Buffer.from([0x2f, 0x77, 0x2f, 0x6b, 0xff, 0xfe, 0x2e, 0x70, 0x65, 0x6d]); // /w/k\xff\xfe.pem
    expect(ereMatchAll([globToEre('/w/*.pem'), globToEre('/w/**'), globToEre('/**/*.pem')], [bytes], 'C')).toEqual([[true], [true], [true]]);
  });
});

describe('globMatcher: the same meaning as the RegExp, without backtracking', () => {
  it('agrees with globToRegExp on the random cases', () => {
    const r = prng(2718);
    let compared = 0;
    for (let k = 0; k < 600; k++) {
      const { glob, paths } = randomCase(r);
      let js: RegExp;
      try { js = globToRegExp(glob); } catch { continue; }
      const m = globMatcher(glob);
      for (const p of paths) {
        expect(m(p), `${JSON.stringify(glob)} on ${JSON.stringify(p)}`).toBe(js.test(p));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(5000);
    for (const [g, p, want] of [['/a/**/b', '/a/b', true], ['/a/**/b', '/a/x/y/b', true], ['/a/**', '/a/x/y', true], ['/a/*', '/a/x/y', false], ['/a/[!x]', '/a//', false]] as const) {
      expect(globMatcher(g)(p)).toBe(want);
    }
  });

  it('a hostile glob against a long name finishes (a RegExp would backtrack for minutes)', () => {
    const m = globMatcher(`/${'*a'.repeat(25)}*b`);
    expect(m(`/${'a'.repeat(400)}`)).toBe(false);
    expect(m(`/${'a'.repeat(400)}b`)).toBe(true);
  });
});
