import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { base62, crc32, hasValidChecksum, keyedRandom, KNOWN_PREFIXES, SentinelMint, shapeSentinel } from '../../src/credentials/sentinels.js';

/** A GitHub-style validator written from the published format, independent of the code under test. */
function githubValid(token: string): boolean {
  const m = /^(gh[pousr]|npm)_([A-Za-z0-9]{30})([A-Za-z0-9]{6})$/.exec(token);
  if (!m) return false;
  let crc = -1;
  for (const b of Buffer.from(m[2]!)) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  crc = (crc ^ -1) >>> 0;
  const dict = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let n = 0;
  for (const ch of m[3]!) n = n * 62 + dict.indexOf(ch);
  return n === crc;
}

const classOf = (ch: string) => (/[a-z]/.test(ch) ? 'a' : /[A-Z]/.test(ch) ? 'A' : /[0-9]/.test(ch) ? '0' : ch);

describe('sentinels', () => {
  it('crc32 and base62 match the reference values', () => {
    expect(crc32('123456789')).toBe(0xcbf43926); // the standard CRC-32 check value
    expect(base62(0, 6)).toBe('000000');
    expect(base62(61, 2)).toBe('0z');
    expect(base62(62, 2)).toBe('10');
  });

  it('GitHub and npm tokens keep their prefix, length and a valid checksum', () => {
    for (const prefix of ['ghp_', 'gho_', 'ghs_', 'ghu_', 'ghr_', 'npm_']) {
      const entropy = 'a'.repeat(30);
      const real = prefix + entropy + base62(crc32(entropy), 6);
      expect(githubValid(real)).toBe(true);
      for (let i = 0; i < 20; i++) {
        const { sentinel, extendedBy } = shapeSentinel(real);
        expect(sentinel.startsWith(prefix)).toBe(true);
        expect(sentinel).toHaveLength(real.length);
        expect(extendedBy).toBe(0);
        expect(githubValid(sentinel), sentinel).toBe(true);
        expect(hasValidChecksum(sentinel)).toBe(true);
        expect(sentinel).not.toBe(real);
      }
    }
  });

  it('a GitHub-shaped token with a wrong checksum still gets a sentinel with a valid one', () => {
    const real = 'ghp_' + 'x'.repeat(36);
    expect(githubValid(real)).toBe(false);
    expect(githubValid(shapeSentinel(real).sentinel)).toBe(true);
  });

  it('known prefixes are kept and the rest keeps its character classes and punctuation', () => {
    const samples = [
      'github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklm',
      'xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx',
      'xoxp-1234567890-1234567890123-1234567890123-0123456789abcdef0123456789abcdef',
      'sk-ant-api03-abcDEF123_ghiJKL456-mnoPQR789stuVWX0yzABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz012345-AAAAAA',
      'sk-proj-abcdefghijklmnopqrstuvwxyzABCDEFGHIJ',
      'sk-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST',
      'glpat-abcdefghij0123456789',
      'AKIAIOSFODNN7EXAMPLE',
      'ASIAIOSFODNN7EXAMPLE',
    ];
    for (const real of samples) {
      const prefix = KNOWN_PREFIXES.find((p) => real.startsWith(p))!;
      const { sentinel } = shapeSentinel(real);
      expect(sentinel.startsWith(prefix), real).toBe(true);
      expect(sentinel).toHaveLength(real.length);
      expect(sentinel).not.toBe(real);
      // Punctuation stays where it was.
      expect([...sentinel].map((c) => (/[A-Za-z0-9]/.test(c) ? '.' : c)).join('')).toBe([...real].map((c) => (/[A-Za-z0-9]/.test(c) ? '.' : c)).join(''));
    }
  });

  it('AWS key ids stay in the base32 alphabet; secret keys in base64', () => {
    expect(shapeSentinel('AKIAIOSFODNN7EXAMPLE').sentinel).toMatch(/^AKIA[A-Z2-7]{16}$/);
    const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const s = shapeSentinel(secret).sentinel;
    expect(s).toHaveLength(40);
    expect(s).toMatch(/^[A-Za-z0-9+/]{40}$/);
  });

  it('hex and decimal values stay hex and decimal', () => {
    expect(shapeSentinel('0123456789abcdef0123456789abcdef').sentinel).toMatch(/^[0-9a-f]{32}$/);
    expect(shapeSentinel('0123456789ABCDEF0123456789ABCDEF').sentinel).toMatch(/^[0-9A-F]{32}$/);
    expect(shapeSentinel('12345678901234567890').sentinel).toMatch(/^[0-9]{20}$/);
  });

  it('lower-case-only values stay lower case (character classes come from the whole value)', () => {
    const s = shapeSentinel('abcdefghijklmnopqrstuvwxyz').sentinel;
    expect(s).toMatch(/^[a-z]{26}$/);
    // Positions of digits vs letters are not carried over from the real value.
    const mixed = 'aaaaaaaaaaaaaaaaaaaa1111111111';
    const classes = new Set<string>();
    for (let i = 0; i < 10; i++) classes.add([...shapeSentinel(mixed).sentinel].map(classOf).join(''));
    expect(classes.size).toBeGreaterThan(1);
  });

  it('a short value gets a longer sentinel (at least 64 random bits), before trailing padding', () => {
    const r = shapeSentinel('abc1');
    expect(r.extendedBy).toBeGreaterThan(0);
    expect(r.sentinel.length).toBe(4 + r.extendedBy);
    expect(Math.log2(36) * r.sentinel.length).toBeGreaterThanOrEqual(64);
    const padded = shapeSentinel('YWJj==');
    expect(padded.sentinel.endsWith('==')).toBe(true);
  });

  it('is unguessable: a thousand sentinels of one value are all different', () => {
    const real = 'ghp_' + 'b'.repeat(36);
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) seen.add(shapeSentinel(real).sentinel);
    expect(seen.size).toBe(1000);
  });

  it('the mint never returns a sentinel equal to, containing or contained in a real value or another sentinel', () => {
    // A rigged random source: the first draws reproduce the real value, later ones differ.
    const real = 'abcdefghijklmnopqrstuvwx';
    let n = 0;
    const rigged = (size: number) => {
      const i = n++;
      return i < real.length ? real.charCodeAt(i) - 97 : (i * 7) % size;
    };
    const mint = new SentinelMint([real], { random: rigged });
    const s = mint.shaped(real).sentinel;
    expect(s).not.toBe(real);
    expect(s).toHaveLength(real.length);
    // A value already taken cannot be reserved again, nor a value containing it.
    expect(mint.reserve(s)).toBe(false);
    expect(mint.reserve(`x${s}y`)).toBe(false);
    expect(mint.reserve(real.slice(2, 10))).toBe(false);
    expect(mint.reserve('zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz')).toBe(true);
  });

  it('a broken random source is an error, not a repeated sentinel', () => {
    const mint = new SentinelMint(['0'.repeat(30)], { random: () => 0 });
    expect(() => mint.shaped('0'.repeat(30))).toThrow(/unique sentinel/);
  });
});

