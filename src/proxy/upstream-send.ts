// The upstream side of an exchange: a request forwarded over HTTP/1.1 (node:http over any socket
// an agent hands it: plain TCP from the gate, or verified TLS) or as a stream of an HTTP/2 session.

import http from 'node:http';
import type { ClientHttp2Session } from 'node:http2';
import type { Duplex, Readable } from 'node:stream';
import { codings, DECODABLE, decode } from './codings.js';
import type { Stopper, UpstreamReply } from './exchange.js';
import type { Target } from './gate.js';
import { fromH2Headers, toH2Headers } from './h2-headers.js';
import { endToEndHeaders, headerValue, type Header, type ProxyRequest, type ProxyResponse } from './pipeline.js';

/** The Upgrade value of a 101 (hop-by-hop, so not among the response's headers). */
export const upgradedTo = new WeakMap<ProxyResponse, string>();

/**
 * An http.Agent whose connections come from `connect` (the gate's dial, or a verified TLS
 * connection): reused across the requests of one client connection and freed with it.
 */
export class DialAgent extends http.Agent {
  constructor(private readonly connect: (target: Target) => Promise<Duplex>) {
    super({ keepAlive: true, maxSockets: 8, maxFreeSockets: 8, scheduling: 'lifo' });
  }
  override getName(o: http.ClientRequestArgs & { srtTarget?: Target }): string {
    const t = o.srtTarget!;
    return `${t.display}|${t.upstream ? `via ${t.upstream.host}` : t.addresses.join(',')}`;
  }
  // node:http's Agent accepts an asynchronous createConnection (callback form).
  override createConnection(o: http.ClientRequestArgs, cb?: (err: Error | null, s: Duplex) => void): undefined {
    this.connect((o as { srtTarget: Target }).srtTarget).then(
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

/** Forward over HTTP/1.1 through `agent`. */
export function sendH1(req: ProxyRequest, agent: http.Agent, stopper: Stopper): Promise<UpstreamReply> {
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
      agent,
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
