// The upstream side of a terminated tunnel: TLS over the socket the gate dialled, verified
// against the system roots + extraCaCertPaths with the tunnel's own name, and more connections
// (HTTP/1.1) or a new HTTP/2 session when the first one is used up or goes away.

import http2, { type ClientHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import tls, { type SecureContext, type TLSSocket } from 'node:tls';
import type { Stopper, Upstream, UpstreamReply } from './exchange.js';
import { HeldConnections, sendH1, sendH2 } from './upstream-send.js';
import type { Gate, Target } from './gate.js';
import type { ProxyRequest } from './pipeline.js';

/** What upstream certificates are verified against (system roots + extraCaCertPaths). */
export interface UpstreamTrust {
  context(): SecureContext;
}

// HTTP/2 flow-control windows srt grants its peers. They bound what one stream (and one
// connection) can have in flight through srt when the other side reads slowly, and they set the
// pace of a single stream (HTTP/2's default 64 KiB window per hop halves a bulk download).
export const H2_STREAM_WINDOW = 256 * 1024;
export const H2_SESSION_WINDOW = 1024 * 1024;

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
export class TlsUpstream implements Upstream {
  private first: TLSSocket | undefined;
  private h2: ClientHttp2Session | undefined;
  private h2Pending: Promise<ClientHttp2Session | null> | undefined;
  private held: HeldConnections | undefined;
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

  send(req: ProxyRequest, stopper: Stopper): Promise<UpstreamReply> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.protocol === 'h2') return this.session().then((s) => (s ? sendH2(req, s, stopper) : sendH1(req, this.h1Held(), stopper)));
    return sendH1(req, this.h1Held(), stopper);
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

  private h1Held(): HeldConnections {
    this.held ??= new HeldConnections(async () => {
      const s = this.first;
      this.first = undefined;
      if (s && !s.destroyed) return s;
      return this.connect(['http/1.1']);
    });
    return this.held;
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
    this.held?.destroy();
  }
}

/** Bytes a terminated tunnel's TLS socket (either side) buffers before it pushes back: node's
 *  16 KiB default is one TLS record, so every record paused and resumed the body's pump. */
export const TLS_BUFFER = 256 * 1024;

/** TLS to the upstream over `raw`: SNI and verification against the target's own name/address. */
export function upstreamTls(raw: Duplex, target: Target, trust: UpstreamTrust, alpn: string[] | undefined): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const name = target.host.host;
    const socket = tls.connect({
      socket: raw,
      secureContext: trust.context(),
      // An IP target is verified against the certificate's IP addresses (and sends no SNI).
      ...(target.host.ip === undefined ? { servername: name } : { host: name }),
      ...(alpn?.length ? { ALPNProtocols: alpn } : {}),
      rejectUnauthorized: true,
      // Read by node (both directions), missing from @types/node.
      ...({ highWaterMark: TLS_BUFFER } as object),
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
