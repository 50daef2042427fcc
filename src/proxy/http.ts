// HTTP proxy (SPEC §6): absolute-form requests (`GET http://host/path`), CONNECT tunnels and
// plain-HTTP upgrades (websockets over ws://). Built on node:http's parser, which enforces
// header size, framing (chunked vs Content-Length, no smuggling ambiguity), pipelining order and
// the header timeout (slowloris); everything after the parser is the pipeline (exchange.ts).
//
// Destination = the request target's authority, never the Host header: an absolute-form request
// is routed and judged by its `http://authority`, and the Host header sent upstream is rewritten
// to that authority (RFC 9112 §3.2.2: a proxy MUST ignore the received Host). Origin-form
// requests (`GET /x` with only a Host header) are refused: Host never decides where we connect.
// Userinfo in the target (`http://allowed.com@evil.com/`, `http://user@host/`) is refused.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { exchange, refusalReply, type ExchangeContext, type Upstream } from './exchange.js';
import { h1Frontend, rawReply, upgradeFrontend } from './frontends.js';
import { HeldConnections, sendH1 } from './upstream-send.js';
import { upstreamErrorReason, type Gate } from './gate.js';
import { endToEndHeaders, formatAuthority, upgradeToForward, type Refusal, type Stage } from './pipeline.js';
import { splice, type Tunnels } from './tunnel.js';

export interface HttpProxyOptions {
  /** Time a client has to send a complete request head (slowloris bound). */
  headersTimeoutMs: number;
  maxHeaderSize: number;
  stages: readonly Stage[];
  tunnels: Tunnels;
}

/** `host[:port]` / `[v6][:port]` → parts; a string is the reason it is malformed. */
export function parseAuthority(authority: string, defaultPort?: number): { host: string; port: number } | string {
  let host: string;
  let portText: string | undefined;
  const v6 = /^\[([^\]]*)\](?::(.*))?$/.exec(authority);
  if (v6) {
    host = v6[1]!;
    portText = v6[2];
  } else {
    const parts = authority.split(':');
    if (parts.length > 2) return 'an IPv6 address must be bracketed';
    host = parts[0]!;
    portText = parts[1];
  }
  if (host === '') return 'missing host';
  if (portText === undefined || portText === '') {
    if (defaultPort === undefined) return 'missing port';
    return { host, port: defaultPort };
  }
  if (!/^\d{1,5}$/.test(portText)) return `invalid port "${portText.slice(0, 20)}"`;
  const port = Number(portText);
  if (port < 1 || port > 65535) return `invalid port ${port}`;
  return { host, port };
}

/**
 * Split an absolute-form request target (`http://host[:port]/path`; inside a terminated TLS
 * tunnel `https://…`); a string is the reason it is refused.
 */
export function parseAbsoluteTarget(url: string, expected: 'http' | 'https' = 'http'): { host: string; port: number; path: string } | string {
  if (url.startsWith('/') || url === '*') return 'not a proxy request (expected an absolute http:// URL)';
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^#]*)/.exec(url);
  if (!m) return 'malformed request target';
  const scheme = m[1]!.toLowerCase();
  if (scheme !== expected) {
    if (scheme === 'https') return 'https:// must be requested with CONNECT';
    return `unsupported scheme ${scheme}:${expected === 'https' ? ' inside a TLS tunnel' : ''}`;
  }
  if (m[2]!.includes('@')) return 'userinfo in the request target is not accepted';
  const auth = parseAuthority(m[2]!, expected === 'https' ? 443 : 80);
  if (typeof auth === 'string') return auth;
  const rest = m[3]!;
  const path = rest === '' ? '/' : rest.startsWith('?') ? `/${rest}` : rest;
  return { ...auth, path };
}

/** Responses still being sent per client connection, for tunnels pipelined behind them. */
class PendingResponses {
  private readonly pending = new WeakMap<Duplex, { count: number; waiters: (() => void)[] }>();

