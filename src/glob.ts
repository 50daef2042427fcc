// Paths as srt reads them in settings: globs (`*`, `**`, `?`, `[abc]`, `[a-z]`, `[!abc]`) and
// containment. One tokenizer, two outputs: a JavaScript RegExp (Linux glob expansion, the access
// model) and a POSIX extended regular expression (Seatbelt's regex dialect, for macOS profiles).
// Settings validation, both backends and expansion all read a glob through parseGlob, so a glob
// means the same thing everywhere.
//
// Grammar (over Unicode code points):
//   `**/`  zero or more whole path segments       `**`  any text, `/` included
//   `*`    any text within one segment             `?`   one character other than `/`
//   `[…]`  one character of the set; the body is everything up to the next `]`, at least one
//          character, never `/`; a leading `!` or `^` negates it; `a-z` is a range. Neither form
//          ever matches `/`. A `[` that does not start such a body is a literal `[`.
//   anything else is itself; there is no escape character (name a path literally with
//   `{ "path": …, "literal": true }`).

import { dirname, sep } from 'node:path';

export type GlobToken =
  | { kind: 'text'; text: string }
  | { kind: 'star' }
  | { kind: 'globstar' }
  | { kind: 'segments' }
  | { kind: 'char' }
  /** Code point ranges [from, to], sorted and disjoint, never containing `/`. */
  | { kind: 'class'; negated: boolean; ranges: [number, number][] };

const SLASH = 0x2f;

/** Sorted, merged ranges without `/`. */
function normaliseRanges(ranges: [number, number][]): [number, number][] {
  const split: [number, number][] = [];
  for (const [a, b] of ranges) {
    if (a <= SLASH && SLASH <= b) {
      if (a < SLASH) split.push([a, SLASH - 1]);
      if (b > SLASH) split.push([SLASH + 1, b]);
    } else split.push([a, b]);
  }
  split.sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const r of split) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}

/** The class starting at chars[i] (a `[`), or null when it is a literal `[`. */
function parseClass(chars: string[], i: number): { token: GlobToken; end: number } | null {
  const close = chars.indexOf(']', i + 1);
  if (close <= i + 1) return null;
  let body = chars.slice(i + 1, close);
  if (body.includes('/')) return null;
  let negated = false;
  if ((body[0] === '!' || body[0] === '^') && body.length > 1) {
    negated = true;
    body = body.slice(1);
  }
  const ranges: [number, number][] = [];
  for (let k = 0; k < body.length; k++) {
    const from = body[k]!.codePointAt(0)!;
    if (body[k + 1] === '-' && k + 2 < body.length) {
      const to = body[k + 2]!.codePointAt(0)!;
      if (to < from) throw new Error(`Range out of order in character class: ${body[k]}-${body[k + 2]}`);
      ranges.push([from, to]);
      k += 2;
    } else ranges.push([from, from]);
  }
  return { token: { kind: 'class', negated, ranges: normaliseRanges(ranges) }, end: close };
}

/** The tokens of a glob. Throws on a character range written backwards (`[z-a]`). */
export function parseGlob(glob: string): GlobToken[] {
  const chars = [...glob];
  const out: GlobToken[] = [];
  let text = '';
  const push = (t: GlobToken) => {
    if (text) out.push({ kind: 'text', text });
    text = '';
    out.push(t);
  };
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '*') {
      if (chars[i + 1] === '*') {
        i++;
        if (chars[i + 1] === '/') { i++; push({ kind: 'segments' }); } else push({ kind: 'globstar' });
      } else push({ kind: 'star' });
    } else if (c === '?') push({ kind: 'char' });
    else if (c === '[') {
      const cls = parseClass(chars, i);
      if (cls) { push(cls.token); i = cls.end; } else text += c;
    } else text += c;
  }
  if (text) out.push({ kind: 'text', text });
  return out;
}

/** A path taken literally, as tokens (to prefix a glob tail with a directory that may contain `*`). */
export function literalTokens(path: string): GlobToken[] {
  return path ? [{ kind: 'text', text: path }] : [];
}

