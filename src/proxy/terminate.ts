// TLS termination of one tunnel, in the srt process, on the tunnel's own socket (no extra
// listener, no socket file). Order of events:
//  1. The ClientHello was read (tunnel.ts). Its SNI name, if any, must name the tunnel's host;
//     tunnel stages see it.
//  2. The upstream TLS connection is made over the socket the gate already dialled (the
//     address guard decided it; nothing is resolved again), with SNI = the tunnel's host and
//     the client's own ALPN list, verified against the system roots + extraCaCertPaths.
//  3. The client's handshake is answered with a leaf minted for the tunnel's host and, as the
//     only ALPN choice, the protocol the upstream picked — so h2 meets h2 and HTTP/1.1 meets
//     HTTP/1.1. If the upstream failed (untrusted, expired, wrong name) the client still gets
//     a handshake, and every request it sends is answered 502 with the reason: nothing from
//     that upstream ever reaches it, and nothing is downgraded to an unverified connection.
//  4. Decrypted HTTP/1.1 goes to one shared node:http server, HTTP/2 to one shared node:http2
//     server (neither listens anywhere); every request or stream is one exchange through the
//     pipeline (exchange.ts) to this tunnel's upstream. A TLS protocol that is not HTTP (ALPN
//     names something else, or the server speaks first) is relayed as bytes between the two
//     TLS sessions; the upstream is still verified.
// The authority is the tunnel's: a request whose Host / :authority names another host is
// refused (credentials are injected by host, so a request must not claim one host while it
// goes to another). The Host sent upstream is the tunnel's host, without :443.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type ClientHttp2Session, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import tls, { type SecureContext, type TLSSocket } from 'node:tls';
import { namedLoopback, normalizeHost, type NormalizedHost } from './domains.js';
import {
  DialAgent,
  exchange,
  h1Frontend,
  h2Frontend,
  rawReply,
  refusalReply,
  sendH1,
  sendH2,
  upgradeFrontend,
  type ExchangeContext,
  type Frontend,
  type Upstream,
  type UpstreamReply,
} from './exchange.js';
import type { Gate, Target } from './gate.js';
import { DROPPED_UPGRADE_WITH_BODY, hasBody, parseAbsoluteTarget, parseAuthority } from './http.js';
import { endToEndHeaders, formatAuthority, runTunnelStages, upgradeToForward, type Header, type ProxyRequest, type Stage } from './pipeline.js';
import { guardTunnel, splice, type AdmittedTunnel, type Deadline, type TlsTerminator } from './tunnel.js';

/** Mints (and caches) the leaf certificate a client is shown for a host. */
export interface LeafIssuer {
  contextFor(host: NormalizedHost): SecureContext;
}

/** What upstream certificates are verified against (system roots + extraCaCertPaths). */
export interface UpstreamTrust {
  context(): SecureContext;
}

export interface TerminatorOptions {
  leaves: LeafIssuer;
  trust: UpstreamTrust;
  stages: readonly Stage[];
  /** A terminated connection with no request in flight is closed after this long. */
  idleTimeoutMs: number;
  maxHeaderSize: number;
}

const HTTP_ALPN = new Set(['h2', 'http/1.1', 'http/1.0']);

// HTTP/2 flow-control windows srt grants its peers. They bound what one stream (and one
// connection) can have in flight through srt when the other side reads slowly, and they set the
// pace of a single stream (HTTP/2's default 64 KiB window per hop halves a bulk download).
const H2_STREAM_WINDOW = 256 * 1024;
const H2_SESSION_WINDOW = 1024 * 1024;

/** One terminated tunnel: its client TLS socket, its upstream, its requests in flight. */
class Session {
  inflight = 0;
  /** An upgraded (WebSocket) connection is a stream now: no idle timeout, like any tunnel. */
  streaming = false;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    readonly t: AdmittedTunnel,
    readonly client: TLSSocket,
    readonly upstream: TlsUpstream,
    private readonly idleMs: number,
  ) {
    client.once('close', () => {
      clearTimeout(this.idle);
      upstream.close();
      t.release();
    });
    this.armIdle();
  }

  begin(): void {
    this.inflight++;
    clearTimeout(this.idle);
  }

  end(): void {
    this.inflight--;
    this.armIdle();
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    if (this.inflight > 0 || this.streaming || this.client.destroyed) return;
    this.idle = setTimeout(() => this.client.destroy(), this.idleMs);
    this.idle.unref();
  }
}

