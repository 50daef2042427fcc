// Copies of a secret value inside other text (another variable, a file passed unmasked), pure:
// raw, and inside base64/base64url runs — `NPM_CONFIG__AUTH` (base64 `user:token`), a Docker auth
// config in a variable (JSON whose `auth` is base64 `user:password`), nested a level deeper (a
// base64 Kubernetes secret of such JSON). An encoded copy is replaced by decoding the run,
// replacing the value's bytes, and encoding it again in the same alphabet and padding: the
// command gets the sentinel encoded exactly as it would have got the real value, so a client that
// sends the blob (`Authorization: Basic …`) sends the sentinel, which the proxy injects.

import { base64Core, MIN_FORM_LENGTH } from './forms.js';

/** How deep encoded copies are looked for (base64 of JSON holding base64 is two). */
const MAX_DEPTH = 2;
/** A run of base64 or base64url characters long enough to hold a value (with its padding). */
const RUN = /[A-Za-z0-9+/_-]{12,}={0,2}/g;

export interface Copy<T> {
  real: string;
  /** What replaces it (a sentinel), or null where a copy means the text must be withheld. */
  sentinel: string | null;
  tag: T;
}

export interface Found<T> {
  text: string;
  /** Tags of the values found raw, and of those found only encoded. */
  raw: T[];
  encoded: T[];
  /** Tags of the values left encoded where srt cannot tell where the encoded run starts or ends
   *  (inside a longer base64 blob, a path): the text must be withheld. */
  stuck: T[];
  /** A copy whose sentinel is null was found, or a value is stuck: withhold the text. */
  withhold: boolean;
}

const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

/** Replace raw copies (longest value first) in latin1 text. */
function replaceRaw<T>(text: string, copies: ReadonlyArray<Copy<T>>, hit: Set<Copy<T>>): string {
  let out = text;
  for (const c of copies) {
    const real = latin1(c.real);
    if (!out.includes(real)) continue;
    hit.add(c);
    if (c.sentinel !== null) out = out.split(real).join(latin1(c.sentinel));
  }
  return out;
}

/** How a run is encoded, if it is base64 or base64url: encoding what it decodes to gives it back. */
function decodeRun(run: string): { bytes: Buffer; url: boolean; padded: boolean } | null {
  const url = /[-_]/.test(run);
  if (url && /[+/]/.test(run)) return null;
  const bytes = Buffer.from(run, url ? 'base64url' : 'base64');
  const padded = run.endsWith('=');
  return encodeRun(bytes, url, padded) === run ? { bytes, url, padded } : null;
}

function encodeRun(bytes: Buffer, url: boolean, padded: boolean): string {
  const b64 = bytes.toString('base64');
  const text = url ? b64.replace(/\+/g, '-').replace(/\//g, '_') : b64;
  return padded ? text : text.replace(/=+$/, '');
}

/** The base64/base64url characters that encode a value's bytes alone, at each alignment. */
function cores(real: string): string[] {
  const bytes = Buffer.from(real, 'utf8');
  return [false, true].flatMap((url) => [0, 1, 2].map((offset) => base64Core(bytes, offset, url)));
}

interface Scan<T> {
  copies: ReadonlyArray<Copy<T>>;
  cores: ReadonlyMap<Copy<T>, string[]>;
}

/** What one piece of text held: copies found (and replaced where they have a sentinel), and
 *  those left encoded where srt cannot tell where the encoded run starts or ends. */
interface Hits<T> {
  hit: Set<Copy<T>>;
  stuck: Set<Copy<T>>;
}

/** Replace copies in latin1 text and inside its base64/base64url runs, `depth` levels down; a
 *  value still there encoded afterwards is stuck. */
function scan<T>(text: string, s: Scan<T>, depth: number, hits: Hits<T>): string {
  let out = replaceRaw(text, s.copies, hits.hit);
  if (depth > 0) {
    out = out.replace(RUN, (run) => {
      // The run may carry a few characters of its neighbour (`token=dXNl…` has none; `xdXNl…` one).
      for (let at = 0; at < 4 && run.length - at >= 12; at++) {
        const decoded = decodeRun(run.slice(at));
        if (!decoded) continue;
        const inner: Hits<T> = { hit: new Set(), stuck: new Set() };
        const rewritten = scan(decoded.bytes.toString('latin1'), s, depth - 1, inner);
        if (inner.hit.size + inner.stuck.size === 0) continue;
        for (const c of [...inner.hit, ...inner.stuck]) hits.hit.add(c);
        for (const c of inner.stuck) hits.stuck.add(c);
        return run.slice(0, at) + encodeRun(Buffer.from(rewritten, 'latin1'), decoded.url, decoded.padded);
      }
      return run;
    });
  }
  for (const c of s.copies) if (s.cores.get(c)!.some((core) => out.includes(core))) hits.stuck.add(c);
  return out;
}

/** Every copy of the values in `text`, raw or encoded, replaced by its sentinel. */
export function replaceCopies<T>(text: string, copies: ReadonlyArray<Copy<T>>): Found<T> {
  const usable = copies.filter((c) => c.real.length >= MIN_FORM_LENGTH).sort((a, b) => b.real.length - a.real.length);
  const s: Scan<T> = { copies: usable, cores: new Map(usable.map((c) => [c, cores(c.real)])) };
  const raw = new Set<Copy<T>>();
  const top = replaceRaw(latin1(text), usable, raw);
  const below: Hits<T> = { hit: new Set(), stuck: new Set() };
  const out = scan(top, s, MAX_DEPTH, below);
  const all = [...raw, ...below.hit, ...below.stuck];
  return {
    text: Buffer.from(out, 'latin1').toString('utf8'),
    raw: [...raw].map((c) => c.tag),
    encoded: [...new Set([...below.hit, ...below.stuck])].filter((c) => !raw.has(c)).map((c) => c.tag),
    stuck: [...below.stuck].map((c) => c.tag),
    withhold: all.some((c) => c.sentinel === null) || below.stuck.size > 0,
  };
}
