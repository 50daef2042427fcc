// The credential stage of the proxy's request/response pipeline (SPEC §7, §10 invariants 5, 11
// and 12). Per request, every secret of the plan is one of:
//   own     — this destination is in its injectHosts and the request is readable in a way that
//             may carry it (terminated TLS, or plain HTTP with allowPlaintextInject): its
//             sentinel is replaced by the real value in the places its injectInto names;
//   foreign — this destination is not in its injectHosts: its sentinel, in any of its forms
//             (forms.ts), anywhere srt can see it (host name, request target, header, body, the
//             plaintext of an opaque tunnel) stops the request with 403
//             `X-Proxy-Error: sentinel-not-allowed-here`;
//   neither — an inject host over plain HTTP without allowPlaintextInject: passed unchanged, and
//             said at the end ("not injected: plain HTTP").
// Every response srt can read gets every real value replaced by its sentinel again, in every form
// of the value and of each piece srt itself wrote into a request in place of what the command
// sent (the `Basic` credential it re-encoded): recorded as it writes them, so a new way of
// injecting is re-masked without a list to keep. A response from a host real values go to is
// decoded first (every Content-Encoding layer; upstream-send.ts removes transfer codings), or refused
// when srt cannot decode it: a real value could hide in it.

import { Transform } from 'node:stream';
import { codings, DECODABLE, decode } from '../proxy/codings.js';
import { ruleMatches } from '../proxy/domains.js';
import type { Target } from '../proxy/gate.js';
import { RefusedError, SIGN_ONLY, through, type Header, type ProxyRequest, type ProxyResponse, type Refusal, type Stage, type TunnelInfo } from '../proxy/pipeline.js';
import { formPairs, MIN_FORM_LENGTH, spellingPairs } from './forms.js';
import type { UseSink } from './mint-stage.js';
import type { Secret } from './plan.js';
import { Matcher, Substitution, type Pattern } from './substitute.js';

/** What the stage needs of a destination (the proxy's authorized Target has it). */
type Destination = Pick<Target, 'host' | 'port'>;

/** Held bytes that could begin a pattern are forwarded after this long without new data from the
 *  sender (not while the reader is slow, nor while srt itself was stalled): an interactive stream
 *  (gRPC ping-pong, a TLS handshake) must never wait for bytes that may not come. The price: a
 *  value the sender splits with a pause this long is not substituted (injected or re-masked); a
 *  foreign sentinel split so is still stopped, before its last part leaves. */
export const HOLD_MS = holdMs(process.env.SRT_CREDENTIAL_HOLD_MS);

/** `SRT_CREDENTIAL_HOLD_MS` (docs/tls-and-credentials.md): a longer wait for machines whose senders stall (50–10000). */
export function holdMs(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= 50 && n <= 10_000 ? n : 250;
}

type Tag = { secret: Secret };

/** Each secret's patterns, computed once per kind. */
const patternsOf = new WeakMap<Secret, Map<string, Pattern<Tag>[]>>();

/**
 * The secrets' patterns: `inject` their sentinels → real values, in the spellings srt writes (the
 * ones the command wrote the sentinel in); `remask` real values → sentinels and `trip` the
 * sentinels, in every form (forms.ts) or, with `spellings`, raw and percent-encoded only.
 */
function patterns(secrets: readonly Secret[], dir: 'inject' | 'remask' | 'trip', spellings = false): Pattern<Tag>[] {
  return secrets.flatMap((secret) => {
    const key = `${dir}${spellings || dir === 'inject' ? ' spellings' : ''}`;
    let cache = patternsOf.get(secret);
    if (!cache) patternsOf.set(secret, (cache = new Map()));
    let list = cache.get(key);
    if (!list) {
      const tag = { secret };
      const [from, to] = dir === 'remask' ? [secret.real, secret.sentinel] : [secret.sentinel, dir === 'inject' ? secret.real : secret.sentinel];
      const pairs = spellings || dir === 'inject' ? spellingPairs(from, to).map(([f, t]) => [Buffer.from(f, 'utf8'), Buffer.from(t, 'utf8')] as const) : formPairs(from, to);
      list = pairs.map(([f, t]) => ({ from: f, to: dir === 'trip' ? null : t, tag }));
      cache.set(key, list);
    }
    return list;
  });
}

