// Sentinels: the stand-ins the sandboxed command sees instead of real secrets (SPEC §7). A
// sentinel keeps the shape of the value it replaces — same length, same alphabet, known prefixes
// such as `ghp_` kept, GitHub's CRC32 checksum valid — so tools that check token syntax keep
// working. Its randomised characters come from a stream keyed by a per-user secret and the real
// value (keyedRandom): the same value gets the same sentinel in every run on this machine, so a
// token a tool saved inside keeps working next run, and nobody without the key can tell which
// real value a sentinel stands for. Without a key (a dry run, a key srt cannot trust) they are
// drawn afresh from a cryptographic source. Pure apart from the random source.

import { createHmac, randomInt } from 'node:crypto';

const DIGITS = '0123456789';
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
/** GitHub's (and npm's) base62 dictionary, in the order its checksum encoding uses. */
export const BASE62 = DIGITS + UPPER + LOWER;
const BASE64 = UPPER + LOWER + DIGITS + '+/';
/** The alphabet of AWS access key ids after their prefix (RFC 4648 base32). */
const AWS_KEY_ID = UPPER + '234567';

/** Kept verbatim at the start of a value: a tool may check them (longest first). */
export const KNOWN_PREFIXES = [
  'github_pat_', 'sk-ant-api03-', 'sk-ant-', 'sk-proj-', 'xoxb-', 'xoxp-', 'glpat-',
  'ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'npm_', 'AKIA', 'ASIA', 'sk-',
] as const;

/** Below this many random bits a sentinel could be guessed or turn up in ordinary traffic. */
export const MIN_SENTINEL_BITS = 64;

/** Uniform integer in [0, n). */
export type RandomInt = (n: number) => number;
export const cryptoRandom: RandomInt = (n) => randomInt(n);

/**
 * A deterministic stream of uniform integers for one real value: HMAC-SHA256 under `key` of the
 * value and a block counter (a counter-mode DRBG), 32-bit draws with rejection sampling (no
 * modulo bias). One key, one value: always the same stream.
 */
export function keyedRandom(key: Buffer, real: string): RandomInt {
  const value = Buffer.from(real, 'utf8');
  let block = Buffer.alloc(0);
  let at = 0;
  let counter = 0;
  const next32 = (): number => {
    if (at + 4 > block.length) {
      const c = Buffer.alloc(4);
      c.writeUInt32BE(counter++);
      block = createHmac('sha256', key).update('srt sentinel v1\0').update(value).update(c).digest();
      at = 0;
    }
    const v = block.readUInt32BE(at);
    at += 4;
    return v;
  };
  return (n) => {
    const limit = 0x1_0000_0000 - (0x1_0000_0000 % n);
    for (;;) {
      const v = next32();
      if (v < limit) return v % n;
    }
  };
}

