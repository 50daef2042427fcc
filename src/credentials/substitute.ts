// Streaming multi-pattern substitution: sentinels → real values on the way out, real values →
// sentinels on the way back, and tripwire patterns that stop a stream (SPEC §7).
//
// Streaming without added latency: each chunk is forwarded at once except its trailing bytes
// that could still begin a pattern (a proper prefix of one), which wait for the next chunk —
// never more, and never a timer: at the end of the stream they are flushed. The result is the
// same as substituting the whole stream at once, however it is chunked: leftmost match first,
// the longest pattern at that position, no overlaps (the property tests check this).
// Search uses Buffer.indexOf (native, sublinear for long needles) per pattern, with each
// pattern's next occurrence cached, so a clean chunk costs a few native scans and no copy.

export interface Pattern<T = unknown> {
  from: Buffer;
  /** Replacement; null = a tripwire: the stream stops when it is seen. */
  to: Buffer | null;
  tag: T;
}

export type PushResult<T> = { out: Buffer; trip?: undefined } | { out: Buffer; trip: Pattern<T> };

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** `value` percent-encoded (every byte but RFC 3986's unreserved characters), hex in one case. */
export function percentEncode(value: string, upper: boolean): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    if (byte < 0x80 && UNRESERVED.test(ch)) out += ch;
    else {
      const hex = byte.toString(16).padStart(2, '0');
      out += `%${upper ? hex.toUpperCase() : hex}`;
    }
  }
  return out;
}

/**
 * The spellings a value travels in within a URL, a form body or a header — raw, and
 * percent-encoded in either hex case — each paired with the same spelling of its replacement.
 */
export function spellingPairs(from: string, to: string): Array<[string, string]> {
  const out = new Map<string, string>([[from, to]]);
  for (const upper of [true, false]) {
    const f = percentEncode(from, upper);
    if (!out.has(f)) out.set(f, percentEncode(to, upper));
  }
  return [...out];
}

export class Matcher<T = unknown> {
  readonly patterns: readonly Pattern<T>[];
  readonly maxLength: number;
  /** Every replacement has the length of what it replaces (so Content-Length can stay). */
  readonly lengthPreserving: boolean;

  constructor(patterns: Pattern<T>[]) {
    this.patterns = patterns.filter((p) => p.from.length > 0);
    this.maxLength = Math.max(0, ...this.patterns.map((p) => p.from.length));
    this.lengthPreserving = this.patterns.every((p) => p.to === null || p.to.length === p.from.length);
  }

  get empty(): boolean {
    return this.patterns.length === 0;
  }

  /** Substitute a whole buffer (the reference the streaming form must equal). */
  all(data: Buffer): PushResult<T> {
    return new Substitution(this).end(data);
  }
}

/** One stream's substitution state. */
export class Substitution<T = unknown> {
  private carry: Buffer = Buffer.alloc(0);

  constructor(private readonly matcher: Matcher<T>) {}

  /** Bytes held back right now (a proper prefix of some pattern). */
  get held(): number {
    return this.carry.length;
  }

  /** Feed a chunk; returns what may be forwarded now (or the tripwire that fired). */
  push(chunk: Buffer): PushResult<T> {
    const data = this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]);
    return this.scan(data, false);
  }

  /** The stream ended (with an optional last chunk): everything left, substituted. */
  end(chunk?: Buffer): PushResult<T> {
    const data = chunk === undefined ? this.carry : this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]);
    return this.scan(data, true);
  }

  /**
   * Positions in the tail of `data` where a pattern could still begin: `data[p..]` is a proper
   * prefix of some pattern. Only the last maxLength-1 bytes can be such positions.
   */
  private undecided(data: Buffer): number[] {
    const { patterns, maxLength } = this.matcher;
    const from = Math.max(0, data.length - maxLength + 1);
    const out: number[] = [];
    for (let p = from; p < data.length; p++) {
      const rest = data.length - p;
      for (const pat of patterns) {
        if (pat.from.length > rest && pat.from[0] === data[p] && data.compare(pat.from, 0, rest, p, data.length) === 0) {
          out.push(p);
          break;
        }
      }
    }
    return out;
  }

  private scan(data: Buffer, final: boolean): PushResult<T> {
    const { patterns } = this.matcher;
    const undecided = final ? [] : this.undecided(data);
    const next = patterns.map((p) => data.indexOf(p.from));
    const parts: Buffer[] = [];
    let c = 0;
    for (;;) {
      // The first position a pattern could still begin at, at or after the cursor.
      const u = undecided.find((p) => p >= c) ?? data.length;
      let best = -1;
      for (let i = 0; i < patterns.length; i++) {
        if (next[i]! !== -1 && next[i]! < c) next[i] = data.indexOf(patterns[i]!.from, c);
        const at = next[i]!;
        if (at === -1) continue;
        if (best === -1 || at < next[best]! || (at === next[best]! && patterns[i]!.from.length > patterns[best]!.from.length)) best = i;
      }
      if (best === -1 || next[best]! >= u) {
        if (c === 0 && u === data.length && parts.length === 0) {
          this.carry = Buffer.alloc(0);
          return { out: data }; // the common case: nothing to change, nothing copied
        }
        parts.push(data.subarray(c, u));
        this.carry = Buffer.from(data.subarray(u));
        return { out: parts.length === 1 ? parts[0]! : Buffer.concat(parts) };
      }
      const pat = patterns[best]!;
      const at = next[best]!;
      parts.push(data.subarray(c, at));
      if (pat.to === null) {
        this.carry = Buffer.alloc(0);
        return { out: Buffer.concat(parts), trip: pat };
      }
      parts.push(pat.to);
      c = at + pat.from.length;
    }
  }
}
