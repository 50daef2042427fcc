// HTTP proxy (SPEC §6): absolute-form requests (`GET http://host/path`), CONNECT tunnels and
// plain-HTTP upgrades (websockets over ws://). Built on node:http's parser, which enforces
// header size, framing (chunked vs Content-Length, no smuggling ambiguity), pipelining order and
// the header timeout (slowloris); everything after the parser is ours.
//
// Destination = the request target's authority, never the Host header: an absolute-form request
// is routed and judged by its `http://authority`, and the Host header sent upstream is rewritten
// to that authority (RFC 9112 §3.2.2: a proxy MUST ignore the received Host). Origin-form
// requests (`GET /x` with only a Host header) are refused: Host never decides where we connect.
// Userinfo in the target (`http://allowed.com@evil.com/`, `http://user@host/`) is refused.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import { formatViolation, upstreamErrorReason, type Gate, type Target, type Via } from './gate.js';

/** A request about to be forwarded: the ONE thing the request hook sees and may rewrite. */
export interface ForwardRequest {
  method: string;
  /** Authorized destination (decision and address guard already passed). */
  target: Target;
  /** Origin-form path and query sent upstream. */
  path: string;
  /** End-to-end headers in order, Host first; hop-by-hop headers are already removed. */
  headers: Array<[string, string]>;
  /** The request body as it streams from the client (replace it to rewrite bodies). */
  body: Readable;
}

/**
 * Inspect / rewrite a request before it is forwarded (TLS termination and credential
 * substitution plug in here). Return the request to send, or `{ refuse }` to answer 403.
 */
export type RequestHook = (req: ForwardRequest) => ForwardRequest | { refuse: string } | Promise<ForwardRequest | { refuse: string }>;

