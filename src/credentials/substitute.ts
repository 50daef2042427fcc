// Streaming multi-pattern substitution: sentinels → real values on the way out, real values →
// sentinels on the way back, and tripwire patterns that stop a stream (SPEC §7).
//
// Streaming without added latency: each chunk is forwarded at once except its trailing bytes
// that could still begin a pattern (a proper prefix of one), which wait for the next chunk —
// never more, and never a timer: at the end of the stream they are flushed. The result is the
// same as substituting the whole stream at once, however it is chunked: leftmost match first,
// the longest pattern at that position, no overlaps (the property tests check this).
// Search is one pass for all patterns together (Wu–Manber): a window as long as the shortest
// pattern slides over the data, and a table indexed by the hash of the window's last three bytes
// says how far it may jump — up to the window's length when those bytes end no pattern's first
// window. So a clean chunk costs a fraction of a step per byte however many patterns there are
// (every form of every value: hundreds), and is returned without a copy.

export interface Pattern<T = unknown> {
  from: Buffer;
  /** Replacement; null = a tripwire: the stream stops when it is seen. */
  to: Buffer | null;
  tag: T;
}

export type PushResult<T> = { out: Buffer; trip?: undefined } | { out: Buffer; trip: Pattern<T> };

/** Where the next pattern begins: `pattern` is its index, or -1 when more data could still make
 *  a pattern begin at `at` (a proper prefix of one ends the data there). */
interface Found {
  at: number;
  pattern: number;
}

/** Hash (16 bits) of the block of up to 3 bytes that ends at `e`. */
function blockHash(d: Uint8Array, e: number, block: number): number {
  return ((block === 3 ? d[e - 2]! << 10 : 0) ^ (block >= 2 ? d[e - 1]! << 5 : 0) ^ d[e]!) & 0xffff;
}

export class Matcher<T = unknown> {
  readonly patterns: readonly Pattern<T>[];
  readonly maxLength: number;
  /** Every replacement has the length of what it replaces (so Content-Length can stay). */
  readonly lengthPreserving: boolean;
  /** The shortest pattern's length: the window the skip table looks through. */
  private readonly window: number;
  /** Bytes hashed at the window's end (3, or fewer for shorter patterns). */
  private readonly block: number;
  /** By block hash: how far the window may move without passing the first window of a pattern. */
  private readonly skip: Uint8Array;
  /** By block hash: the patterns whose first window ends with a block of that hash. */
  private readonly ends = new Map<number, number[]>();
  /** Every pattern, in byte order: those that begin with given bytes are a run of them. */
  private readonly sorted: Buffer[];
  private readonly firstBytes = new Uint8Array(256);

  constructor(patterns: Pattern<T>[]) {
    this.patterns = patterns.filter((p) => p.from.length > 0);
    this.maxLength = Math.max(0, ...this.patterns.map((p) => p.from.length));
    this.lengthPreserving = this.patterns.every((p) => p.to === null || p.to.length === p.from.length);
    const m = this.patterns.length === 0 ? 1 : Math.min(...this.patterns.map((p) => p.from.length));
    this.window = m;
    this.sorted = this.patterns.map((p) => p.from).sort(Buffer.compare);
    this.block = Math.min(3, m);
    this.skip = new Uint8Array(1 << 16).fill(Math.min(255, m - this.block + 1));
    this.patterns.forEach((p, i) => {
      const f = p.from;
      this.firstBytes[f[0]!] = 1;
      for (let j = this.block - 1; j < m; j++) {
        const h = blockHash(f, j, this.block);
        this.skip[h] = Math.min(this.skip[h]!, m - 1 - j);
      }
      const h = blockHash(f, m - 1, this.block);
      const list = this.ends.get(h);
      if (list) list.push(i);
      else this.ends.set(h, [i]);
    });
  }

  get empty(): boolean {
    return this.patterns.length === 0;
  }

  /** Substitute a whole buffer (the reference the streaming form must equal). */
  all(data: Buffer, onReplace?: (p: Pattern<T>) => void): PushResult<T> {
    return new Substitution(this, onReplace).end(data);
  }

  /**
   * The leftmost position at or after `from` where a pattern begins (the longest one there), or
   * — unless `final` — where one may still begin once more data comes; null when neither.
   */
  next(data: Buffer, from: number, final: boolean): Found | null {
    const n = data.length;
    const m = this.window;
    const { skip, block, patterns } = this;
    if (patterns.length === 0) return null;
    for (let e = from + m - 1; e < n; ) {
      const h = blockHash(data, e, block);
      const s = skip[h]!;
      if (s > 0) {
        e += s;
        continue;
      }
      const at = e - m + 1;
      let best = -1;
      let open = false;
      for (const i of this.ends.get(h) ?? []) {
        const f = patterns[i]!.from;
        if (f[0] !== data[at]) continue;
        if (f.length <= n - at) {
          if ((best === -1 || f.length > patterns[best]!.from.length) && data.compare(f, 0, f.length, at, at + f.length) === 0) best = i;
        } else if (!final && data.compare(f, 0, n - at, at, n) === 0) open = true;
      }
      // A longer pattern may still complete here: the position waits, whatever matched already.
      if (open) return { at, pattern: -1 };
      if (best !== -1) return { at, pattern: best };
      e++;
    }
    if (final) return null;
    for (let at = Math.max(from, n - m + 1); at < n; at++) if (this.firstBytes[data[at]!] && this.begins(data, at)) return { at, pattern: -1 };
    return null;
  }

  /** Does a pattern begin with `data[at..]` (fewer bytes than any pattern has)? The first pattern
   *  not below them in byte order tells. */
  private begins(data: Buffer, at: number): boolean {
    const { sorted } = this;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sorted[mid]!.compare(data, at) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo < sorted.length && data.compare(sorted[lo]!, 0, data.length - at, at) === 0;
  }
}

/** One stream's substitution state. */
export class Substitution<T = unknown> {
  private carry: Buffer = Buffer.alloc(0);

  /** `onReplace`: told of each replacement made (which secret a request used). */
  constructor(private readonly matcher: Matcher<T>, private readonly onReplace?: (p: Pattern<T>) => void) {}

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

  private scan(data: Buffer, final: boolean): PushResult<T> {
    const { patterns } = this.matcher;
    const parts: Buffer[] = [];
    let c = 0;
    for (;;) {
      const found = this.matcher.next(data, c, final);
      if (found === null || found.pattern === -1) {
        const u = found?.at ?? data.length;
        if (c === 0 && u === data.length) {
          this.carry = Buffer.alloc(0);
          return { out: data }; // the common case: nothing to change, nothing copied
        }
        parts.push(data.subarray(c, u));
        this.carry = Buffer.from(data.subarray(u));
        return { out: parts.length === 1 ? parts[0]! : Buffer.concat(parts) };
      }
      const pat = patterns[found.pattern]!;
      parts.push(data.subarray(c, found.at));
      if (pat.to === null) {
        this.carry = Buffer.alloc(0);
        return { out: Buffer.concat(parts), trip: pat };
      }
      parts.push(pat.to);
      this.onReplace?.(pat);
      c = found.at + pat.from.length;
    }
  }
}