/** Pieces of srt's own writing it keeps in view (most recent): what a flood of new ones evicts is
 *  still re-masked through the forms of the real value it holds, up to its first and last byte. */
const WRITTEN_PIECES = 32;
/** Where srt's writing is compared with the command's, piece by piece. */
const DELIMITERS = /[\s,;&?=:"'(){}[\]<>]+/;

const latin1 = (s: string) => Buffer.from(s, 'latin1');

/** Apply a matcher to a whole header value or request target (bytes as node:http gives them). */
function rewrite<T>(text: string, m: Matcher<T>, onReplace?: (p: Pattern<T>) => void): { text: string; trip?: T; changed: boolean } {
  if (m.empty) return { text, changed: false };
  const r = m.all(latin1(text), onReplace);
  if (r.trip) return { text, trip: r.trip.tag, changed: false };
  const out = r.out.toString('latin1');
  return { text: out, changed: out !== text };
}

/** `%XX` sequences decoded to the bytes they stand for (latin1, like the text). */
function percentDecode(text: string): string {
  return text.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

function header(headers: Header[], name: string): string | undefined {
  return headers.find(([k]) => k.toLowerCase() === name)?.[1];
}

function headerLines(headers: Header[], name: string): string[] {
  return headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => v);
}

function withoutHeader(headers: Header[], name: string): Header[] {
  return headers.filter(([k]) => k.toLowerCase() !== name);
}

/**
 * A Transform that substitutes as bytes flow. Held bytes are forwarded after HOLD_MS without new
 * data. A tripwire fails the stream with RefusedError before any byte of the sentinel leaves.
 * With `hello` (tripwire patterns of an opaque tunnel), a stream that begins with a TLS record is
 * checked for them only up to the end of that record (a ClientHello: its SNI name is the only
 * plaintext, and a host name, so compared without case), an SSH stream only in its first chunk;
 * after them come encrypted bytes, passed through unexamined and never held.
 */
function substitution<T>(m: Matcher<T>, onTrip: (tag: T) => Refusal, hello?: readonly Pattern<T>[], onReplace?: (p: Pattern<T>) => void): Transform {
  const sub = new Substitution(m, onReplace);
  let state: 'start' | 'hello' | 'encrypted' | 'plain' = hello ? 'start' : 'plain';
  let helloLeft = 0;
  let tail = Buffer.alloc(0);
  let timer: NodeJS.Timeout | undefined;
  let check: NodeJS.Immediate | undefined;
  const stop = () => {
    if (timer) clearTimeout(timer);
    if (check) clearImmediate(check);
    timer = undefined;
    check = undefined;
  };
  const lowerCase = (b: Buffer) => Buffer.from(b.toString('latin1').toLowerCase(), 'latin1');
  const hostNeedles = (hello ?? []).map((p) => ({ needle: lowerCase(p.from), tag: p.tag }));
  const needleLength = Math.max(0, ...hostNeedles.map(({ needle }) => needle.length));
  const trips = m.patterns.filter((p) => p.to === null);
  let tripsOnly: Matcher<T> | undefined;
  // Once held bytes went out after a pause, the last bytes sent stay in view for the tripwire: a
  // sentinel split by a pause must still be stopped before its end leaves (its start has gone).
  let sent: Buffer | undefined;
  const acrossPause = (chunk: Buffer): Pattern<T> | undefined => {
    if (sent === undefined) return undefined;
    const view = Buffer.concat([sent, chunk.subarray(0, m.maxLength)]);
    tripsOnly ??= new Matcher(trips);
    const hit = tripsOnly.next(view, 0, true);
    const keep = Math.max(1, m.maxLength - 1);
    const begunBefore = hit !== null && hit.at < sent.length;
    sent = Buffer.concat([sent, chunk.subarray(-keep)]).subarray(-keep);
    return begunBefore ? trips[hit.pattern] : undefined;
  };
  const t: Transform = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (state === 'start') {
        // TLS: up to the end of the ClientHello record. SSH: the identification line and the
        // key exchange offer in the first chunk; everything after them is encrypted.
        const tls = chunk[0] === 0x16 && chunk.length >= 5;
        const ssh = chunk.subarray(0, 4).toString('latin1') === 'SSH-';
        state = tls || ssh ? 'hello' : 'plain';
        helloLeft = tls ? 5 + chunk.readUInt16BE(3) : ssh ? chunk.length : 0;
      }
      if (state === 'hello') {
        const view = Buffer.concat([tail, lowerCase(chunk.subarray(0, helloLeft))]);
        const hit = hostNeedles.find(({ needle }) => view.includes(needle));
        if (hit) return cb(new RefusedError(onTrip(hit.tag)));
        helloLeft -= chunk.length;
        if (helloLeft <= 0) state = 'encrypted';
        else tail = view.subarray(Math.max(0, view.length - needleLength));
      }
      if (state === 'encrypted' || state === 'hello') return cb(null, chunk);
      stop();
      const split = acrossPause(chunk);
      if (split) return cb(new RefusedError(onTrip(split.tag)));
      const r = sub.push(chunk);
      if (r.trip) return cb(new RefusedError(onTrip(r.trip.tag)));
      if (r.out.length > 0) t.push(r.out);
      if (sub.held > 0) {
        const idle = () => {
          // Output not taken yet, or input queued: the stall is the reader's (backpressure), not
          // the sender's — the rest may be right behind; wait again.
          if (t.readableLength > 0 || t.writableLength > 0) {
            timer = setTimeout(idle, HOLD_MS);
            return;
          }
          // After a stall of srt itself the timer fires before the sockets are read: decide only
          // once pending input has been delivered (setImmediate runs after the I/O phase; a chunk
          // that arrives meanwhile cancels this).
          timer = undefined;
          check = setImmediate(() => {
            check = undefined;
            // The sender went quiet: the held bytes go as they are; what follows is matched afresh.
            const held = sub.end();
            if (held.trip) t.destroy(new RefusedError(onTrip(held.trip.tag)));
            else if (held.out.length > 0) {
              t.push(held.out);
              if (trips.length > 0) sent = Buffer.from(held.out.subarray(-Math.max(1, m.maxLength - 1)));
            }
          });
        };
        timer = setTimeout(idle, HOLD_MS);
      }
      cb();
    },
    flush(cb) {
      stop();
      const r = sub.end();
      if (r.trip) return cb(new RefusedError(onTrip(r.trip.tag)));
      cb(null, r.out.length > 0 ? r.out : undefined);
    },
    destroy(err, cb) {
      stop();
      cb(err);
    },
  });
  return t;
}

