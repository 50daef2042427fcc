import { describe, expect, it } from 'vitest';
import { base62, crc32, hasValidChecksum, KNOWN_PREFIXES, SentinelMint, shapeSentinel } from '../../src/credentials/sentinels.js';

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
    const mint = new SentinelMint([real], rigged);
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
    const mint = new SentinelMint(['0'.repeat(30)], () => 0);
    expect(() => mint.shaped('0'.repeat(30))).toThrow(/unique sentinel/);
  });
});
