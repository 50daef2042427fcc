// `decode: "jwt"` (SPEC §7): the command gets a structurally valid fake JWT — same header
// `alg`/`typ`, a payload of sentinel claims (`exp`, `nbf`, `iat` kept so expiry checks behave)
// or, with `maskClaims`, the real payload with only the listed claims replaced — and a random
// signature of the real one's length, all drawn from the token's sentinel stream (the same fake in
// every run when sentinels are stable). The proxy swaps the fake token back for the real one.
// jose parses; it is loaded only when some entry asks for decode.

import { shapeSentinel, type RandomInt, type SentinelMint } from './sentinels.js';

export type Jose = Pick<typeof import('jose'), 'decodeJwt' | 'decodeProtectedHeader'>;

let joseLoad: Promise<Jose> | undefined;
export function loadJose(): Promise<Jose> {
  return (joseLoad ??= import('jose'));
}

/** Claims whose real values stay in a fully faked payload, so expiry checks still behave. */
const TIME_CLAIMS = new Set(['exp', 'nbf', 'iat']);

function fakeNumber(n: number, random: RandomInt): number {
  if (!Number.isFinite(n)) return n;
  const [int, frac = ''] = Math.abs(n).toString().split('.');
  if (/e/i.test(int!)) return n; // exponent notation: leave as it is
  let digits = '';
  for (let i = 0; i < int!.length + frac.length; i++) digits += String(i === 0 && int!.length > 1 ? 1 + random(9) : random(10));
  const v = Number(frac === '' ? digits : `${digits.slice(0, int!.length)}.${digits.slice(int!.length)}`);
  return n < 0 ? -v : v;
}

/** A sentinel version of any JSON value: strings shaped like themselves, numbers of the same
 *  digits, structure kept; booleans and null stay (they carry no secret worth the breakage). */
function fakeValue(v: unknown, random: RandomInt): unknown {
  if (typeof v === 'string') return shapeSentinel(v, random, 0).sentinel;
  if (typeof v === 'number') return fakeNumber(v, random);
  if (Array.isArray(v)) return v.map((x) => fakeValue(x, random));
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fakeValue(x, random)]));
  return v;
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A JWT taken apart, ready to be faked. */
export interface ParsedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signatureLength: number;
  maskClaims?: readonly string[];
}

/** Not a JWT (a JWS compact token with a JSON header and payload), or lacking a claim `maskClaims` names → the reason. */
export function parseJwt(jose: Jose, real: string, maskClaims: readonly string[] | undefined): ParsedJwt | string {
  const parts = real.split('.');
  let header: Record<string, unknown>;
  let payload: Record<string, unknown>;
  try {
    if (parts.length !== 3) throw new Error('not three parts');
    header = jose.decodeProtectedHeader(real) as Record<string, unknown>;
    payload = jose.decodeJwt(real);
  } catch {
    return 'the value is not a JWT';
  }
  const missing = (maskClaims ?? []).filter((c) => !(c in payload));
  if (missing.length > 0) return `the JWT has no ${missing.map((c) => `"${c}"`).join(', ')} claim`;
  const parsed: ParsedJwt = { header, payload, signatureLength: Buffer.from(parts[2]!, 'base64url').length };
  if (maskClaims) parsed.maskClaims = maskClaims;
  return parsed;
}

/** The fake token for a parsed JWT, unique in the run (registered with `mint`); `random` is the
 *  token's own stream (SentinelMint.streamFor). */
export function fakeJwt(jwt: ParsedJwt, mint: SentinelMint, random: RandomInt): string {
  const header: Record<string, unknown> = { alg: jwt.header.alg };
  if (jwt.header.typ !== undefined) header.typ = jwt.header.typ;
  const { payload, maskClaims } = jwt;
  const body = (): Record<string, unknown> => {
    if (maskClaims) {
      const kept: Record<string, unknown> = { ...payload };
      for (const c of maskClaims) kept[c] = fakeValue(payload[c], random);
      return kept;
    }
    return Object.fromEntries(Object.entries(payload).map(([k, v]) => [k, TIME_CLAIMS.has(k) ? v : fakeValue(v, random)]));
  };
  const signature = () => Buffer.from(Array.from({ length: jwt.signatureLength }, () => random(256))).toString('base64url');
  return mint.unique(() => `${b64url(header)}.${b64url(body())}.${signature()}`);
}