export class CredentialStage implements Stage {
  readonly name = 'credentials';
  private readonly matchers = new Map<string, Matcher<Tag>>();
  /** What srt wrote into requests in place of what the command sent (latin1), most recent last. */
  private readonly written = new Map<string, string>();
  private remasker: Matcher<unknown> | undefined;
  private spelled: Matcher<unknown> | undefined;
  private forms: Set<string> | undefined;
  private readonly notices = new Set<string>();
  private readonly secrets: Secret[];

  constructor(
    secrets: readonly Secret[],
    private readonly opts: { allowPlaintextInject: boolean; uses?: UseSink },
  ) {
    this.secrets = [...secrets];
  }

  /** Warnings about requests srt forwarded without doing what the settings asked. */
  notes(): string[] {
    return [...this.notices];
  }

  note(text: string): void {
    this.notices.add(text);
  }

  /** A secret minted during the run (mint-stage.ts): injected, re-masked and tripped like the rest. */
  add(secret: Secret): void {
    this.secrets.push(secret);
    this.matchers.clear();
    this.remasker = undefined;
    this.spelled = undefined;
    this.forms = undefined;
  }

  private mayGo(s: Secret, d: Destination): boolean {
    return s.inject && s.injectHosts.some((r) => ruleMatches(r, d.host.host, d.port));
  }

