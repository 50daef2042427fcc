// The upstream side of an exchange: a request forwarded over HTTP/1.1 (node:http's client on a
// connection held per client connection: plain TCP from the gate, or verified TLS) or as a
// stream of an HTTP/2 session.

import http from 'node:http';
import type { ClientHttp2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import { codings, DECODABLE, decode } from './codings.js';
import type { Stopper, UpstreamReply } from './exchange.js';
import type { Target } from './gate.js';
import { fromH2Headers, toH2Headers } from './h2-headers.js';
import { endToEndHeaders, headerValue, type Header, type ProxyRequest, type ProxyResponse } from './pipeline.js';

/** The Upgrade value of a 101 (hop-by-hop, so not among the response's headers). */
export const upgradedTo = new WeakMap<ProxyResponse, string>();

/** Most connections one holder keeps open to one destination; requests beyond (pipelined ones)
 *  wait for one of them to be free, as with an http.Agent's maxSockets. */
const PER_DESTINATION = 8;

interface Destination {
  sockets: Set<Duplex>;
  idle: Duplex[];
  dialling: number;
  waiting: { req: http.ClientRequest; target: Target }[];
}

const ignore = () => undefined;

// Upstream sockets are half-open capable (the gate's dial): one whose peer ends it while it is
// held would take the next request and never answer, its read side already done.
function endWhileHeld(this: Duplex): void {
  this.destroy();
}

/** The connection held last for `d`, no longer watched as held. */
function takeHeld(d: Destination): Duplex | undefined {
  const s = d.idle.pop();
  s?.off('end', endWhileHeld);
  return s;
}

/** End a request that got no connection the way node:http's agents do: `error`, then `close`. */
function failRequest(req: http.ClientRequest, e: Error): void {
  (req.onSocket as (socket: Socket | undefined, err: Error) => void).call(req, undefined, e);
}

/**
 * The upstream connections of one client connection (or one terminated tunnel), handed to
 * node:http's ClientRequest as its agent. A connection carries one request at a time; once its
 * response is complete (ClientRequest emits `free` on it) it is held for the next request to the
 * same destination: the same host:port at the same addresses the guard passed, or through the
 * same upstream proxy. A request to any other destination never gets it. Each request was judged
 * (policy, address guard, stages) before it gets here. Freed with its holder.
 */
export class HeldConnections {
  // ClientRequest reads these: a keep-alive agent, so it asks for keep-alive and emits `free`.
  readonly keepAlive = true;
  readonly maxSockets = PER_DESTINATION;
  private readonly destinations = new Map<string, Destination>();
  private closed = false;

  constructor(private readonly connect: (target: Target) => Promise<Duplex>) {}

  addRequest(req: http.ClientRequest, o: { srtTarget: Target }): void {
    const t = o.srtTarget;
    const key = `${t.display}|${t.upstream ? `via ${t.upstream.host}` : t.addresses.join(',')}`;
    let d = this.destinations.get(key);
    if (!d) {
      d = { sockets: new Set(), idle: [], dialling: 0, waiting: [] };
      this.destinations.set(key, d);
    }
    const held = takeHeld(d);
    if (held) {
      req.reusedSocket = true;
      req.onSocket(held as Socket);
    } else if (d.sockets.size + d.dialling < PER_DESTINATION) this.dial(req, t, key, d);
    else d.waiting.push({ req, target: t });
  }

  private dial(req: http.ClientRequest, t: Target, key: string, d: Destination): void {
    d.dialling++;
    this.connect(t).then(
      (s) => {
        d.dialling--;
        if (this.closed) {
          s.destroy();
          failRequest(req, new Error('client connection closed'));
          return;
        }
        this.adopt(s, key, d);
        req.onSocket(s as Socket);
        // A chained socket arrives paused (bytes after the CONNECT reply stay buffered); the
        // request attaches its parser on the next tick, after which it may flow.
        setImmediate(() => s.resume());
      },
      (e: Error) => {
        d.dialling--;
        failRequest(req, e);
        this.next(key, d);
      },
    );
  }

  private adopt(s: Duplex, key: string, d: Destination): void {
    d.sockets.add(s);
    const forget = () => {
      d.sockets.delete(s);
      const i = d.idle.indexOf(s);
      if (i !== -1) d.idle.splice(i, 1);
      this.next(key, d);
    };
    const free = () => {
      if (this.closed || s.destroyed || !s.writable || s.readableEnded) return s.destroy();
      // The finished request stays reachable from the socket otherwise.
      (s as { _httpMessage?: unknown })._httpMessage = null;
      s.once('end', endWhileHeld);
      d.idle.push(s);
      this.next(key, d);
    };
    // An upgrade (101) takes the connection over: it is no longer this holder's.
    const taken = () => {
      s.off('free', free).off('close', forget).off('agentRemove', taken).off('error', ignore);
      forget();
    };
    // Between requests no ClientRequest listens; an error then only ends the connection.
    s.on('free', free).on('close', forget).on('agentRemove', taken).on('error', ignore);
  }

  /** Hand a free connection, or a new one, to the next waiting request; drop an empty entry. */
  private next(key: string, d: Destination): void {
    // A request stopped while it waited still gets one: it hands it back at once (`free`).
    const first = d.waiting[0];
    if (first) {
      const held = takeHeld(d);
      if (held) {
        d.waiting.shift();
        first.req.reusedSocket = true;
        first.req.onSocket(held as Socket);
      } else if (d.sockets.size + d.dialling < PER_DESTINATION) {
        d.waiting.shift();
        this.dial(first.req, first.target, key, d);
      }
    } else if (d.sockets.size === 0 && d.dialling === 0) this.destinations.delete(key);
  }

  destroy(): void {
    this.closed = true;
    for (const d of this.destinations.values()) {
      for (const w of d.waiting.splice(0)) failRequest(w.req, new Error('client connection closed'));
      for (const s of d.sockets) s.destroy();
    }
  }
}

/** Forward over HTTP/1.1 on one of `held`'s connections. */
export function sendH1(req: ProxyRequest, held: HeldConnections, stopper: Stopper): Promise<UpstreamReply> {
  const headers: string[] = ['Host', req.authority];
  for (const [k, v] of req.headers) if (k.toLowerCase() !== 'te') headers.push(k, v);
  if (req.upgrade) headers.push('Connection', 'Upgrade', 'Upgrade', req.upgrade);
  else if (req.body && headerValue(req.headers, 'content-length') === undefined) headers.push('Transfer-Encoding', 'chunked');
  return new Promise((resolve, reject) => {
    const upReq = http.request({
      method: req.method,
      path: req.path,
      headers: headers as unknown as http.OutgoingHttpHeaders,
      setHost: false,
      agent: held as unknown as http.Agent,
      srtTarget: req.target,
    } as http.RequestOptions);
    const abort = () => upReq.destroy();
    stopper.on(abort);
    upReq.on('response', (upRes) => {
      upRes.once('close', () => stopper.off(abort));
      // A response to HEAD, a 204 or a 304 has no body (RFC 9110 §6.4.1), whatever its
      // Content-Length says: response stages must not treat that length as one they may change.
      const bodiless = req.method === 'HEAD' || upRes.statusCode === 204 || upRes.statusCode === 304;
      if (bodiless) {
        upRes.resume();
        return resolve({ kind: 'response', res: h1Response(upRes, null) });
      }
      // node:http undoes chunked; another transfer coding (`gzip, chunked`) is still on the body,
      // and Transfer-Encoding is hop-by-hop: srt removes it, or the client could not.
      const transfer = codings(rawHeaderLines(upRes.rawHeaders, 'transfer-encoding')).filter((c) => c !== 'chunked');
      const body = decode(upRes, transfer);
      if ('unknown' in body) {
        upRes.destroy();
        return reject(new Error(`Transfer-Encoding ${body.unknown}, which srt cannot decode (it decodes ${DECODABLE.join(', ')})`));
      }
      resolve({ kind: 'response', res: h1Response(upRes, body) });
    });
    upReq.on('upgrade', (upRes, socket, head) => {
      stopper.off(abort);
      const res = h1Response(upRes, null);
      if (upRes.headers.upgrade) upgradedTo.set(res, upRes.headers.upgrade);
      resolve({ kind: 'upgrade', res, socket, head });
    });
    upReq.on('error', reject);
    const body = req.body;
    if (!body) upReq.end();
    else {
      body.on('error', (e) => upReq.destroy(e));
      body.pipe(upReq);
    }
  });
}

/** The values of every `name` (lower case) line of a raw header list, from node:http's rawHeaders
 *  (its headers object is built on first use, and nothing else on this path needs it). */
function rawHeaderLines(raw: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name) out.push(raw[i + 1]!);
  return out;
}

