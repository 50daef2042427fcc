// The forms a value travels in (SPEC §7). srt writes a value into a request raw or
// percent-encoded (and inside an `Authorization: Basic` credential it re-encodes); an upstream that
// echoes a request may hand it back in other forms, and a command may hide a sentinel in them on
// its way out. These are the forms re-masking replaces and the tripwire looks for:
//   - the spellings: raw, and percent-encoded in either hex case (every reserved character, or
//     all but `/`);
//   - of each spelling: percent-encoded (again), base64 and base64url at each of the three
//     alignments (the value inside a larger blob: only the characters that encode the value's
//     bytes alone), hex in either case, and the JSON string escapes common serializers write.

/** Values shorter than this are looked for raw and percent-encoded only (and not at all in other
 *  variables and files, copies.ts): their other forms are a few characters that turn up in
 *  ordinary data by chance. */
export const MIN_FORM_LENGTH = 8;

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** What percent-encoders leave raw beyond RFC 3986's unreserved characters: nothing, or `/`
 *  (Python's `quote`, path encoders). */
const KEPT = ['', '/'];

/** `value` (a string's UTF-8 bytes, or bytes) percent-encoded: every byte but RFC 3986's
 *  unreserved characters and those in `keep`, hex in one case. */
export function percentEncode(value: string | Buffer, upper: boolean, keep = ''): string {
  let out = '';
  for (const byte of typeof value === 'string' ? Buffer.from(value, 'utf8') : value) {
    const ch = String.fromCharCode(byte);
    if (byte < 0x80 && (UNRESERVED.test(ch) || keep.includes(ch))) out += ch;
    else {
      const hex = byte.toString(16).padStart(2, '0');
      out += `%${upper ? hex.toUpperCase() : hex}`;
    }
  }
  return out;
}

/** The percent-encoded spellings of `from`, each paired with the same spelling of `to`. */
function percentSpellings(from: Buffer, to: Buffer): Array<[string, string]> {
  return KEPT.flatMap((keep) => [true, false].map((upper): [string, string] => [percentEncode(from, upper, keep), percentEncode(to, upper, keep)]));
}

/**
 * The spellings a value travels in within a URL, a form body or a header — raw, and
 * percent-encoded in either hex case (every reserved character, or all but `/`) — each paired
 * with the same spelling of its replacement.
 */
export function spellingPairs(from: string, to: string): Array<[string, string]> {
  const out = new Map<string, string>([[from, to]]);
  for (const [f, t] of percentSpellings(Buffer.from(from, 'utf8'), Buffer.from(to, 'utf8'))) if (!out.has(f)) out.set(f, t);
  return [...out];
}

/**
 * The base64 (or base64url) characters that encode `bytes` alone when they start `offset` bytes
 * (0–2) into a 3-byte group: a character that mixes in bits of a neighbouring byte is left out.
 */
export function base64Core(bytes: Buffer, offset: number, url: boolean): string {
  const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString(url ? 'base64url' : 'base64');
  return text.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
}

/** How a serializer escapes a string in JSON beyond `"`, `\` and control characters. */
interface JsonEscape {
  /** Characters written as `\uXXXX`. */
  chars?: RegExp;
  upper?: boolean;
  /** `/` written as `\/`. */
  slash?: boolean;
}

const JSON_ESCAPES: readonly JsonEscape[] = [
  {}, // JSON.stringify, Python without ensure_ascii, Jackson, serde
  { slash: true }, // PHP
  { chars: /[\u0080-\uffff]/ }, // Python's ensure_ascii
  { chars: /[<>&\u2028\u2029]/ }, // Go
  { chars: /[<>&='\u2028\u2029]/ }, // Gson
  { chars: /[<>&'"+`\u0080-\uffff]/, upper: true }, // .NET System.Text.Json
  { chars: /[^A-Za-z0-9]/ },
  { chars: /[^A-Za-z0-9]/, upper: true },
  { chars: /[^]/ },
  { chars: /[^]/, upper: true },
];

/** Every character JSON or the serializer escapes (one regex per serializer, made once). */
const ESCAPED = new Map(JSON_ESCAPES.map((e) => [e, new RegExp(`[\\u0000-\\u001f"\\\\${e.slash ? '/' : ''}]${e.chars ? `|${e.chars.source}` : ''}`, 'g')]));

function jsonEscape(text: string, e: JsonEscape): string {
  return text.replace(ESCAPED.get(e)!, (c) => {
    if (e.chars?.test(c)) {
      const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${e.upper ? hex.toUpperCase() : hex}`;
    }
    return c === '/' ? '\\/' : JSON.stringify(c).slice(1, -1);
  });
}

/** The forms of one spelling other than itself, each as [form of from, form of to]. */
function encodings(from: Buffer, to: Buffer): Array<[string, string]> {
  // Percent-encoded again: a URL that carried the value, inside another URL (`?next=…`).
  const out: Array<[string, string]> = [true, false].map((upper) => [percentEncode(from, upper), percentEncode(to, upper)]);
  for (const url of [false, true]) for (const offset of [0, 1, 2]) out.push([base64Core(from, offset, url), base64Core(to, offset, url)]);
  const hex: [string, string] = [from.toString('hex'), to.toString('hex')];
  out.push(hex, [hex[0].toUpperCase(), hex[1].toUpperCase()]);
  const text = [from.toString('utf8'), to.toString('utf8')] as const;
  // Bytes that are not UTF-8 reach a JSON serializer as something else: no JSON form.
  if (Buffer.from(text[0], 'utf8').equals(from) && Buffer.from(text[1], 'utf8').equals(to)) {
    for (const e of JSON_ESCAPES) out.push([jsonEscape(text[0], e), jsonEscape(text[1], e)]);
  }
  return out;
}

/**
 * Every form of `from` (see the top of this file), each paired with the same form of `to`, without
 * duplicates; only the spellings for a value shorter than MIN_FORM_LENGTH bytes. Text is taken as
 * its UTF-8 bytes, and so are the forms.
 */
export function formPairs(from: string | Buffer, to: string | Buffer): Array<[Buffer, Buffer]> {
  const utf8 = (v: string | Buffer) => (typeof v === 'string' ? Buffer.from(v, 'utf8') : v);
  const f = utf8(from);
  const out = new Map<string, [Buffer, Buffer]>();
  const add = (a: string | Buffer, b: string | Buffer) => {
    const key = utf8(a).toString('latin1');
    if (key.length > 0 && !out.has(key)) out.set(key, [utf8(a), utf8(b)]);
  };
  add(f, utf8(to));
  for (const [a, b] of percentSpellings(f, utf8(to))) add(a, b);
  if (f.length >= MIN_FORM_LENGTH) {
    for (const [spelling, replacement] of [...out.values()]) for (const [a, b] of encodings(spelling, replacement)) add(a, b);
  }
  return [...out.values()];
}