  /** The proxy answers it and records it (a violation with its own report line). */
  private refusal(s: Secret, host: string): Refusal {
    return {
      refuse: s.inject
        ? `${s.label}'s sentinel may not be sent to ${host} (not in its injectHosts)`
        : `${s.label}'s sentinel may go nowhere, ${host} included: ${SIGN_ONLY}`,
      status: 403,
      proxyError: 'sentinel-not-allowed-here',
      sentinel: s.label,
      ...(s.inject ? {} : { nowhere: true }),
    };
  }

  private matcher(key: string, make: () => Pattern<Tag>[]): Matcher<Tag> {
    let m = this.matchers.get(key);
    if (!m) {
      m = new Matcher(make());
      this.matchers.set(key, m);
    }
    return m;
  }

  /** own / foreign secrets for a destination, and the matchers for one place and for the
   *  tripwire alone (`spellings`: raw and percent-encoded only), cached per set. */
  private split(d: Destination, readable: boolean) {
    const own = this.secrets.filter((s) => readable && this.mayGo(s, d));
    const foreign = this.secrets.filter((s) => !this.mayGo(s, d));
    const ids = (list: Secret[]) => list.map((s) => this.secrets.indexOf(s)).join(',');
    const place = (p: 'headers' | 'query' | 'body') =>
      this.matcher(`${p}|${ids(own)}|${ids(foreign)}`, () => [...patterns(foreign, 'trip'), ...patterns(own.filter((s) => s.injectInto.includes(p)), 'inject')]);
    const trips = (spellings = false) => this.matcher(`trip ${spellings}|${ids(foreign)}`, () => patterns(foreign, 'trip', spellings));
    return { own, foreign, place, trips };
  }

  /**
   * For a response from a host real values go to: every real value's forms, and those of each
   * piece srt wrote in place of the command's. From any other host: the real values' spellings
   * (such a host gets none from srt, and every form held back at the end of a chunk — a
   * prefix of one of them — would delay an interactive stream by up to HOLD_MS).
   */
  private remaskMatcher(receivesReal: boolean): Matcher<unknown> {
    if (!receivesReal) {
      this.spelled ??= new Matcher<unknown>(patterns(this.secrets, 'remask', true));
      return this.spelled;
    }
    if (!this.remasker) {
      const all = new Map<string, Pattern<unknown>>();
      for (const p of patterns(this.secrets, 'remask')) all.set(p.from.toString('latin1'), p);
      for (const [w, c] of this.written) {
        for (const [from, to] of formPairs(latin1(w), latin1(c))) if (!all.has(from.toString('latin1'))) all.set(from.toString('latin1'), { from, to, tag: undefined });
      }
      this.remasker = new Matcher([...all.values()]);
    }
    return this.remasker;
  }

  /** A value's own forms need no piece of their own. */
  private isForm(text: string): boolean {
    this.forms ??= new Set(patterns(this.secrets, 'remask').map((p) => p.from.toString('latin1')));
    return this.forms.has(text);
  }

  /**
   * srt wrote `written` where the command sent `original` (a header value, a request target).
   * The pieces that differ carry a real value in a spelling of srt's making (the `Basic`
   * credential it re-encoded, or whatever a later injection writes): responses re-mask them.
   */
  private wrote(written: string, original: string): void {
    const w = written.split(DELIMITERS);
    const o = original.split(DELIMITERS);
    const pieces: Array<[string, string]> = w.length === o.length ? w.map((x, i) => [x, o[i]!]) : [[written, original]];
    for (const [piece, was] of pieces) {
      if (piece === was || piece.length < MIN_FORM_LENGTH || this.isForm(piece)) continue;
      const known = this.written.has(piece);
      this.written.delete(piece);
      this.written.set(piece, was);
      if (known) continue;
      if (this.written.size > WRITTEN_PIECES) this.written.delete(this.written.keys().next().value!);
      this.remasker = undefined;
    }
  }