/** `certificate not trusted: <OpenSSL's words> (CODE)`, or `TLS handshake failed: …` for the rest. */
function certificateReason(e: NodeJS.ErrnoException): string {
  const code = e.code ?? '';
  const cert = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ISSUER/.test(code);
  const what = cert ? 'certificate not trusted' : 'TLS handshake failed';
  return `${what}: ${e.message}${code && !e.message.includes(code) ? ` (${code})` : ''}`;
}

/**
 * The upstream side of one terminated tunnel: the first, already verified TLS connection, then
 * more of them (HTTP/1.1 concurrency) or a new HTTP/2 session when one goes away — each dialled
 * through the gate to the addresses that passed the guard, and verified the same way.
 */
class TlsUpstream implements Upstream {
  private first: TLSSocket | undefined;
  private h2: ClientHttp2Session | undefined;
  private h2Pending: Promise<ClientHttp2Session | null> | undefined;
  private agent: DialAgent | undefined;
  private closed = false;

  constructor(
    private readonly gate: Gate,
    private readonly target: Target,
    private readonly trust: UpstreamTrust,
    first: TLSSocket | Error,
  ) {
    if (first instanceof Error) this.failure = first;
    else {
      this.first = first;
      this.protocol = first.alpnProtocol === 'h2' ? 'h2' : 'http/1.1';
    }
  }

  /** Set when the upstream could not be reached over verified TLS: every request gets a 502 with it. */
  readonly failure: Error | undefined;
  private protocol: 'h2' | 'http/1.1' = 'http/1.1';

  send(req: ProxyRequest, signal: AbortSignal): Promise<UpstreamReply> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.protocol === 'h2') return this.session().then((s) => (s ? sendH2(req, s, signal) : sendH1(req, this.h1Agent(), signal)));
    return sendH1(req, this.h1Agent(), signal);
  }

  /** The HTTP/2 session, reconnected when the last one went away; null if the new one is HTTP/1.1. */
  private session(): Promise<ClientHttp2Session | null> {
    if (this.h2 && !this.h2.closed && !this.h2.destroyed) return Promise.resolve(this.h2);
    // Streams that arrive together share one reconnection.
    this.h2Pending ??= this.openSession().finally(() => (this.h2Pending = undefined));
    return this.h2Pending;
  }

  private async openSession(): Promise<ClientHttp2Session | null> {
    const socket = this.first ?? (await this.connect(['h2', 'http/1.1']));
    this.first = undefined;
    if (socket.alpnProtocol !== 'h2') {
      this.protocol = 'http/1.1';
      this.first = socket;
      return null;
    }
    const session = http2.connect(`https://${this.target.display}`, { createConnection: () => socket, settings: { initialWindowSize: H2_STREAM_WINDOW } });
    session.once('connect', () => session.setLocalWindowSize(H2_SESSION_WINDOW));
    session.on('error', () => undefined); // each stream reports its own failure
    const gone = () => {
      if (this.h2 === session) this.h2 = undefined;
    };
    session.once('goaway', gone); // it takes no new streams; the next request reconnects
    session.once('close', gone);
    this.h2 = session;
    return session;
  }

  private h1Agent(): DialAgent {
    this.agent ??= new DialAgent(async () => {
      const s = this.first;
      this.first = undefined;
      if (s && !s.destroyed) return s;
      return this.connect(['http/1.1']);
    });
    return this.agent;
  }

  /** Another verified connection to the same target (dialled through the gate, never re-resolved). */
  private async connect(alpn: string[]): Promise<TLSSocket> {
    if (this.closed) throw new Error('tunnel closed');
    const raw = await this.gate.dial(this.target);
    return upstreamTls(raw, this.target, this.trust, alpn);
  }

  close(): void {
    this.closed = true;
    this.first?.destroy();
    this.h2?.destroy();
    this.agent?.destroy();
  }
}

