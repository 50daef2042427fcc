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
// This module does the handshakes and routes the decrypted stream; the upstream side is
// tls-upstream.ts, HTTP inside the tunnel tunnel-http.ts.

import type { Duplex } from 'node:stream';
import tls, { type SecureContext, type TLSSocket } from 'node:tls';
import type { NormalizedHost } from './domains.js';
import type { Gate } from './gate.js';
import { runTunnelStages, type Stage } from './pipeline.js';
import { TLS_BUFFER, TlsUpstream, upstreamTls, type UpstreamTrust } from './tls-upstream.js';
import { guardTunnel, splice, type AdmittedTunnel, type Deadline, type TlsTerminator } from './tunnel.js';
import { Session, TunnelHttp } from './tunnel-http.js';

/** Mints (and caches) the leaf certificate a client is shown for a host. */
export interface LeafIssuer {
  contextFor(host: NormalizedHost): SecureContext;
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

export class Terminator implements TlsTerminator {
  private readonly http: TunnelHttp;
  private readonly live = new Set<TLSSocket>();

  constructor(
    private readonly gate: Gate,
    private readonly opts: TerminatorOptions,
  ) {
    this.http = new TunnelHttp(gate, opts.stages, opts.maxHeaderSize);
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
      // Read by node (both directions), missing from @types/node.
      ...({ highWaterMark: TLS_BUFFER } as object),
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
    if (protocol === 'h2') return this.http.attachH2(session);
    if (protocol === 'http/1.1' || up instanceof Error) return this.http.attachH1(session);
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
      if (/^[A-Z]{1,20}( |$)/.test(chunk.subarray(0, 21).toString('latin1'))) this.http.attachH1(session);
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

  close(): void {
    for (const s of this.live) s.destroy();
    this.live.clear();
  }
}
