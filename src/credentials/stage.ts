// The credential stage of the proxy's request/response pipeline (SPEC §7, §10 invariants 5 and
// 11). Per request, every secret of the plan is one of:
//   own     — this destination is in its injectHosts and the request is readable in a way that
//             may carry it (terminated TLS, or plain HTTP with allowPlaintextInject): its
//             sentinel is replaced by the real value in the places its injectInto names;
//   foreign — this destination is not in its injectHosts: its sentinel anywhere srt can see it
//             (host name, request target, header, body, the plaintext of an opaque tunnel) stops
//             the request with 403 `X-Proxy-Error: sentinel-not-allowed-here`;
//   neither — an inject host over plain HTTP without allowPlaintextInject: passed unchanged.
// Every response srt can read gets every real value replaced by its sentinel again.

import { Transform, type Readable } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';
import { ruleMatches } from '../proxy/domains.js';
import type { Target } from '../proxy/gate.js';
import { RefusedError, type Header, type ProxyRequest, type ProxyResponse, type Refusal, type Stage, type TunnelInfo } from '../proxy/pipeline.js';
import type { Secret } from './plan.js';
import { Matcher, spellingPairs, Substitution, type Pattern } from './substitute.js';

/** What the stage needs of a destination (the proxy's authorized Target has it). */
type Destination = Pick<Target, 'host' | 'port'>;

/** Held bytes that could begin a pattern are forwarded after this long without new data from the
 *  sender (not while the reader is slow, nor while srt itself was stalled): an interactive stream
 *  (gRPC ping-pong, a TLS handshake) must never wait for bytes that may not come. The price: a
 *  value the sender splits with a pause this long is not substituted (injected or re-masked); a
 *  foreign sentinel split so is still stopped, before its last part leaves. */
export const HOLD_MS = holdMs(process.env.SRT_CREDENTIAL_HOLD_MS);

/** `SRT_CREDENTIAL_HOLD_MS` (README): a longer wait for machines whose senders stall (50–10000). */
export function holdMs(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= 50 && n <= 10_000 ? n : 250;
}

type Tag = { secret: Secret };

function patterns(secrets: readonly Secret[], dir: 'inject' | 'remask' | 'trip'): Pattern<Tag>[] {
  return secrets.flatMap((secret) => {
    const pairs = dir === 'remask' ? spellingPairs(secret.real, secret.sentinel) : spellingPairs(secret.sentinel, secret.real);
    return pairs.map(([from, to]) => ({ from: Buffer.from(from, 'utf8'), to: dir === 'trip' ? null : Buffer.from(to, 'utf8'), tag: { secret } }));
  });
}

const latin1 = (s: string) => Buffer.from(s, 'latin1');

/** Apply a matcher to a whole header value or request target (bytes as node:http gives them). */
function rewrite(text: string, m: Matcher<Tag>): { text: string; trip?: Secret; changed: boolean } {
  if (m.empty) return { text, changed: false };
  const r = m.all(latin1(text));
  if (r.trip) return { text, trip: r.trip.tag.secret, changed: false };
  const out = r.out.toString('latin1');
  return { text: out, changed: out !== text };
}

function percentDecode(text: string): string {
  return text.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}

/** What the command may have hidden a sentinel in: percent-encoding, base64 (`Basic`, a token). */
function decodedViews(text: string): string[] {
  const views = [percentDecode(text)];
  for (const run of text.match(/[A-Za-z0-9+/_-]{16,}={0,2}/g) ?? []) {
    const bytes = Buffer.from(run.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length > 0) views.push(bytes.toString('latin1'));
  }
  return views.filter((v) => v !== text);
}

function header(headers: Header[], name: string): string | undefined {
  return headers.find(([k]) => k.toLowerCase() === name)?.[1];
}

function withoutHeader(headers: Header[], name: string): Header[] {
  return headers.filter(([k]) => k.toLowerCase() !== name);
}

/**
 * A Transform that substitutes as bytes flow. Held bytes are forwarded after HOLD_MS without new
 * data. A tripwire fails the stream with RefusedError before any byte of the sentinel leaves.
 * `tlsHello`: a stream that begins with a TLS record is checked only up to the end of that record
 * (a ClientHello: its SNI name is the only plaintext, and a host name, so compared without case),
 * an SSH stream only in its first chunk; after them come encrypted bytes, passed through
 * unexamined and never held.
 */