/** TLS to the upstream over `raw`: SNI and verification against the target's own name/address. */
function upstreamTls(raw: Duplex, target: Target, trust: UpstreamTrust, alpn: string[] | undefined): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const name = target.host.host;
    const socket = tls.connect({
      socket: raw,
      secureContext: trust.context(),
      // An IP target is verified against the certificate's IP addresses (and sends no SNI).
      ...(target.host.ip === undefined ? { servername: name } : { host: name }),
      ...(alpn?.length ? { ALPNProtocols: alpn } : {}),
      rejectUnauthorized: true,
    });
    const fail = (e: NodeJS.ErrnoException) => {
      socket.destroy();
      raw.destroy();
      reject(new Error(certificateReason(e)));
    };
    socket.once('error', fail);
    socket.once('secureConnect', () => {
      socket.off('error', fail);
      socket.on('error', () => socket.destroy());
      resolve(socket);
    });
  });
}

/** Is `host` (as a client wrote it) the tunnel's host? `localhost` is also the addresses it stands
 *  for: a forwarded `localhost:PORT` is reached as https://127.0.0.1:PORT too. */
function isTargetHost(host: string, target: Target): boolean {
  const h = normalizeHost(host);
  return h !== null && (h.host === target.host.host || (namedLoopback(target.host.host)?.includes(h.host) ?? false));
}

/** The one question every terminated request answers first: does it name the tunnel's host? */
function namesTarget(authority: string, target: Target): boolean {
  const a = parseAuthority(authority, target.port);
  if (typeof a === 'string') return false;
  return isTargetHost(a.host, target) && a.port === target.port;
}

export class Terminator implements TlsTerminator {
  private readonly h1: http.Server;
  private readonly h2: Http2Server;
  private readonly h1Sessions = new WeakMap<Duplex, Session>();
  private readonly h2Sessions = new WeakMap<Http2Session, Session>();
  /** Handed from terminate() to the h2 server's synchronous 'session' event. */
  private attaching: Session | undefined;
  private readonly live = new Set<TLSSocket>();