/** Does this path (or path segment) contain glob syntax? A lone `[` is a literal character. */
export function isGlob(text: string): boolean {
  if (!/[*?[]/.test(text)) return false; // the only characters parseGlob treats as syntax
  try {
    return parseGlob(text).some((t) => t.kind !== 'text');
  } catch {
    return true; // a malformed class is still glob syntax (and an error where it is parsed)
  }
}

/** The directory part of an absolute glob before its first segment with glob syntax (the path
 *  itself when it has none). */
export function globBase(glob: string): string {
  const segs = glob.split('/');
  const i = segs.findIndex(isGlob);
  if (i < 0) return glob;
  return segs.slice(0, i).join('/') || '/';
}

/** Is `p` equal to or below `base`? (Both absolute and normalised.) */
export function isWithin(p: string, base: string): boolean {
  return p === base || base === '/' || p.startsWith(base + sep);
}

/** An absolute path, then each directory above it up to "/": every path `isWithin` it is within. */
export function selfAndAncestors(p: string): string[] {
  const out = [p];
  for (let a = p; a !== '/' && a !== '.'; ) out.push((a = dirname(a)));
  return out;
}

// --- JavaScript (flags `su`: code points, `.` matches newlines, as file names may hold them)

const JS_SPECIAL = /[\\^$.*+?()[\]{}|/]/;
const JS_CLASS_SPECIAL = /[\\\]\[^-]/;

function jsChar(cp: number, inClass: boolean): string {
  const c = String.fromCodePoint(cp);
  return (inClass ? JS_CLASS_SPECIAL : JS_SPECIAL).test(c) ? `\\${c}` : c;
}

/** Regex source (unanchored) for the tokens, for a RegExp with flags `su`. */
export function tokensToJs(tokens: GlobToken[]): string {
  return tokens.map((t) => {
    switch (t.kind) {
      case 'text': return [...t.text].map((c) => jsChar(c.codePointAt(0)!, false)).join('');
      case 'star': return '[^/]*';
      case 'globstar': return '.*';
      case 'segments': return '(?:.*/)?';
      case 'char': return '[^/]';
      case 'class': {
        const body = t.ranges.map(([a, b]) => jsChar(a, true) + (b > a ? `-${jsChar(b, true)}` : '')).join('');
        return t.negated ? `[^/${body}]` : `[${body}]`;
      }
    }
  }).join('');
}

/** Glob → anchored RegExp over absolute paths (`**` crosses `/`, `*` and `?` do not). For
 *  validation and for regexes handed on; to match paths use globMatcher (no backtracking). */
export function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${tokensToJs(parseGlob(glob))}$`, 'su');
}

function inClass(t: Extract<GlobToken, { kind: 'class' }>, cp: number): boolean {
  const hit = t.ranges.some(([a, b]) => a <= cp && cp <= b);
  return t.negated ? !hit : hit;
}

/**
 * Does the whole of `text` match `tokens`? Dynamic programming over tokens × code points, so a
 * hostile glob (`*a*a*a*…b`, from a settings file) against a long name costs O(tokens × length),
 * never the exponential backtracking a RegExp can fall into.
 */
export function matchTokens(tokens: GlobToken[], text: string): boolean {
  const s = [...text].map((c) => c.codePointAt(0)!);
  const n = s.length;
  // next[j]: tokens after the current one match s[j..]; filled from the last token backwards.
  let next = new Uint8Array(n + 1);
  next[n] = 1;
  for (let i = tokens.length - 1; i >= 0; i--) {
    const t = tokens[i]!;
    const cur = new Uint8Array(n + 1);
    if (t.kind === 'text') {
      const want = [...t.text].map((c) => c.codePointAt(0)!);
      for (let j = 0; j + want.length <= n; j++) {
        if (next[j + want.length] && want.every((cp, k) => s[j + k] === cp)) cur[j] = 1;
      }
    } else if (t.kind === 'char' || t.kind === 'class') {
      for (let j = 0; j < n; j++) {
        if (next[j + 1] && s[j] !== SLASH && (t.kind === 'char' || inClass(t, s[j]!))) cur[j] = 1;
      }
    } else {
      // star: any run without `/`; globstar: any run; segments: empty, or any run ending in `/`
      // (ending: some s[k] === '/' at or after j with the rest matching after it).
      let ending = 0;
      for (let j = n; j >= 0; j--) {
        if (t.kind === 'segments') {
          if (j < n && s[j] === SLASH && next[j + 1]) ending = 1;
          cur[j] = next[j] || ending ? 1 : 0;
        } else cur[j] = next[j] || (j < n && (t.kind === 'globstar' || s[j] !== SLASH) && cur[j + 1]) ? 1 : 0;
      }
    }
    next = cur;
  }
  return next[0] === 1;
}

/** A matcher for a whole path (or one name) against a glob, in time linear in their sizes' product. */
export function globMatcher(glob: string): (text: string) => boolean {
  const tokens = parseGlob(glob);
  return (text) => matchTokens(tokens, text);
}

// --- POSIX ERE (Seatbelt). Outside brackets the ERE specials are backslash-escaped; inside a
// bracket expression nothing can be escaped, so `]` goes first, `-` last, `^` never first, `[`
// before `^`/`-` (never before `.`, `:` or `=`), and `\` is written twice (a literal in POSIX,
// and still one backslash for a matcher that treats `\` as an escape).

const ERE_SPECIAL = new Set([...'.[\\()*+?{|^$']);

const isUpper = (cp: number) => cp >= 0x41 && cp <= 0x5a;
const isLower = (cp: number) => cp >= 0x61 && cp <= 0x7a;

function ereText(text: string, foldCase: boolean): string {
  let out = '';
  for (const c of text) {
    const cp = c.codePointAt(0)!;
    if (foldCase && (isUpper(cp) || isLower(cp))) out += `[${c.toUpperCase()}${c.toLowerCase()}]`;
    else out += ERE_SPECIAL.has(c) ? `\\${c}` : c;
  }
  return out;
}

/** ASCII letters of the ranges in the other case too. */
function foldRanges(ranges: [number, number][]): [number, number][] {
  const extra: [number, number][] = [];
  for (const [a, b] of ranges) {
    for (const [lo, hi, shift] of [[0x41, 0x5a, 0x20], [0x61, 0x7a, -0x20]] as const) {
      const from = Math.max(a, lo);
      const to = Math.min(b, hi);
      if (from <= to) extra.push([from + shift, to + shift]);
    }
  }
  return normaliseRanges([...ranges, ...extra]);
}

const ERE_BRACKET_SPECIAL = [0x5d /* ] */, 0x5e /* ^ */, 0x2d /* - */, 0x5b /* [ */, 0x5c /* \ */];

function ereClass(negated: boolean, input: [number, number][], foldCase: boolean): string {
  const ranges = foldCase ? foldRanges(input) : input;
  if (!negated && ranges.length === 1 && ranges[0]![0] === ranges[0]![1]) return ereText(String.fromCodePoint(ranges[0]![0]), false);
  const has = new Set<number>();
  let plain: [number, number][] = ranges;
  for (const s of ERE_BRACKET_SPECIAL) {
    const next: [number, number][] = [];
    for (const [a, b] of plain) {
      if (a <= s && s <= b) {
        has.add(s);
        if (a < s) next.push([a, s - 1]);
        if (b > s) next.push([s + 1, b]);
      } else next.push([a, b]);
    }
    plain = next;
  }
  const c = (cp: number) => String.fromCodePoint(cp);
  const pieces: string[] = [];
  if (has.has(0x5d)) pieces.push(']');
  if (negated) pieces.push('/');
  // A range's `-` between two ordinary characters is the range operator; a two-character range
  // is written as its two characters (no `-` needed).
  for (const [a, b] of plain) pieces.push(b === a ? c(a) : b === a + 1 ? c(a) + c(b) : `${c(a)}-${c(b)}`);
  if (has.has(0x5c)) pieces.push('\\\\');
  if (has.has(0x5b)) pieces.push('[');
  if (has.has(0x5e)) pieces.push('^');
  if (has.has(0x2d)) pieces.push('-');
  // A positive set of only `^` and `-`: `-` first is literal, `^` second is not a negation.
  if (!negated && pieces[0] === '^') pieces.reverse();
  return `[${negated ? '^' : ''}${pieces.join('')}]`;
}

export interface EreOptions {
  /** Match ASCII letters in either case (macOS volumes are case-insensitive by default). */
  foldCase?: boolean;
}

/** POSIX ERE (unanchored) for the tokens. */
export function tokensToEre(tokens: GlobToken[], opts: EreOptions = {}): string {
  const fold = opts.foldCase === true;
  return tokens.map((t) => {
    switch (t.kind) {
      case 'text': return ereText(t.text, fold);
      case 'star': return '[^/]*';
      case 'globstar': return '.*';
      case 'segments': return '(.*/)?';
      case 'char': return '[^/]';
      case 'class': return ereClass(t.negated, t.ranges, fold);
    }
  }).join('');
}

/** Glob → anchored POSIX ERE over absolute paths: the Seatbelt twin of globToRegExp. */
export function globToEre(glob: string, opts: EreOptions = {}): string {
  return `^${tokensToEre(parseGlob(glob), opts)}$`;
}