let crcTable: Uint32Array | undefined;
/** CRC-32 (IEEE 802.3), as GitHub's token checksum uses it. */
export function crc32(text: string): number {
  const table = (crcTable ??= (() => {
    const t = new Uint32Array(256);
    for (let i = 0; i < 256; i++) {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      t[i] = c >>> 0;
    }
    return t;
  })());
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) crc = table[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** `n` in base62, left-padded with `0` to `width` digits. */
export function base62(n: number, width: number): string {
  let out = '';
  for (let v = n; v > 0; v = Math.floor(v / 62)) out = BASE62[v % 62]! + out;
  return out.padStart(width, '0');
}

/** GitHub-style tokens: prefix, 30 random base62 characters, then CRC32 of those 30 in 6 base62 digits. */
const CHECKSUMMED = /^(gh[pousr]_|npm_)[A-Za-z0-9]{36}$/;

/** Does a GitHub-style token carry a valid checksum? (What client-side validators check.) */
export function hasValidChecksum(token: string): boolean {
  const m = CHECKSUMMED.exec(token);
  if (!m) return false;
  const body = token.slice(m[1]!.length);
  return base62(crc32(body.slice(0, 30)), 6) === body.slice(30);
}

export interface SentinelShape {
  sentinel: string;
  /** Characters added because the value itself is too short to hide (the length differs). */
  extendedBy: number;
}

function draw(alphabet: string, n: number, random: RandomInt): string {
  let out = '';
  for (let i = 0; i < n; i++) out += alphabet[random(alphabet.length)]!;
  return out;
}

/** The alphabet the randomised characters of `body` are drawn from. */
function alphabetOf(body: string): string {
  const alnum = body.replace(/[^A-Za-z0-9]/g, '');
  if (/^[A-Za-z0-9+/]*={0,2}$/.test(body) && /[+/]/.test(body)) return BASE64;
  if (alnum === '') return BASE62;
  if (/^[0-9]+$/.test(alnum)) return DIGITS;
  if (/^[0-9a-f]+$/.test(alnum)) return DIGITS + 'abcdef';
  if (/^[0-9A-F]+$/.test(alnum)) return DIGITS + 'ABCDEF';
  return (/[A-Z]/.test(alnum) ? UPPER : '') + (/[a-z]/.test(alnum) ? LOWER : '') + (/[0-9]/.test(alnum) ? DIGITS : '');
}

/**
 * A fresh value of the same shape as `real`. Letters and digits (and the characters of a
 * base64 alphabet) are drawn at random from the value's own alphabet; punctuation that gives a
 * token its structure (`-` in `xoxb-…`, `.` in a JWT, `=` padding) stays in place; a known prefix
 * is kept; GitHub/npm checksums are recomputed. A value with fewer than `minBits` random bits
 * gets extra characters so its sentinel cannot be guessed (then the length differs).
 */
export function shapeSentinel(real: string, random: RandomInt = cryptoRandom, minBits = MIN_SENTINEL_BITS): SentinelShape {
  if (CHECKSUMMED.test(real)) {
    const prefix = real.slice(0, real.indexOf('_') + 1);
    const entropy = draw(BASE62, 30, random);
    return { sentinel: prefix + entropy + base62(crc32(entropy), 6), extendedBy: 0 };
  }
  if (/^(AKIA|ASIA)[A-Z2-7]{16}$/.test(real)) return { sentinel: real.slice(0, 4) + draw(AWS_KEY_ID, 16, random), extendedBy: 0 };

  const prefix = KNOWN_PREFIXES.find((p) => real.startsWith(p) && real.length > p.length) ?? '';
  const body = [...real.slice(prefix.length)];
  const alphabet = alphabetOf(real.slice(prefix.length));
  const isData = (ch: string) => /[A-Za-z0-9]/.test(ch) || (alphabet === BASE64 && (ch === '+' || ch === '/')) || ch.charCodeAt(0) > 0x7e;
  let randomised = 0;
  const out = body.map((ch) => {
    if (!isData(ch)) return ch;
    randomised++;
    return alphabet[random(alphabet.length)]!;
  });
  const bits = randomised * Math.log2(alphabet.length);
  let extendedBy = 0;
  if (bits < minBits) {
    extendedBy = Math.ceil((minBits - bits) / Math.log2(alphabet.length));
    // Before trailing punctuation (base64 padding, a closing quote), so the end keeps its shape.
    let at = out.length;
    while (at > 0 && !isData(out[at - 1]!)) at--;
    if (at === 0) at = out.length;
    out.splice(at, 0, draw(alphabet, extendedBy, random));
  }
  return { sentinel: prefix + out.join(''), extendedBy };
}

/** Where a mint's randomness comes from: a per-user key (stable sentinels), else `random`
 *  (cryptoRandom when absent). */
export interface SentinelSource {
  key?: Buffer;
  random?: RandomInt;
}

/**
 * Mints the sentinels of one run. Every sentinel is distinct from, and neither contains nor is
 * contained in, any real value or other sentinel of the run — so substitution in either
 * direction can never confuse two secrets or rewrite part of one.
 */
export class SentinelMint {
  private readonly taken: string[] = [];

  constructor(reals: Iterable<string>, private readonly source: SentinelSource = {}) {
    for (const r of reals) if (r !== '') this.taken.push(r);
  }

  /** The random stream for `real`'s sentinel: keyed by the value when there is a key. */
  streamFor(real: string): RandomInt {
    return this.source.key ? keyedRandom(this.source.key, real) : (this.source.random ?? cryptoRandom);
  }

  private clashes(s: string): boolean {
    return this.taken.some((t) => t.includes(s) || s.includes(t));
  }

  /** Reserve a value minted elsewhere (a fake JWT) under the same rules; false if it clashes. */
  reserve(value: string): boolean {
    if (this.clashes(value)) return false;
    this.taken.push(value);
    return true;
  }

  /** A sentinel shaped like `real` (see shapeSentinel); with a key, the same one in every run
   *  (a clash draws on from the same stream). */
  shaped(real: string): SentinelShape {
    const random = this.streamFor(real);
    for (let attempt = 0; attempt < 64; attempt++) {
      const shape = shapeSentinel(real, random);
      if (this.reserve(shape.sentinel)) return shape;
    }
    // Only a broken random source gets here: 64 draws of ≥ 64 bits that all collide.
    throw new Error('could not mint a unique sentinel');
  }

  /** Retry `make` until its value is unique in the run. */
  unique(make: () => string): string {
    for (let attempt = 0; attempt < 64; attempt++) {
      const v = make();
      if (this.reserve(v)) return v;
    }
    throw new Error('could not mint a unique sentinel');
  }
}
