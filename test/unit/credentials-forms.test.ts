import { describe, expect, it } from 'vitest';
import { base64Core, formPairs, MIN_FORM_LENGTH, percentEncode, spellingPairs } from '../../src/credentials/forms.js';
import { Matcher } from '../../src/credentials/substitute.js';

/** Deterministic PRNG so a failure can be replayed from its seed. */
function prng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

const REAL = 'ghp_Real/Value+with=Symbols&<>0123456789';
const SENT = 'ghp_Sent/Xyzab+cdef=Ghijklm&<>9876543210';

/** Replace every form of REAL by the same form of SENT. */
function remask(data: string | Buffer, from = REAL, to = SENT): Buffer {
  const m = new Matcher(formPairs(from, to).map(([f, t]) => ({ from: f, to: t, tag: 0 })));
  return m.all(typeof data === 'string' ? Buffer.from(data, 'utf8') : data).out;
}

describe('spellings', () => {
  it('percent-encodes every byte but the unreserved characters, in both hex cases', () => {
    expect(percentEncode('a+b/c=d é', true)).toBe('a%2Bb%2Fc%3Dd%20%C3%A9');
    expect(percentEncode('a+b', false)).toBe('a%2bb');
    expect(percentEncode(Buffer.from([0x61, 0xff]), true)).toBe('a%FF');
    expect(spellingPairs('ghp_abc-1.2~', 'x')).toEqual([['ghp_abc-1.2~', 'x']]);
    expect(spellingPairs('a/b', 'c+d')).toEqual([['a/b', 'c+d'], ['a%2Fb', 'c%2Bd'], ['a%2fb', 'c%2bd']]);
    // Python's quote and path encoders leave `/` raw.
    expect(spellingPairs('a/b+c', 'x/y=z').map(([f]) => f)).toEqual(['a/b+c', 'a%2Fb%2Bc', 'a%2fb%2bc', 'a/b%2Bc', 'a/b%2bc']);
    expect(spellingPairs('a/b+c', 'x/y=z')[3]).toEqual(['a/b%2Bc', 'x/y%3Dz']);
  });
});

describe('forms', () => {
  it('base64Core is what the value contributes alone to any blob it sits in, at every offset, both alphabets', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rnd = prng(seed);
      const value = Buffer.from(Array.from({ length: 1 + rnd(40) }, () => rnd(256)));
      const before = Buffer.from(Array.from({ length: rnd(7) }, () => rnd(256)));
      const after = Buffer.from(Array.from({ length: rnd(7) }, () => rnd(256)));
      const blob = Buffer.concat([before, value, after]);
      for (const url of [false, true]) {
        const core = base64Core(value, before.length % 3, url);
        expect(blob.toString(url ? 'base64url' : 'base64'), `seed ${seed}`).toContain(core);
        // All of the value's bytes but at most its first and last one are in the core.
        expect(core.length, `seed ${seed}`).toBeGreaterThanOrEqual(Math.floor((8 * Math.max(0, value.length - 2)) / 6));
      }
    }
  });

  it('each form is paired with the same form of the replacement; short values only raw and percent-encoded', () => {
    const pairs = formPairs(REAL, SENT).map(([f, t]) => [f.toString(), t.toString()]);
    const forms = new Map(pairs as Array<[string, string]>);
    expect(forms.get(REAL)).toBe(SENT);
    expect(forms.get(encodeURIComponent(REAL).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))).toBe(encodeURIComponent(SENT));
    expect(forms.get(Buffer.from(REAL).toString('hex'))).toBe(Buffer.from(SENT).toString('hex'));
    expect(forms.get(Buffer.from(REAL).toString('hex').toUpperCase())).toBe(Buffer.from(SENT).toString('hex').toUpperCase());
    expect(forms.get(Buffer.from(REAL).toString('base64').replace(/=+$/, '').slice(0, -1))).toBeDefined();
    expect(new Set(pairs.map(([f]) => f)).size).toBe(pairs.length);
    expect(formPairs('abc/def', 'xyz/uvw').map(([f]) => f.toString())).toEqual(['abc/def', 'abc%2Fdef', 'abc%2fdef']);
    expect('abc/def'.length).toBeLessThan(MIN_FORM_LENGTH);
  });

  it('re-masking turns every echo form of the real value into the same form of the sentinel', () => {
    const b64 = (s: string, url = false) => Buffer.from(s).toString(url ? 'base64url' : 'base64');
    const uEsc = (s: string, upper: boolean) => [...s].map((c) => { const h = c.charCodeAt(0).toString(16).padStart(4, '0'); return `\\u${upper ? h.toUpperCase() : h}`; }).join('');
    const goEsc = (s: string) => s.replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
    const cases: Array<[string, string]> = [
      [REAL, SENT],
      [`{"t":${JSON.stringify(REAL)}}`, `{"t":${JSON.stringify(SENT)}}`],
      [JSON.stringify(REAL).replace(/\//g, '\\/'), JSON.stringify(SENT).replace(/\//g, '\\/')],
      [goEsc(REAL), goEsc(SENT)],
      [uEsc(REAL, false), uEsc(SENT, false)],
      [uEsc(REAL, true), uEsc(SENT, true)],
      [`x=${Buffer.from(REAL).toString('hex')};`, `x=${Buffer.from(SENT).toString('hex')};`],
      [`${Buffer.from(REAL).toString('hex').toUpperCase()}`, `${Buffer.from(SENT).toString('hex').toUpperCase()}`],
      [`token=${encodeURIComponent(REAL)}`, `token=${encodeURIComponent(SENT)}`],
    ];
    for (const [echo, expected] of cases) expect(remask(echo).toString(), echo).toBe(expected);
    // Base64 at each alignment: the value's own characters become the sentinel's.
    for (const prefix of ['', 'a', 'ab', 'abc', 'user:']) {
      for (const url of [false, true]) {
        const echo = b64(`${prefix}${REAL}!`, url);
        const out = remask(echo).toString();
        const decoded = Buffer.from(out, url ? 'base64url' : 'base64').toString('latin1');
        expect(decoded, `${prefix} ${url}`).not.toContain(REAL.slice(1, -1));
        expect(decoded, `${prefix} ${url}`).toContain(SENT.slice(1, -1));
        expect(decoded.startsWith(prefix)).toBe(true);
      }
    }
  });

  it('property: a value of 8 bytes or more, in any form at any offset of random data, is gone after re-masking', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rnd = prng(seed * 31);
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_/+=.~ é';
      const word = (n: number) => Array.from({ length: n }, () => alphabet[rnd(alphabet.length)]).join('');
      const n = MIN_FORM_LENGTH + rnd(40);
      const real = word(n);
      const sent = word(n);
      const pairs = formPairs(real, sent);
      const [form] = pairs[rnd(pairs.length)]!;
      const noise = (k: number) => Buffer.from(word(k));
      const data = Buffer.concat([noise(rnd(20)), form, noise(rnd(20))]);
      const out = remask(data, real, sent);
      for (const [f] of pairs) expect(out.includes(f), `seed ${seed}: ${form.toString()} left ${f.toString()}`).toBe(false);
    }
  });
});
