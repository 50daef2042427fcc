import { describe, expect, it } from 'vitest';
import { spellingPairs } from '../../src/credentials/forms.js';
import { Matcher, Substitution, type Pattern } from '../../src/credentials/substitute.js';

/** Independent reference: at each position the longest pattern that matches there, else copy one byte. */
function naive(patterns: Pattern[], data: Buffer): { out: Buffer; trip?: Pattern } {
  const out: number[] = [];
  for (let i = 0; i < data.length;) {
    let best: Pattern | undefined;
    for (const p of patterns) {
      if (p.from.length > 0 && i + p.from.length <= data.length && data.subarray(i, i + p.from.length).equals(p.from) && (!best || p.from.length > best.from.length)) best = p;
    }
    if (!best) { out.push(data[i]!); i++; continue; }
    if (best.to === null) return { out: Buffer.from(out), trip: best };
    out.push(...best.to);
    i += best.from.length;
  }
  return { out: Buffer.from(out) };
}

/** Deterministic PRNG so a failure can be replayed from its seed. */
function prng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

function streamed(matcher: Matcher, data: Buffer, cuts: number[]): { out: Buffer; trip?: Pattern } {
  const sub = new Substitution(matcher);
  const parts: Buffer[] = [];
  let prev = 0;
  for (const cut of [...cuts, data.length]) {
    const r = cut === data.length ? sub.end(data.subarray(prev, cut)) : sub.push(data.subarray(prev, cut));
    parts.push(r.out);
    if (r.trip) return { out: Buffer.concat(parts), trip: r.trip };
    prev = cut;
  }
  return { out: Buffer.concat(parts) };
}

const b = (s: string) => Buffer.from(s);