function substitution(m: Matcher<Tag>, onTrip: (s: Secret) => Refusal, tlsHello = false): Transform {
  const sub = new Substitution(m);
  let state: 'start' | 'hello' | 'encrypted' | 'plain' = tlsHello ? 'start' : 'plain';
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
  const hostNeedles = tlsHello ? m.patterns.map((p) => ({ needle: lowerCase(p.from), secret: p.tag.secret })) : [];
  const trips = m.patterns.filter((p) => p.to === null);
  // Once held bytes went out after a pause, the last bytes sent stay in view for the tripwire: a
  // sentinel split by a pause must still be stopped before its end leaves (its start has gone).
  let sent: Buffer | undefined;
  const acrossPause = (chunk: Buffer): Secret | undefined => {
    if (sent === undefined) return undefined;
    const view = Buffer.concat([sent, chunk.subarray(0, m.maxLength)]);
    const hit = trips.find((p) => {
      const at = view.indexOf(p.from);
      return at !== -1 && at < sent!.length;
    });
    const keep = Math.max(1, m.maxLength - 1);
    sent = Buffer.concat([sent, chunk.subarray(-keep)]).subarray(-keep);
    return hit?.tag.secret;
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
        if (hit) return cb(new RefusedError(onTrip(hit.secret)));
        helloLeft -= chunk.length;
        if (helloLeft <= 0) state = 'encrypted';
        else tail = view.subarray(Math.max(0, view.length - m.maxLength));
      }
      if (state === 'encrypted' || state === 'hello') return cb(null, chunk);
      stop();
      const split = acrossPause(chunk);
      if (split) return cb(new RefusedError(onTrip(split)));
      const r = sub.push(chunk);
      if (r.trip) return cb(new RefusedError(onTrip(r.trip.tag.secret)));
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
            if (held.trip) t.destroy(new RefusedError(onTrip(held.trip.tag.secret)));
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
      if (r.trip) return cb(new RefusedError(onTrip(r.trip.tag.secret)));
      cb(null, r.out.length > 0 ? r.out : undefined);
    },
    destroy(err, cb) {
      stop();
      cb(err);
    },
  });
  return t;
}

/**
 * `body` piped through `t`; an error of `body` fails `t`. When `t` stops early (a tripwire), the
 * rest of `body` is drained, not destroyed: the client's connection stays able to hear why.
 */
function through(body: Readable, t: Transform): Transform {
  body.on('error', (e) => t.destroy(e));
  t.on('close', () => {
    if (body.readableEnded) return;
    body.unpipe(t);
    body.resume();
  });
  return body.pipe(t);
}

/** Decompress a response body for re-masking (null: an encoding srt cannot read). */
function decoder(encoding: string): Transform | null {
  const e = encoding.trim().toLowerCase();
  if (e === 'gzip' || e === 'x-gzip' || e === 'deflate') return createUnzip();
  if (e === 'br') return createBrotliDecompress();
  return null;
}

export class CredentialStage implements Stage {
  readonly name = 'credentials';
  private readonly matchers = new Map<string, Matcher<Tag>>();
  private readonly remaskMatcher: Matcher<Tag>;
  /** Requests that carried a real value: their responses are decompressed if need be. */
  private readonly injected = new WeakSet<object>();
  private readonly notices = new Set<string>();

  constructor(
    private readonly secrets: readonly Secret[],
    private readonly opts: { allowPlaintextInject: boolean },
  ) {
    this.remaskMatcher = new Matcher(patterns(secrets, 'remask'));
  }

  /** Warnings about requests srt forwarded without doing what the settings asked. */
  notes(): string[] {
    return [...this.notices];
  }

  private mayGo(s: Secret, d: Destination): boolean {
    return s.inject && (s.injectHosts === undefined || s.injectHosts.some((r) => ruleMatches(r, d.host.host, d.port)));
  }