  /**
   * An inject host's sentinel in a plain-HTTP request (without allowPlaintextInject) goes as it is:
   * said at the end, so a login that fails over http:// is not a mystery. Looked for where
   * credentials travel: the request target and the headers (raw, percent-encoded, in `Basic`).
   */
  private plainHttp(req: ProxyRequest): void {
    const waiting = this.secrets.filter((s) => this.mayGo(s, req.target));
    if (waiting.length === 0) return;
    const views: string[] = [];
    for (const text of [req.path, ...req.headers.map(([, v]) => v)]) {
      views.push(text, percentDecode(text));
      const basic = /^basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(text);
      if (basic) views.push(Buffer.from(basic[1]!, 'base64').toString('latin1'));
    }
    for (const s of waiting) {
      if (views.some((v) => v.includes(s.sentinel))) {
        this.notices.add(`not injected: plain HTTP — ${s.label}'s sentinel went to ${req.target.display} unchanged (srt injects only inside terminated TLS: use https://, or set credentials.allowPlaintextInject)`);
      }
    }
  }

  /** A destination host name (CONNECT or SOCKS target, absolute URL, SNI), before it is resolved. */
  screenHost(host: string, port: number): Refusal | undefined {
    const lower = host.toLowerCase();
    const d = { host: { host: lower }, port };
    for (const s of this.secrets) {
      if (this.mayGo(s, d)) continue;
      if (patterns([s], 'trip').some((p) => lower.includes(p.from.toString('latin1').toLowerCase()))) return this.refusal(s, lower);
    }
    return undefined;
  }

