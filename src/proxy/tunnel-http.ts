// HTTP inside terminated tunnels: one shared node:http and one node:http2 server (neither
// listens anywhere) take the decrypted connections; every request or stream must name the
// tunnel's host, then goes through the pipeline (exchange.ts) to this tunnel's upstream.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { namedLoopback, normalizeHost } from './domains.js';
import { exchange, refusalReply, type ExchangeContext, type Frontend } from './exchange.js';
import { h1Frontend, h2Frontend, rawReply, upgradeFrontend } from './frontends.js';
import type { Gate, Target } from './gate.js';
import { DROPPED_UPGRADE_WITH_BODY, hasBody, parseAbsoluteTarget, parseAuthority } from './http.js';
import { endToEndHeaders, formatAuthority, upgradeToForward, type Header, type ProxyRequest, type Stage } from './pipeline.js';
import { H2_SESSION_WINDOW, H2_STREAM_WINDOW, type TlsUpstream } from './tls-upstream.js';
import { splice, type AdmittedTunnel } from './tunnel.js';

/** One terminated tunnel: its client TLS socket, its upstream, its requests in flight. */
export class Session {
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

export class TunnelHttp {
  private readonly h1: http.Server;
  private readonly h2: Http2Server;
  private readonly h1Sessions = new WeakMap<Duplex, Session>();
  private readonly h2Sessions = new WeakMap<Http2Session, Session>();
  /** Handed from attachH2() to the h2 server's synchronous 'session' event. */
  private attaching: Session | undefined;

  constructor(
    private readonly gate: Gate,
    private readonly stages: readonly Stage[],
    maxHeaderSize: number,
  ) {
    this.h1 = http.createServer({ maxHeaderSize: maxHeaderSize, requestTimeout: 0, keepAliveTimeout: 0 });
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

  attachH1(session: Session): void {
    this.h1Sessions.set(session.client, session);
    this.h1.emit('connection', session.client);
    session.client.resume();
  }

  attachH2(session: Session): void {
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
      stages: this.stages,
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
}