  begin(socket: Duplex, res: ServerResponse): void {
    const entry = this.pending.get(socket) ?? { count: 0, waiters: [] };
    this.pending.set(socket, entry);
    entry.count++;
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      if (--entry.count === 0) for (const wake of entry.waiters.splice(0)) wake();
    };
    res.on('finish', end);
    res.on('close', end);
  }

  /** Resolves once every response begun on `socket` has finished or been abandoned. */
  drained(socket: Duplex): Promise<void> {
    const entry = this.pending.get(socket);
    if (!entry || entry.count === 0) return Promise.resolve();
    return new Promise((resolve) => entry.waiters.push(resolve));
  }
}

/** A refused authorization as the client hears it (the tripwire's has its own X-Proxy-Error). */
function refusalOfAuth(auth: { reason: string; proxyError?: string }): Refusal {
  return auth.proxyError ? { refuse: auth.reason, proxyError: auth.proxyError } : { refuse: auth.reason };
}

function refusedReply(socket: Duplex, display: string, r: Refusal): void {
  refusalReply((status, statusPhrase, body, headers) => rawReply(socket, status, statusPhrase, body, headers), display, r);
}

export const DROPPED_UPGRADE_WITH_BODY = 'an upgrade to HTTP/2 (h2c) is not passed on, and this request has a body: send it without the Upgrade header';

/** Did the parser see a body (Content-Length > 0 or Transfer-Encoding)? */
export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