describe('substitution', () => {
  it('replaces every occurrence, leftmost and longest first', () => {
    const m = new Matcher([
      { from: b('abc'), to: b('X'), tag: 1 },
      { from: b('abcdef'), to: b('Y'), tag: 2 },
      { from: b('cde'), to: b('Z'), tag: 3 },
    ]);
    expect(m.all(b('..abcdef..abcde..cde')).out.toString()).toBe('..Y..Xde..Z');
    expect(m.all(b('abcabc')).out.toString()).toBe('XX');
  });

  it('holds back only bytes that could begin a pattern, and nothing when none could', () => {
    const m = new Matcher([{ from: b('SENTINEL'), to: b('REALVALU'), tag: 0 }]);
    const sub = new Substitution(m);
    expect(sub.push(b('data: hello\n\n')).out.toString()).toBe('data: hello\n\n');
    expect(sub.held).toBe(0);
    expect(sub.push(b('x SENT')).out.toString()).toBe('x ');
    expect(sub.held).toBe(4);
    expect(sub.push(b('INEL y')).out.toString()).toBe('REALVALU y');
    expect(sub.held).toBe(0);
    expect(sub.push(b('S')).out.toString()).toBe('');
    expect(sub.end().out.toString()).toBe('S'); // an unfinished prefix is flushed at the end
  });

  it('returns a clean chunk as it is (no copy)', () => {
    const m = new Matcher([{ from: b('SENTINEL'), to: b('REALVALU'), tag: 0 }]);
    const chunk = Buffer.alloc(65536, 'x');
    expect(new Substitution(m).push(chunk).out).toBe(chunk);
  });

  it('a tripwire stops at the pattern and reports it', () => {
    const trip: Pattern = { from: b('TRIP'), to: null, tag: 'GH_TOKEN' };
    const m = new Matcher([trip, { from: b('inject'), to: b('INJECT'), tag: 0 }]);
    const r = new Substitution(m).push(b('inject me, then TRIP and more'));
    expect(r.trip).toBe(trip);
    expect(r.out.toString()).toBe('INJECT me, then ');
  });

  it('property: any chunking gives the same result as the whole buffer, and both equal the naive reference', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const rnd = prng(seed);
      // Raw, base64 and percent-encoded spellings of a few values, some sharing prefixes.
      const values = ['ghp_AbCdEf0123', 'ghp_AbCd', 'sk-x/y+z==', 'aaab', 'ab'];
      const patterns: Pattern[] = [];
      values.forEach((v, i) => {
        for (const s of [...spellingPairs(v, v).map(([f]) => f), Buffer.from(`user:${v}`).toString('base64')]) {
          patterns.push({ from: b(s), to: rnd(5) === 0 && i === 4 ? null : b(`<${i}:${s.length}>`), tag: i });
        }
      });
      const m = new Matcher(patterns);
      const pieces: string[] = [];
      for (let i = 0; i < 30; i++) {
        const k = rnd(4);
        if (k === 0) pieces.push(patterns[rnd(patterns.length)]!.from.toString());
        else if (k === 1) pieces.push(patterns[rnd(patterns.length)]!.from.toString().slice(0, 1 + rnd(5))); // a prefix only
        else pieces.push('xyzab%2F='.slice(rnd(5), 5 + rnd(5)));
      }
      const data = b(pieces.join(''));
      const whole = m.all(data);
      const ref = naive(m.patterns as Pattern[], data);
      expect(whole.out.toString(), `seed ${seed}`).toBe(ref.out.toString());
      expect(whole.trip, `seed ${seed}`).toBe(ref.trip);
      for (let k = 0; k < 5; k++) {
        const cuts = [...new Set(Array.from({ length: rnd(12) }, () => rnd(data.length + 1)))].sort((x, y) => x - y);
        const s = streamed(m, data, cuts);
        expect(s.out.toString(), `seed ${seed} cuts ${cuts}`).toBe(whole.out.toString());
        expect(s.trip, `seed ${seed} cuts ${cuts}`).toBe(whole.trip);
      }
      // One byte at a time: the hardest chunking.
      const bytes = streamed(m, data, Array.from({ length: data.length }, (_, i) => i).slice(1));
      expect(bytes.out.toString(), `seed ${seed} bytewise`).toBe(whole.out.toString());
    }
  });

  it('property: many patterns of any length (1 byte up), crowded alphabets, any chunking: the same as the naive reference', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rnd = prng(seed * 7919);
      // A small alphabet makes patterns overlap, share prefixes and collide in the skip table.
      const alphabet = 'abcdefghij'.slice(0, 2 + rnd(9));
      const word = (n: number) => Array.from({ length: n }, () => alphabet[rnd(alphabet.length)]).join('');
      const count = 1 + rnd(seed % 3 === 0 ? 200 : 12);
      const minLength = 1 + rnd(6);
      const patterns: Pattern[] = Array.from({ length: count }, (_, i) => {
        const from = word(minLength + rnd(seed % 5 === 0 ? 40 : 8));
        return { from: b(from), to: rnd(17) === 0 ? null : b(word(rnd(4) === 0 ? from.length : rnd(6))), tag: i };
      });
      const m = new Matcher(patterns);
      const data = b(Array.from({ length: 1 + rnd(6) }, () => (rnd(2) ? patterns[rnd(count)]!.from.toString() : word(rnd(30)))).join(''));
      const ref = naive(m.patterns as Pattern[], data);
      const whole = m.all(data);
      expect(whole.out.toString(), `seed ${seed}`).toBe(ref.out.toString());
      expect(whole.trip, `seed ${seed}`).toBe(ref.trip);
      for (let k = 0; k < 4; k++) {
        const cuts = [...new Set(Array.from({ length: rnd(10) }, () => rnd(data.length + 1)))].sort((x, y) => x - y);
        const s = streamed(m, data, cuts);
        expect(s.out.toString(), `seed ${seed} cuts ${cuts}`).toBe(ref.out.toString());
        expect(s.trip, `seed ${seed} cuts ${cuts}`).toBe(ref.trip);
      }
      const bytes = streamed(m, data, Array.from({ length: data.length }, (_, i) => i).slice(1));
      expect(bytes.out.toString(), `seed ${seed} bytewise`).toBe(ref.out.toString());
    }
  });

  it('knows whether the substitution keeps lengths', () => {
    expect(new Matcher([{ from: b('abcd'), to: b('wxyz'), tag: 0 }, { from: b('TRIP'), to: null, tag: 0 }]).lengthPreserving).toBe(true);
    expect(new Matcher([{ from: b('abcd'), to: b('wx'), tag: 0 }]).lengthPreserving).toBe(false);
  });
});