export interface HttpProxyOptions {
  /** Time a client has to send a complete request head (slowloris bound). */
  headersTimeoutMs: number;
  maxHeaderSize: number;
  requestHook?: RequestHook;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

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

/** Split an absolute-form request target; a string is the reason it is refused. */
export function parseAbsoluteTarget(url: string): { host: string; port: number; path: string } | string {
  if (url.startsWith('/') || url === '*') return 'not a proxy request (expected an absolute http:// URL)';
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^#]*)/.exec(url);
  if (!m) return 'malformed request target';
  const scheme = m[1]!.toLowerCase();
  if (scheme === 'https') return 'https:// must be requested with CONNECT';
  if (scheme !== 'http') return `unsupported scheme ${scheme}:`;
  if (m[2]!.includes('@')) return 'userinfo in the request target is not accepted';
  const auth = parseAuthority(m[2]!, 80);
  if (typeof auth === 'string') return auth;
  const rest = m[3]!;
  const path = rest === '' ? '/' : rest.startsWith('?') ? `/${rest}` : rest;
  return { ...auth, path };
}

function phrase(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}

function hostHeader(t: Target): string {
  const h = t.host.ip === 6 ? `[${t.host.host}]` : t.host.host;
  return t.port === 80 ? h : `${h}:${t.port}`;
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

/** Serialize a small response on a raw socket (CONNECT/upgrade/parse failures) and close it. */
function rawReply(socket: Duplex, status: number, statusPhrase: string, body: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const head = [`HTTP/1.1 ${status} ${phrase(statusPhrase)}`];
  for (const [k, v] of Object.entries({ ...headers, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' })) {
    head.push(`${k}: ${v}`);
  }
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  setTimeout(() => socket.destroy(), 1000).unref();
}

const BLOCKED = { 'X-Proxy-Error': 'blocked-by-srt' };

function blockedBody(display: string, reason: string): string {
  const [host, port] = [display.slice(0, display.lastIndexOf(':')), Number(display.slice(display.lastIndexOf(':') + 1))];
  return `${formatViolation({ host: host.replace(/^\[|\]$/g, ''), port, reason })}\n`;
}

function sendBlocked(res: ServerResponse, display: string, reason: string): void {
  const body = blockedBody(display, reason);
  res.writeHead(403, phrase(`Blocked by srt: ${reason}`), { ...BLOCKED, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function sendError(res: ServerResponse, status: number, reason: string, proxyError: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `srt: ${reason}\n`;
  res.writeHead(status, phrase(reason), { 'X-Proxy-Error': proxyError, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** End-to-end request headers from the client, Host replaced by the target authority. */
function forwardHeaders(req: IncomingMessage, target: Target, keepUpgrade: boolean): Array<[string, string]> {
  const raw = req.rawHeaders;
  // Headers the client's Connection header names are hop-by-hop too.
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') for (const t of raw[i + 1]!.split(',')) (named ??= new Set()).add(t.trim().toLowerCase());
  }
  const out: Array<[string, string]> = [['Host', hostHeader(target)]];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (lower === 'host') continue;
    if (keepUpgrade && (lower === 'upgrade' || lower === 'connection')) {
      out.push([name, raw[i + 1]!]);
      continue;
    }
    if (HOP_BY_HOP.has(lower) || named?.has(lower)) continue;
    out.push([name, raw[i + 1]!]);
  }
  return out;
}

/**
 * THE inspection point: every plain-HTTP request (and, later, every request decrypted by TLS
 * termination) passes through here after authorization and before a byte goes upstream.
 */
export async function inspectRequest(fwd: ForwardRequest, hook: RequestHook | undefined): Promise<ForwardRequest | { refuse: string }> {
  return hook ? hook(fwd) : fwd;
}

/** Upstream connections for one client connection: reused across its requests, freed with it. */
class TargetAgent extends http.Agent {
  constructor(private readonly gate: Gate) {
    super({ keepAlive: true, maxSockets: 8, maxFreeSockets: 8, scheduling: 'lifo' });
  }
  override getName(o: http.ClientRequestArgs & { srtTarget?: Target }): string {
    const t = o.srtTarget!;
    return `${t.display}|${t.upstream ? `via ${t.upstream.host}` : t.addresses.join(',')}`;
  }
  // node:http's Agent accepts an asynchronous createConnection (callback form).
  override createConnection(o: http.ClientRequestArgs, cb?: (err: Error | null, s: Duplex) => void): undefined {
    this.gate.dial((o as { srtTarget: Target }).srtTarget).then(
      (s) => {
        cb!(null, s);
        // A chained socket arrives paused (bytes after the CONNECT reply stay buffered); the
        // client request attaches its parser on the next tick, after which it may flow.
        setImmediate(() => s.resume());
      },
      (e: Error) => cb!(e, undefined as unknown as Duplex),
    );
    return undefined;
  }
}

export function createHttpProxy(gate: Gate, opts: HttpProxyOptions): http.Server {
  const server = http.createServer({
    maxHeaderSize: opts.maxHeaderSize,
    headersTimeout: opts.headersTimeoutMs,
    requestTimeout: 0, // large/slow uploads are fine; only the head is time-bounded
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(opts.headersTimeoutMs / 4))),
    keepAliveTimeout: 5000,
  });
  const agents = new WeakMap<Socket, TargetAgent>();

  server.on('connection', (socket: Socket) => {
    gate.track(socket);
    socket.once('close', () => agents.get(socket)?.destroy());
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
    void forward(req, res).catch((e) => sendError(res, 502, `proxy error: ${upstreamErrorReason(e)}`, 'upstream-error'));
  });

  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parsed = parseAbsoluteTarget(req.url ?? '');
    if (typeof parsed === 'string') {
      req.resume();
      sendError(res, 400, parsed, 'bad-request');
      return;
    }
    const auth = await gate.authorize(parsed.host, parsed.port, 'http');
    if (!auth.ok) {
      req.resume();
      sendBlocked(res, auth.display, auth.reason);
      return;
    }
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    const fwd = await inspectRequest(
      { method: req.method!, target: auth.target, path: parsed.path, headers: forwardHeaders(req, auth.target, false), body: req },
      opts.requestHook,
    );
    if ('refuse' in fwd) {
      req.resume();
      sendBlocked(res, auth.target.display, fwd.refuse);
      return;
    }
    if (res.destroyed) return;
    const headers = fwd.headers.flat();
    if (hasBody && !fwd.headers.some(([k]) => k.toLowerCase() === 'content-length')) headers.push('Transfer-Encoding', 'chunked');

    const socket = req.socket;
    let agent = agents.get(socket);
    if (!agent) {
      agent = new TargetAgent(gate);
      agents.set(socket, agent);
    }
    const upReq = http.request({
      method: fwd.method,
      path: fwd.path,
      headers: headers as unknown as http.OutgoingHttpHeaders,
      setHost: false,
      agent,
      srtTarget: fwd.target,
    } as http.RequestOptions);

    upReq.on('response', (upRes) => {
      const raw = upRes.rawHeaders;
      const out: string[] = [];
      for (let i = 0; i < raw.length; i += 2) {
        if (HOP_BY_HOP.has(raw[i]!.toLowerCase())) continue;
        out.push(raw[i]!, raw[i + 1]!);
      }
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, out as unknown as http.OutgoingHttpHeaders);
      // Hand-rolled pipe (backpressure: pause until the client drains): a fraction of pipe()'s
      // per-request listeners, on the path every response takes. A client that goes away
      // destroys upReq (res 'close' below), which frees upRes too.
      upRes.on('data', (chunk: Buffer) => {
        if (!res.write(chunk)) upRes.pause();
      });
      res.on('drain', () => upRes.resume());
      upRes.on('end', () => res.end());
      upRes.on('error', () => res.destroy());
    });
    upReq.on('error', (e) => {
      gate.log(`proxy: http upstream error ${fwd.target.display}: ${upstreamErrorReason(e)}`);
      sendError(res, 502, `upstream ${fwd.target.display}: ${upstreamErrorReason(e)}`, 'upstream-error');
    });
    res.on('close', () => {
      if (!res.writableFinished) upReq.destroy();
    });
    req.on('error', () => upReq.destroy());
    if (fwd.body === req && !hasBody) {
      // No request body (the parser saw neither Content-Length nor Transfer-Encoding): send the
      // head now instead of piping an empty stream.
      req.resume();
      upReq.end();
    } else fwd.body.pipe(upReq);
  }

  // A CONNECT or upgrade pipelined behind requests on one connection takes the raw socket as
  // soon as it is parsed: answer it only once the earlier responses are out, so their bytes
  // never interleave with (or get cut off by) the tunnel's.
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    void responses.drained(client).then(() => openTunnel(gate, req, client as Socket, head, 'connect'));
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    void responses.drained(client).then(() => openTunnel(gate, req, client as Socket, head, 'upgrade', opts.requestHook));
  });
  return server;
}

/** CONNECT (`host:port`) or a plain-HTTP upgrade request: authorize, dial, then splice both ways. */
async function openTunnel(gate: Gate, req: IncomingMessage, client: Socket, head: Buffer, via: Via, hook?: RequestHook): Promise<void> {
  client.on('error', () => client.destroy());
  let host: string;
  let port: number;
  let path = '';
  if (via === 'connect') {
    const a = parseAuthority(req.url ?? '');
    if (typeof a === 'string') return rawReply(client, 400, `bad CONNECT target: ${a}`, `srt: bad CONNECT target: ${a}\n`);
    ({ host, port } = a);
  } else {
    const t = parseAbsoluteTarget(req.url ?? '');
    if (typeof t === 'string') return rawReply(client, 400, t, `srt: ${t}\n`);
    ({ host, port, path } = t);
  }
  const auth = await gate.authorize(host, port, via);
  if (!auth.ok) return rawReply(client, 403, `Blocked by srt: ${auth.reason}`, blockedBody(auth.display, auth.reason), BLOCKED);

  let requestHead = '';
  if (via === 'upgrade') {
    const fwd = await inspectRequest(
      { method: req.method!, target: auth.target, path, headers: forwardHeaders(req, auth.target, true), body: req },
      hook,
    );
    if ('refuse' in fwd) return rawReply(client, 403, `Blocked by srt: ${fwd.refuse}`, blockedBody(auth.target.display, fwd.refuse), BLOCKED);
    requestHead = `${fwd.method} ${fwd.path} HTTP/1.1\r\n${fwd.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  }

  let upstream: Socket;
  try {
    if (client.destroyed) return;
    upstream = await gate.dial(auth.target);
  } catch (e) {
    const why = `upstream ${auth.target.display}: ${upstreamErrorReason(e)}`;
    gate.log(`proxy: ${via} ${why}`);
    return rawReply(client, 502, why, `srt: ${why}\n`, { 'X-Proxy-Error': 'upstream-error' });
  }
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  if (via === 'connect') client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  else upstream.write(requestHead);
  if (head.length > 0) upstream.write(head);
  splice(client, upstream);
}

/**
 * Pipe both directions with backpressure (at most a high-water mark buffered per direction);
 * a half-close travels through; an error or a full close on one side frees the other once what
 * was already read has been flushed.
 */
export function splice(a: Socket, b: Socket): void {
  const closeAfterFlush = (s: Socket) => {
    if (s.destroyed) return;
    if (s.writableFinished) s.destroy();
    else {
      s.end();
      s.once('finish', () => s.destroy());
    }
  };
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.once('close', () => closeAfterFlush(b));
  b.once('close', () => closeAfterFlush(a));
  a.pipe(b);
  b.pipe(a);
}