export function createHttpProxy(gate: Gate, opts: HttpProxyOptions): http.Server {
  const server = http.createServer({
    maxHeaderSize: opts.maxHeaderSize,
    headersTimeout: opts.headersTimeoutMs,
    requestTimeout: 0, // large/slow uploads are fine; only the head is time-bounded
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(opts.headersTimeoutMs / 4))),
    keepAliveTimeout: 5000,
  });
  // Upstream connections of one client connection: reused across its requests, freed with it.
  const held = new WeakMap<Duplex, HeldConnections>();
  const heldOf = (socket: Duplex) => {
    let h = held.get(socket);
    if (!h) {
      h = new HeldConnections((t) => gate.dial(t));
      held.set(socket, h);
    }
    return h;
  };
  const refused: ExchangeContext['refused'] = (t, r) => gate.refuse(t.host.host, t.port, r.refuse, 'http', r);
  const log: ExchangeContext['log'] = (l) => gate.log(l);
  // One context per client connection, made with its first request.
  const contexts = new WeakMap<Duplex, ExchangeContext>();
  const context = (socket: Duplex): ExchangeContext => {
    let ctx = contexts.get(socket);
    if (!ctx) {
      ctx = { stages: opts.stages, upstream: { send: (req, stopper) => sendH1(req, heldOf(socket), stopper) }, refused, log };
      contexts.set(socket, ctx);
    }
    return ctx;
  };

  server.on('connection', (socket: Socket) => {
    gate.track(socket);
    socket.once('close', () => held.get(socket)?.destroy());
  });

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, why] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'request header too large']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'request head not received in time']
          : [400, `malformed request (${err.code ?? 'parse error'})`];
    gate.log(`proxy: client error: ${why}`);
    rawReply(socket, status, why, `srt: ${why}\n`);
  });

  const responses = new PendingResponses();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    res.sendDate = false;
    responses.begin(req.socket, res);
    const parsed = parseAbsoluteTarget(req.url ?? '');
    if (typeof parsed === 'string') {
      req.resume();
      h1Frontend(res).reply(400, parsed, `srt: ${parsed}\n`, { 'X-Proxy-Error': 'bad-request' });
      return;
    }
    void gate.authorize(parsed.host, parsed.port, 'http').then((auth) => {
      if (!auth.ok) {
        req.resume();
        refusalReply(h1Frontend(res).reply, auth.display, refusalOfAuth(auth));
        return;
      }
      const t = auth.target;
      return exchange(h1Frontend(res), {
        scheme: 'http', target: t, method: req.method!, path: parsed.path,
        authority: formatAuthority(t.host, t.port, 80), headers: endToEndHeaders(req.rawHeaders),
        body: hasBody(req) ? req : null, upgrade: undefined,
      }, context(req.socket));
    }, (e: Error) => h1Frontend(res).reply(502, `proxy error: ${e.message}`, `srt: proxy error: ${e.message}\n`, { 'X-Proxy-Error': 'proxy-error' }));
  });

  // A CONNECT or upgrade pipelined behind requests on one connection takes the raw socket as
  // soon as it is parsed: answer it only once the earlier responses are out, so their bytes
  // never interleave with (or get cut off by) the tunnel's.
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    void responses.drained(client).then(() => openTunnel(gate, opts.tunnels, req, client as Socket, head));
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    void responses.drained(client).then(() => openUpgrade(req, client as Socket, head));
  });

  /** A plain-HTTP upgrade (ws://): authorize, then the request pipeline sees its head like any request's. */
  async function openUpgrade(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const t = parseAbsoluteTarget(req.url ?? '');
    if (typeof t === 'string') return rawReply(client, 400, t, `srt: ${t}\n`);
    const auth = await gate.authorize(t.host, t.port, 'upgrade');
    if (!auth.ok) return refusedReply(client, auth.display, refusalOfAuth(auth));
    const target = auth.target;
    const upgrade = upgradeToForward(req.headers.upgrade);
    // node:http hands an upgrade request over before its body: one that is not passed on as an
    // upgrade can only go upstream as an ordinary request if it has none.
    if (!upgrade && hasBody(req)) return rawReply(client, 400, DROPPED_UPGRADE_WITH_BODY, `srt: ${DROPPED_UPGRADE_WITH_BODY}\n`);
    // Bytes the client sent after its upgrade request go upstream once the upgrade is answered.
    const upstream: Upstream = {
      send: async (r, stopper) => {
        const reply = await sendH1(r, heldOf(client), stopper);
        if (reply.kind === 'upgrade' && head.length > 0) reply.socket.write(head);
        return reply;
      },
    };
    await exchange(upgradeFrontend(client, splice), {
      scheme: 'http', target, method: req.method!, path: t.path,
      authority: formatAuthority(target.host, target.port, 80), headers: endToEndHeaders(req.rawHeaders),
      body: null, upgrade,
    }, { ...context(client), upstream });
  }
  return server;
}

/** CONNECT `host:port`: authorize, admit, dial, answer 200, then hand the two sockets to the tunnels. */
async function openTunnel(gate: Gate, tunnels: Tunnels, req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
  client.on('error', () => client.destroy());
  const a = parseAuthority(req.url ?? '');
  if (typeof a === 'string') return rawReply(client, 400, `bad CONNECT target: ${a}`, `srt: bad CONNECT target: ${a}\n`);
  const auth = await gate.authorize(a.host, a.port, 'connect');
  if (!auth.ok) return refusedReply(client, auth.display, refusalOfAuth(auth));
  const admitted = tunnels.admit(auth.target, 'connect');
  if (!admitted.ok) return refusedReply(client, auth.target.display, admitted.refusal);
  const slot = admitted.slot;

  let upstream: Socket;
  try {
    if (client.destroyed) return slot.release();
    upstream = await gate.dial(auth.target);
  } catch (e) {
    slot.release();
    const why = `upstream ${auth.target.display}: ${upstreamErrorReason(e)}`;
    gate.log(`proxy: connect ${why}`);
    return rawReply(client, 502, why, `srt: ${why}\n`, { 'X-Proxy-Error': 'upstream-error' });
  }
  if (client.destroyed) {
    slot.release();
    upstream.destroy();
    return;
  }
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  tunnels.serve(client, upstream, slot, head);
}