  constructor(
    private readonly gate: Gate,
    private readonly opts: TerminatorOptions,
  ) {
    this.h1 = http.createServer({ maxHeaderSize: opts.maxHeaderSize, requestTimeout: 0, keepAliveTimeout: 0 });
    this.h1.on('request', (req: IncomingMessage, res: ServerResponse) => this.onH1Request(req, res));
    this.h1.on('upgrade', (req: IncomingMessage, socket: Duplex) => this.onH1Upgrade(req, socket));
    this.h1.on('connect', (_req: IncomingMessage, socket: Duplex) =>
      rawReply(socket, 405, 'CONNECT inside a TLS tunnel is not supported', 'srt: CONNECT inside a TLS tunnel is not supported\n'),
    );
    this.h1.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
      const [status, why] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'request header too large'] : [400, `malformed request (${err.code ?? 'parse error'})`];
      rawReply(socket, status, why, `srt: ${why}\n`);
    });
    this.h2 = http2.createServer({ settings: { enableConnectProtocol: false, initialWindowSize: H2_STREAM_WINDOW, maxConcurrentStreams: 128 } });
    this.h2.on('session', (s: Http2Session) => {
      const session = this.attaching!;
      this.h2Sessions.set(s, session);
      s.once('connect', () => s.setLocalWindowSize(H2_SESSION_WINDOW));
      s.on('error', () => undefined);
      session.client.once('close', () => s.destroy());
    });
    this.h2.on('stream', (stream: ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, rawHeaders: string[]) =>
      this.onH2Stream(stream, headers, rawHeaders),
    );
  }

  terminate(t: AdmittedTunnel, client: Duplex, upstream: Duplex, hello: Buffer, info: { sni?: string; alpn?: string[] }, deadline: Deadline): void {
    const { target, via } = t;
    const gate = this.gate;
    let done = false;
    const fail = (reason?: string) => {
      if (done) return;
      done = true;
      if (reason) gate.refuse(target.host.host, target.port, reason, via);
      deadline.cancel();
      t.release();
      client.destroy();
      upstream.destroy();
    };
    const onClientGone = () => fail();
    client.on('error', onClientGone);
    client.once('close', onClientGone);
    client.once('end', onClientGone);

    const refusal = runTunnelStages(this.opts.stages, { target, via, ...(info.sni !== undefined ? { sni: target.host.host } : {}) });
    if (refusal) {
      gate.refuse(target.host.host, target.port, refusal.refuse, via, refusal);
      return fail();
    }
    gate.log(`proxy: ${via} ${target.display}: terminating TLS (SNI ${info.sni ?? 'none'}, ALPN ${info.alpn?.join(',') ?? 'none'})`);

    const offered = info.alpn ?? [];
    void upstreamTls(upstream, target, this.opts.trust, offered).then(
      (up) => {
        if (done) return up.destroy();
        this.answerClient(t, client, hello, up.alpnProtocol ? [up.alpnProtocol] : [], up, offered, deadline, fail, onClientGone);
      },
      (e: Error) => {
        if (done) return;
        gate.log(`proxy: ${via} ${target.display}: upstream ${e.message}`);
        gate.refuse(target.host.host, target.port, `upstream ${e.message}`, via);
        // Answer in a protocol the client speaks, so its requests get the 502 with the reason.
        const alpn = offered.includes('http/1.1') ? ['http/1.1'] : offered.includes('h2') ? ['h2'] : [];
        if (offered.length > 0 && alpn.length === 0) return fail();
        this.answerClient(t, client, hello, alpn, e, offered, deadline, fail, onClientGone);
      },
    );
  }

  private answerClient(
    t: AdmittedTunnel,
    client: Duplex,
    hello: Buffer,
    alpn: string[],
    up: TLSSocket | Error,
    offered: string[],
    deadline: Deadline,
    fail: (reason?: string) => void,
    onClientGone: () => void,
  ): void {
    const { target } = t;
    let context: SecureContext;
    try {
      context = this.opts.leaves.contextFor(target.host);
    } catch (e) {
      if (!(up instanceof Error)) up.destroy();
      return fail(`cannot mint a certificate for ${target.host.host}: ${(e as Error).message}`);
    }
    client.off('close', onClientGone);
    client.off('error', onClientGone);
    client.off('end', onClientGone);
    client.unshift(hello);
    const tlsClient = new tls.TLSSocket(client as import('node:net').Socket, {
      isServer: true,
      secureContext: context,
      ...(alpn.length ? { ALPNProtocols: alpn } : {}),
    });
    const abandon = () => {
      if (!(up instanceof Error)) up.destroy();
      fail();
    };
    const onHandshakeError = (e: NodeJS.ErrnoException) => {
      // Typically the client does not trust srt's CA (alert "unknown ca" / "bad certificate").
      this.gate.log(`proxy: ${t.via} ${target.display}: client TLS handshake failed: ${e.message}`);
      abandon();
    };
    tlsClient.once('error', onHandshakeError);
    tlsClient.once('close', abandon);
    tlsClient.once('end', abandon);
    tlsClient.once('secure', () => {
      deadline.cancel();
      tlsClient.off('error', onHandshakeError);
      tlsClient.off('close', abandon);
      tlsClient.off('end', abandon);
      tlsClient.on('error', () => tlsClient.destroy());
      this.gate.track(tlsClient);
      // node:http2 waits for this flag, which only a tls.Server would clear.
      (tlsClient as unknown as { secureConnecting: boolean }).secureConnecting = false;
      this.live.add(tlsClient);
      tlsClient.once('close', () => this.live.delete(tlsClient));
      const session = new Session(t, tlsClient, new TlsUpstream(this.gate, target, this.opts.trust, up), this.opts.idleTimeoutMs);
      this.route(session, up, offered);
    });
  }

  /** Decide what the decrypted stream is and hand it to the right server (or relay it). */
  private route(session: Session, up: TLSSocket | Error, offered: string[]): void {
    const c = session.client;
    const protocol = c.alpnProtocol;
    if (protocol === 'h2') return this.attachH2(session);
    if (protocol === 'http/1.1' || up instanceof Error) return this.attachH1(session);
    if (typeof protocol === 'string' || (offered.length > 0 && !offered.some((p) => HTTP_ALPN.has(p)))) return this.relay(session, up);
    // No ALPN: whoever speaks first decides (an IMAPS-like server greets first; HTTP clients ask).
    const decided = () => {
      c.off('data', fromClient);
      up.off('data', fromUpstream);
      c.off('end', gone);
      up.off('end', gone);
      c.pause();
      up.pause();
    };
    const fromClient = (chunk: Buffer) => {
      decided();
      c.unshift(chunk);
      if (/^[A-Z]{1,20}( |$)/.test(chunk.subarray(0, 21).toString('latin1'))) this.attachH1(session);
      else this.relay(session, up);
    };
    const fromUpstream = (chunk: Buffer) => {
      decided();
      up.unshift(chunk);
      this.relay(session, up);
    };
    // Half-open capable sockets: a side that ends before either spoke ends the tunnel.
    const gone = () => {
      decided();
      c.destroy();
      up.destroy();
    };
    c.on('data', fromClient);
    up.on('data', fromUpstream);
    c.once('end', gone);
    up.once('end', gone);
  }

  private relay(session: Session, up: TLSSocket | Error): void {
    if (up instanceof Error) return void session.client.destroy();
    session.streaming = true;
    session.begin();
    this.gate.log(`proxy: ${session.t.via} ${session.t.target.display}: not HTTP inside TLS; relayed between the two TLS sessions`);
    // Decrypted but not parsed: the stages' guard still sees the client's bytes.
    splice(session.client, up, guardTunnel(this.gate, this.opts.stages, session.t));
    session.client.resume();
    up.resume();
  }

  private attachH1(session: Session): void {
    this.h1Sessions.set(session.client, session);
    this.h1.emit('connection', session.client);
    session.client.resume();
  }

  private attachH2(session: Session): void {
    // HTTP/2 has no half-close: a client's FIN ends the connection (node:http2 would wait).
    session.client.allowHalfOpen = false;
    this.attaching = session;
    try {
      this.h2.emit('connection', session.client);
    } finally {
      this.attaching = undefined;
    }
  }

  private context(session: Session): ExchangeContext {
    const { via } = session.t;
    return {
      stages: this.opts.stages,
      upstream: session.upstream,
      refused: (t, r) => this.gate.refuse(t.host.host, t.port, r.refuse, via, r),
      log: (l) => this.gate.log(l),
    };
  }

  private request(session: Session, fields: { method: string; path: string; headers: Header[]; body: ProxyRequest['body']; upgrade?: string }): ProxyRequest {
    const { target } = session.t;
    return {
      scheme: 'https',
      target,
      method: fields.method,
      path: fields.path,
      authority: formatAuthority(target.host, target.port, 443),
      headers: fields.headers,
      body: fields.body,
      upgrade: fields.upgrade,
    };
  }

  /** Refuse a request that does not name the tunnel's host (recorded as a violation). */
  private mismatch(session: Session, front: Frontend, what: string): void {
    const { target, via } = session.t;
    const reason = `${what} names another host than the TLS tunnel (${target.display})`;
    this.gate.refuse(target.host.host, target.port, reason, via);
    refusalReply(front.reply, target.display, { refuse: reason });
  }

  /** The origin-form path of a request target inside the tunnel, or why it is refused. */
  private pathOf(url: string, target: Target): { path: string } | { refuse: string } {
    if (url.startsWith('/') || url === '*') return { path: url };
    const parsed = parseAbsoluteTarget(url, 'https');
    if (typeof parsed === 'string') return { refuse: parsed };
    if (!isTargetHost(parsed.host, target) || parsed.port !== target.port) return { refuse: `request target ${url.slice(0, 100)}` };
    return { path: parsed.path };
  }

  private h1Fields(session: Session, req: IncomingMessage, front: Frontend): { path: string; headers: Header[] } | null {
    const { target } = session.t;
    const hosts: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') hosts.push(req.rawHeaders[i + 1]!);
    const bad = hosts.find((h) => !namesTarget(h, target));
    if (hosts.length > 1 || bad !== undefined) {
      this.mismatch(session, front, `Host header "${(bad ?? hosts[1]!).slice(0, 100)}"`);
      return null;
    }
    const p = this.pathOf(req.url ?? '/', target);
    if ('refuse' in p) {
      this.mismatch(session, front, p.refuse);
      return null;
    }
    return { path: p.path, headers: endToEndHeaders(req.rawHeaders) };
  }

  private onH1Request(req: IncomingMessage, res: ServerResponse): void {
    const session = this.h1Sessions.get(req.socket);
    if (!session) return void res.destroy();
    res.sendDate = false;
    session.begin();
    res.once('close', () => session.end());
    const front = h1Frontend(res);
    const f = this.h1Fields(session, req, front);
    if (!f) return void req.resume();
    void exchange(front, this.request(session, { method: req.method!, ...f, body: hasBody(req) ? req : null }), this.context(session));
  }

  private onH1Upgrade(req: IncomingMessage, socket: Duplex): void {
    const session = this.h1Sessions.get(socket);
    if (!session) return void socket.destroy();
    session.streaming = true;
    session.begin();
    const front = upgradeFrontend(socket, splice);
    const f = this.h1Fields(session, req, front);
    if (!f) return;
    const upgrade = upgradeToForward(req.headers.upgrade);
    if (!upgrade && hasBody(req)) return front.reply(400, DROPPED_UPGRADE_WITH_BODY, `srt: ${DROPPED_UPGRADE_WITH_BODY}\n`, {});
    void exchange(front, this.request(session, { method: req.method!, ...f, body: null, ...(upgrade ? { upgrade } : {}) }), this.context(session));
  }

  private onH2Stream(stream: ServerHttp2Stream, headers: http2.IncomingHttpHeaders, rawHeaders: string[]): void {
    const session = this.h2Sessions.get(stream.session!);
    if (!session) return void stream.close(0x2);
    const { target } = session.t;
    session.begin();
    stream.once('close', () => session.end());
    const front = h2Frontend(stream);
    const method = String(headers[':method'] ?? '');
    if (method === 'CONNECT') return front.reply(405, 'CONNECT', 'srt: CONNECT inside a TLS tunnel is not supported\n', {});
    if (headers[':scheme'] !== 'https') return this.mismatch(session, front, `:scheme "${String(headers[':scheme'])}"`);
    const authority = headers[':authority'] ?? headers.host;
    if (typeof authority !== 'string' || !namesTarget(authority, target)) return this.mismatch(session, front, `:authority "${String(authority).slice(0, 100)}"`);
    if (headers.host !== undefined && headers.host !== authority && !namesTarget(String(headers.host), target)) {
      return this.mismatch(session, front, `Host header "${String(headers.host).slice(0, 100)}"`);
    }
    // RFC 9113 §8.2.3: split cookie fields are joined for HTTP/1.1 (and harmless for HTTP/2).
    const all = endToEndHeaders(rawHeaders);
    const cookies = all.filter(([k]) => k.toLowerCase() === 'cookie').map(([, v]) => v);
    const h = all.filter(([k]) => k.toLowerCase() !== 'cookie');
    if (cookies.length) h.push(['cookie', cookies.join('; ')]);
    const body = stream.endAfterHeaders ? null : stream;
    void exchange(front, this.request(session, { method, path: String(headers[':path'] ?? '/'), headers: h, body }), this.context(session));
  }

  close(): void {
    for (const s of this.live) s.destroy();
    this.live.clear();
  }
}