  /** The proxy answers it and records it (a violation with its own report line). */
  private refusal(s: Secret, host: string): Refusal {
    return {
      refuse: `${s.label}'s sentinel may not be sent to ${host} (not in its injectHosts)`,
      status: 403,
      proxyError: 'sentinel-not-allowed-here',
      sentinel: s.label,
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

  /** own / foreign secrets for a destination, and the matcher for one place (cached per set). */
  private split(d: Destination, readable: boolean) {
    const own = this.secrets.filter((s) => readable && this.mayGo(s, d));
    const foreign = this.secrets.filter((s) => !this.mayGo(s, d));
    const key = (place: string) => `${place}|${own.map((s) => this.secrets.indexOf(s)).join(',')}|${foreign.map((s) => this.secrets.indexOf(s)).join(',')}`;
    const place = (p: 'headers' | 'query' | 'body') =>
      this.matcher(key(p), () => [...patterns(foreign, 'trip'), ...patterns(own.filter((s) => s.injectInto.includes(p)), 'inject')]);
    return { own, foreign, place };
  }

  /** A destination host name (CONNECT or SOCKS target, absolute URL, SNI), before it is resolved. */
  screenHost(host: string, port: number): Refusal | undefined {
    const lower = host.toLowerCase();
    const d = { host: { host: lower }, port };
    for (const s of this.secrets) {
      if (this.mayGo(s, d)) continue;
      if (spellingPairs(s.sentinel, s.sentinel).some(([f]) => lower.includes(f.toLowerCase()))) return this.refusal(s, lower);
    }
    return undefined;
  }

  /** Foreign sentinels in a string, also percent- or base64-decoded. */
  private screenText(text: string, foreign: readonly Secret[]): Secret | undefined {
    if (foreign.length === 0) return undefined;
    const views = [text, ...decodedViews(text)];
    return foreign.find((s) => views.some((v) => v.includes(s.sentinel)));
  }

  request(req: ProxyRequest): Refusal | undefined {
    const readable = req.scheme === 'https' || this.opts.allowPlaintextInject;
    const { own, foreign, place } = this.split(req.target, readable);
    const host = req.target.host.host;
    let injected = false;

    const target = rewrite(req.path, place('query'));
    const pathTrip = target.trip ?? this.screenText(req.path, foreign);
    if (pathTrip) return this.refusal(pathTrip, host);
    injected ||= target.changed;

    const headerMatcher = place('headers');
    const headers: Header[] = [];
    for (const [name, value] of req.headers) {
      const nameTrip = this.screenText(name, foreign);
      if (nameTrip) return this.refusal(nameTrip, host);
      const r = rewrite(value, headerMatcher);
      const trip = r.trip ?? this.screenText(value, foreign);
      if (trip) return this.refusal(trip, host);
      let out = r.text;
      // `Authorization: Basic base64(user:token)`: the token is inside the base64.
      const basic = /^(basic\s+)([A-Za-z0-9+/]+={0,2})\s*$/i.exec(out);
      if (basic && /^(proxy-)?authorization$/i.test(name)) {
        const decoded = Buffer.from(basic[2]!, 'base64').toString('latin1');
        const inner = rewrite(decoded, headerMatcher);
        if (inner.changed) out = basic[1]! + Buffer.from(inner.text, 'latin1').toString('base64');
      }
      injected ||= out !== value;
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
        const onTrip = (s: Secret) => this.refusal(s, host);
        req.body = through(req.body, substitution(bodyMatcher, onTrip));
        // Length-preserving sentinels keep Content-Length (some upstreams refuse chunked uploads).
        if (!bodyMatcher.lengthPreserving) finalHeaders = withoutHeader(finalHeaders, 'content-length');
        if (own.some((s) => s.injectInto.includes('body'))) injected = true;
      }
    }
    if (injected) {
      // A response srt cannot read could hand the real value to the command: ask for none.
      finalHeaders = [...withoutHeader(finalHeaders, 'accept-encoding'), ['accept-encoding', 'identity']];
      this.injected.add(req);
    }
    req.path = target.text;
    req.headers = finalHeaders;
    return undefined;
  }

  response(res: ProxyResponse, req: ProxyRequest): Refusal | undefined {
    const m = this.remaskMatcher;
    if (m.empty) return undefined;
    res.statusMessage = rewrite(res.statusMessage, m).text;
    res.headers = res.headers.map(([k, v]) => [k, rewrite(v, m).text]);
    if (!res.body) return undefined;
    let body = res.body;
    const encoding = header(res.headers, 'content-encoding');
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      // Only a host that got a real value could echo it; srt asked it for an identity encoding.
      if (!this.injected.has(req)) return undefined;
      const d = decoder(encoding);
      if (!d) return { refuse: `cannot re-mask credentials in a response with Content-Encoding ${encoding}`, status: 502, proxyError: 'unreadable-response' };
      body = through(body, d);
      res.headers = withoutHeader(withoutHeader(res.headers, 'content-encoding'), 'content-length');
    }
    res.body = through(body, substitution(m, () => ({ refuse: 'unreachable' })));
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
    const { foreign } = this.split(d, false);
    if (foreign.length === 0) return undefined;
    const m = this.matcher(`tunnel|${foreign.map((s) => this.secrets.indexOf(s)).join(',')}`, () => patterns(foreign, 'trip'));
    return substitution(m, (s) => this.refusal(s, d.host.host), true);
  }
}