describe('stable sentinels (a per-user key)', () => {
  const KEY = Buffer.alloc(32, 7);
  const OTHER = Buffer.alloc(32, 8);
  const REALS = ['ghp_16C7e42F292c6912E7710c838347Ae178B4a', 'AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx', 'abc1'];

  it('the keyed stream is HMAC-SHA256 of the value and a block counter, drawn without modulo bias', () => {
    // Independent reference for the first draw: the first 32-bit word of block 0.
    const word = createHmac('sha256', KEY).update('srt sentinel v1\0').update('v').update(Buffer.from([0, 0, 0, 0])).digest().readUInt32BE(0);
    expect(keyedRandom(KEY, 'v')(0x1_0000_0000)).toBe(word);
    const r = keyedRandom(KEY, 'v');
    const counts = new Array<number>(3).fill(0);
    for (let i = 0; i < 30_000; i++) counts[r(3)]!++;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(600);
  });

  it('the same value gets the same sentinel from every mint with the same key, another key gives another one', () => {
    const a = new SentinelMint(REALS, { key: KEY });
    const b = new SentinelMint([...REALS].reverse(), { key: KEY });
    const c = new SentinelMint(REALS, { key: OTHER });
    for (const real of REALS) {
      const sa = a.shaped(real);
      expect(b.shaped(real)).toEqual(sa);
      expect(c.shaped(real).sentinel).not.toBe(sa.sentinel);
      expect(sa.sentinel).not.toBe(real);
    }
  });

  it('keeps every shape rule: prefixes, the GitHub checksum, the AWS alphabets, length', () => {
    const m = new SentinelMint(REALS, { key: KEY });
    const [gh, id, secret, slack] = REALS.map((r) => m.shaped(r).sentinel);
    expect(githubValid(gh!)).toBe(true);
    expect(id).toMatch(/^AKIA[A-Z2-7]{16}$/);
    expect(secret).toMatch(/^[A-Za-z0-9+/]{40}$/);
    expect(slack).toMatch(/^xoxb-[A-Za-z0-9]{12}-[A-Za-z0-9]{13}-[A-Za-z0-9]{24}$/);
  });

  it('different values get unrelated sentinels (one character apart is no help)', () => {
    const m = new SentinelMint([], { key: KEY });
    const s1 = m.shaped('ghp_16C7e42F292c6912E7710c838347Ae178B4a').sentinel;
    const s2 = m.shaped('ghp_16C7e42F292c6912E7710c838347Ae178B4b').sentinel;
    const same = [...s1].filter((ch, i) => ch === s2[i]).length;
    expect(same).toBeLessThan(12); // the prefix (4) and chance (~1/62 per character)
  });
});