function h1Response(upRes: http.IncomingMessage, body: Readable | null): ProxyResponse {
  return {
    status: upRes.statusCode ?? 502,
    statusMessage: upRes.statusMessage ?? '',
    headers: endToEndHeaders(upRes.rawHeaders),
    body,
    trailers: () => endToEndHeaders(upRes.rawTrailers),
  };
}

/** Forward one request as a stream of an HTTP/2 session. */
export function sendH2(req: ProxyRequest, session: ClientHttp2Session, stopper: Stopper): Promise<UpstreamReply> {
  if (req.upgrade) return Promise.reject(new Error(`an HTTP/1.1 upgrade (${req.upgrade}) cannot be sent to an HTTP/2 upstream`));
  const h = toH2Headers(req.headers);
  Object.assign(h, { ':method': req.method, ':path': req.path, ':scheme': 'https', ':authority': req.authority });
  return new Promise((resolve, reject) => {
    const stream = session.request(h, { endStream: req.body === null });
    const abort = () => stream.close(0x8); // CANCEL
    stopper.on(abort);
    stream.once('close', () => stopper.off(abort));
    let trailers: Header[] = [];
    stream.on('trailers', (t) => (trailers = fromH2Headers(t)));
    stream.on('response', (headers) => {
      const status = Number(headers[':status'] ?? 502);
      const bodiless = req.method === 'HEAD' || status === 204 || status === 304;
      if (bodiless) stream.resume();
      resolve({ kind: 'response', res: { status, statusMessage: '', headers: fromH2Headers(headers), body: bodiless ? null : stream, trailers: () => trailers } });
    });
    stream.on('error', reject);
    const body = req.body;
    if (body) {
      body.on('error', (e) => stream.destroy(e));
      body.pipe(stream);
    }
  });
}