  request(req: ProxyRequest): Refusal | undefined {
    const readable = req.scheme === 'https' || this.opts.allowPlaintextInject;
    const { own, foreign, place, trips } = this.split(req.target, readable);
    const host = req.target.host.host;
    /** A foreign sentinel in a string or in its percent-decoded bytes. */
    const screen = (text: string): Secret | undefined => {
      if (foreign.length === 0) return undefined;
      const decoded = percentDecode(text);
      return (rewrite(text, trips()).trip ?? (decoded !== text ? rewrite(decoded, trips()).trip : undefined))?.secret;
    };
    let injected = false;
    if (!readable) this.plainHttp(req);
    // The secrets injected (the body's as it streams): what an answer mints is bound to their hosts.
    const used = new Set<Secret>();
    const hit = (p: Pattern<Tag>) => used.add(p.tag.secret);
    if (own.length > 0) this.opts.uses?.used(req, used);

    const target = rewrite(req.path, place('query'), hit);
    const pathTrip = target.trip?.secret ?? screen(req.path);
    if (pathTrip) return this.refusal(pathTrip, host);
    if (target.changed) {
      injected = true;
      this.wrote(target.text, req.path);
    }

    const headerMatcher = place('headers');
    const headers: Header[] = [];
    for (const [name, value] of req.headers) {
      const nameTrip = screen(name);
      if (nameTrip) return this.refusal(nameTrip, host);
      const r = rewrite(value, headerMatcher, hit);
      const trip = r.trip?.secret ?? screen(value);
      if (trip) return this.refusal(trip, host);
      let out = r.text;
      // `Authorization: Basic base64(user:token)`: the token is inside the base64.
      const basic = /^(basic\s+)([A-Za-z0-9+/]+={0,2})\s*$/i.exec(out);
      if (basic && /^(proxy-)?authorization$/i.test(name)) {
        const decoded = Buffer.from(basic[2]!, 'base64').toString('latin1');
        const inner = rewrite(decoded, headerMatcher, hit);
        if (inner.trip) return this.refusal(inner.trip.secret, host);
        if (inner.changed) out = basic[1]! + Buffer.from(inner.text, 'latin1').toString('base64');
      }
      if (out !== value) {
        injected = true;
        this.wrote(out, value);
      }
      headers.push([name, out]);
    }

    let finalHeaders = headers;
    if (req.body) {
      const encoding = header(headers, 'content-encoding');
      const bodyMatcher = place('body');
      if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
        if (own.some((s) => s.injectInto.includes('body'))) {
          this.notices.add(`a ${encoding}-encoded request body to ${host} was forwarded without credential injection (srt does not rewrite compressed bodies)`);
        }
      } else if (!bodyMatcher.empty) {
        const onTrip = (tag: Tag) => this.refusal(tag.secret, host);
        req.body = through(req.body, substitution(bodyMatcher, onTrip, undefined, hit));
        // Length-preserving sentinels keep Content-Length (some upstreams refuse chunked uploads).
        if (!bodyMatcher.lengthPreserving) finalHeaders = withoutHeader(finalHeaders, 'content-length');
        if (own.some((s) => s.injectInto.includes('body'))) injected = true;
      }
    }
    if (injected) {
      // An encoded response must be decoded before it can be re-masked: ask for none.
      finalHeaders = [...withoutHeader(finalHeaders, 'accept-encoding'), ['accept-encoding', 'identity']];
    }
    req.path = target.text;
    req.headers = finalHeaders;
    return undefined;
  }

  response(res: ProxyResponse, req: ProxyRequest): Refusal | undefined {
    // A later response may hand back what an earlier request left there: by host, not by request.
    const receivesReal = this.split(req.target, req.scheme === 'https' || this.opts.allowPlaintextInject).own.length > 0;
    const m = this.remaskMatcher(receivesReal);
    if (m.empty) return undefined;
    const remask = (text: string) => rewrite(text, m).text;
    const remaskAll = (headers: Header[]): Header[] => headers.map(([k, v]) => [remask(k), remask(v)]);
    res.statusMessage = remask(res.statusMessage);
    res.headers = remaskAll(res.headers);
    const trailers = res.trailers.bind(res);
    res.trailers = () => remaskAll(trailers());
    if (!res.body) return undefined;
    let body = res.body;
    const applied = codings(headerLines(res.headers, 'content-encoding'));
    if (applied.length > 0) {
      // Only a host srt sends real values to can echo one; others' encoded bodies pass as they are.
      if (!receivesReal) return undefined;
      const decoded = decode(body, applied);
      // Fail closed: a real value could hide in what srt cannot read.
      if ('unknown' in decoded) {
        return { refuse: `cannot re-mask credentials in a response with Content-Encoding ${decoded.unknown} (srt decodes ${DECODABLE.join(', ')})`, status: 502, proxyError: 'unreadable-response' };
      }
      body = decoded;
      res.headers = withoutHeader(withoutHeader(res.headers, 'content-encoding'), 'content-length');
    }
    res.body = through(body, substitution(m, () => ({ refuse: 're-masking has no tripwire' })));
    if (!m.lengthPreserving) res.headers = withoutHeader(res.headers, 'content-length');
    return undefined;
  }

  /** A terminated tunnel's SNI name (the proxy has made sure it names the tunnel's host). */
  tunnel(t: TunnelInfo): Refusal | undefined {
    return t.sni !== undefined ? this.screenHost(t.sni, t.target.port) : undefined;
  }

  /**
   * The client-to-server bytes of an opaque tunnel (CONNECT or SOCKS, not terminated, or a
   * forwarded host loopback port): a
   * TLS stream is checked up to the end of its ClientHello, SSH in its first chunk, anything
   * else throughout (see substitution). Nothing when no sentinel is foreign there.
   */
  guard(t: TunnelInfo): Transform | undefined {
    const d = t.target;
    const { foreign, trips } = this.split(d, false);
    if (foreign.length === 0) return undefined;
    // A plaintext protocol (a database's, Redis') is watched for the spellings only: every form's
    // prefix held at the end of a message would stall its ping-pong for up to HOLD_MS.
    return substitution(trips(true), (tag) => this.refusal(tag.secret, d.host.host), trips().patterns);
  }
}
