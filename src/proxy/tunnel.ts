// What happens to a tunnel (CONNECT, SOCKS5, or a forwarded host loopback port) once its
// destination is authorized and dialled.
// srt waits for the first bytes. A server that speaks first (SMTP, SSH banners, MySQL) or a
// client whose first byte is not a TLS handshake record gets an opaque byte stream; a
// ClientHello is read (bounded) and its server name must be the tunnel's host: a CONNECT to an
// allowed name whose ClientHello names another host (domain fronting: a CDN routes by the SNI)
// is refused. Then, with TLS termination (and the host not in `excludeDomains`), it is handed to
// the terminator; without, the tunnel goes on as bytes. A first byte that starts a TLS record
// but is no valid ClientHello closes the tunnel: it must not reach the upstream uninspected.
// Relayed from their first byte, when not terminated: a tunnel to an IP literal (no name to
// bind) and a forwarded port (its destination is fixed). With termination the whole wait, up to
// the end of the client's TLS handshake, is bounded by `handshakeTimeoutMs`; without, only the
// ClientHello once it has begun.
// A forwarded port has no CONNECT line naming its host: a client that reaches it by another name
// (a hosts-file name for a loopback service) says so in its SNI. That name is judged like a
// CONNECT to it, and the tunnel becomes that name's only if it leads to the very address this
// connection was dialled to; otherwise the tunnel is closed.

import type { Socket } from 'node:net';
import type { Duplex, Transform } from 'node:stream';
import type { Gate, Target } from './gate.js';
import { displayHostPort } from './decide.js';
import { namedLoopback, normalizeHost, ruleMatches } from './domains.js';
import { looksLikeTls, MAX_CLIENT_HELLO, parseClientHello } from './clienthello.js';
import { RefusedError, runTunnelStages, tunnelGuard, type Refusal, type Stage, type TunnelInfo } from './pipeline.js';
import type { Splicers } from './splicer.js';

/** The terminator (terminate.ts, loaded only when TLS termination is configured). */
export interface TlsTerminator {
  /** Take over a tunnel whose client sent a ClientHello (`hello` holds the bytes read so far). */
  terminate(t: AdmittedTunnel, client: Duplex, upstream: Duplex, hello: Buffer, info: { sni?: string; alpn?: string[] }, deadline: Deadline): void;
  /** Free everything (on proxy close). */
  close(): void;
}

/** A tunnel admitted by `Tunnels.admit`: holds a termination slot until it is released. */
export interface AdmittedTunnel {
  target: Target;
  via: 'connect' | 'socks' | 'forward';
  /** Termination applies (tlsTerminate on, host not excluded). */
  terminate: boolean;
  /** Give the slot back (idempotent): the tunnel turned out opaque, failed, or closed. */
  release(): void;
}

/** The handshake deadline of one tunnel: `cancel` once the handshake is complete. */
export interface Deadline {
  cancel(): void;
}

export interface TunnelOptions {
  stages: readonly Stage[];
  /** Loads the terminator on the first tunnel that needs it (node:http2 and all cost startup time). */
  terminator?: () => Promise<TlsTerminator>;
  /** Takes long unguarded opaque tunnels out of node (Linux, with srt-init). */
  splicers?: Splicers;
}

export class Tunnels {
  /** Tunnels that are being or have been terminated (maxTunnels bounds them). */
  private active = 0;
  private terminator: Promise<TlsTerminator> | undefined;
  private closed = false;

  constructor(
    private readonly gate: Gate,
    private readonly opts: TunnelOptions,
  ) {}

  /** Before dialling: the tunnel stages and, for tunnels that may be terminated, maxTunnels. */
  admit(target: Target, via: AdmittedTunnel['via']): { ok: true; slot: AdmittedTunnel } | { ok: false; refusal: Refusal } {
    const refusal = runTunnelStages(this.opts.stages, { target, via });
    if (refusal) {
      this.gate.refuse(target.host.host, target.port, refusal.refuse, via, refusal);
      return { ok: false, refusal };
    }
    const tls = this.gate.network.tlsTerminate;
    const terminate = this.terminates(target);
    if (terminate && this.active >= tls!.maxTunnels) {
      const reason = `too many TLS tunnels open (network.tlsTerminate.maxTunnels: ${tls!.maxTunnels})`;
      this.gate.log(`proxy: ${via} ${target.display}: ${reason}`);
      return { ok: false, refusal: { refuse: reason, status: 503, proxyError: 'too-many-tunnels' } };
    }
    if (terminate) this.active++;
    let held = terminate;
    return {
      ok: true,
      slot: {
        target,
        via,
        terminate,
        release: () => {
          if (held) this.active--;
          held = false;
        },
      },
    };
  }

  /** Termination applies to a tunnel to `target`: tlsTerminate on, the host not excluded. */
  private terminates(target: Target): boolean {
    const tls = this.gate.network.tlsTerminate;
    return this.opts.terminator !== undefined && tls !== undefined && !tls.excludeDomains.some((r) => ruleMatches(r, target.host.host, target.port));
  }

  /**
   * A forwarded port's client named `sni` (not the forward's host): that name's tunnel, if the
   * policy allows it and it leads to the address `upstream` was dialled to; else undefined (the
   * gate recorded why).
   */
  private async retarget(t: AdmittedTunnel, sni: string, upstream: Duplex): Promise<AdmittedTunnel | undefined> {
    const canonical = (a: string | undefined) => (a === undefined ? undefined : normalizeHost(a)?.host);
    const dialled = canonical((upstream as Socket).remoteAddress);
    const port = t.target.port;
    // `localhost` is the host's loopback by definition: the address already decided, by its name.
    if (sni.toLowerCase().replace(/\.$/, '') === 'localhost' && dialled !== undefined && namedLoopback('localhost')!.includes(dialled)) {
      return { ...t, target: { host: { host: 'localhost' }, port, addresses: [dialled], display: displayHostPort('localhost', port) } };
    }
    const auth = await this.gate.authorize(sni, port, 'forward');
    if (!auth.ok) return undefined;
    if (dialled === undefined || !auth.target.addresses.some((a) => canonical(a) === dialled)) {
      this.gate.refuse(auth.target.host.host, t.target.port, `TLS server name "${sni}" does not lead to the forwarded port ${t.target.display}`, 'forward');
      return undefined;
    }
    return { ...t, target: { ...auth.target, addresses: [dialled] } };
  }

  /** The tunnel is established (client told so): relay it, or terminate its TLS. */
  serve(client: Duplex, upstream: Duplex, t: AdmittedTunnel, head: Buffer): void {
    const terminating = t.terminate && this.opts.terminator !== undefined;
    if (!terminating && (t.target.host.ip !== undefined || t.via === 'forward')) {
      t.release();
      const guard = guardTunnel(this.gate, this.opts.stages, t);
      if (head.length > 0) (guard ?? upstream).write(head);
      splice(client, upstream, guard, this.handOver(t));
      return;
    }
    const gate = this.gate;
    const limit = gate.network.tlsTerminate?.handshakeTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      timer ??= setTimeout(() => {
        gate.log(`proxy: ${t.via} ${t.target.display}: no completed TLS handshake within ${limit} ms (network.tlsTerminate.handshakeTimeoutMs); closed`);
        client.destroy();
        upstream.destroy();
      }, limit);
    };
    if (terminating) arm();
    const deadline: Deadline = { cancel: () => clearTimeout(timer) };
    const fail = () => {
      deadline.cancel();
      t.release();
      client.destroy();
      upstream.destroy();
    };
    // Either side ending (a FIN: the proxy's sockets are half-open capable) before the
    // handshake is read ends the tunnel too.
    for (const s of [client, upstream]) {
      s.on('error', fail);
      s.once('close', fail);
      s.once('end', fail);
    }

    let hello = head;
    const stopListening = () => {
      client.off('data', fromClient);
      upstream.off('data', fromUpstream);
      for (const s of [client, upstream]) {
        s.off('error', fail);
        s.off('close', fail);
        s.off('end', fail);
        s.pause();
      }
    };
    const opaque = (first: Buffer, to: Duplex) => {
      stopListening();
      deadline.cancel();
      t.release();
      if (terminating) gate.log(`proxy: ${t.via} ${t.target.display}: not TLS, relayed as an opaque tunnel`);
      const guard = guardTunnel(this.gate, this.opts.stages, t);
      if (first.length > 0) (to === upstream ? guard ?? upstream : to).write(first);
      splice(client, upstream, guard, this.handOver(t));
      client.resume();
      upstream.resume();
    };
    const examine = () => {
      if (hello.length === 0) return;
      if (!looksLikeTls(hello[0]!)) return opaque(hello, upstream);
      arm();
      const parsed = parseClientHello(hello);
      if (parsed.status === 'incomplete') return;
      if (parsed.status === 'invalid') {
        stopListening();
        gate.refuse(t.target.host.host, t.target.port, `malformed TLS ClientHello (${parsed.reason})`, t.via);
        return fail();
      }
      stopListening();
      const { sni, alpn } = parsed;
      const terminate = (tunnel: AdmittedTunnel) => {
        this.terminator ??= this.opts.terminator!();
        this.terminator.then(
          (terminator) => {
            if (this.closed || client.destroyed) return fail();
            terminator.terminate(tunnel, client, upstream, hello, { ...(sni ? { sni } : {}), ...(alpn ? { alpn } : {}) }, deadline);
          },
          (e: Error) => {
            gate.log(`proxy: cannot load TLS termination: ${e.message}`);
            fail();
          },
        );
      };
      const named = sni === undefined ? undefined : normalizeHost(sni)?.host;
      if (t.via !== 'forward' || named === undefined || named === t.target.host.host) {
        const other = otherServerName(sni, t.target);
        if (other) {
          gate.refuse(t.target.host.host, t.target.port, other, t.via);
          return fail();
        }
        return terminating ? terminate(t) : opaque(hello, upstream);
      }
      // A forwarded port reached by another name (only terminated ones get here).
      void this.retarget(t, sni!, upstream).then(
        (tunnel) => {
          if (!tunnel || this.closed || client.destroyed) return fail();
          if (this.terminates(tunnel.target)) return terminate(tunnel);
          // The name is an excludeDomains host: its tunnel stays opaque.
          t.release();
          deadline.cancel();
          const guard = guardTunnel(gate, this.opts.stages, tunnel);
          (guard ?? upstream).write(hello);
          splice(client, upstream, guard, this.handOver(tunnel));
          client.resume();
          upstream.resume();
        },
        () => fail(),
      );
    };
    function fromClient(chunk: Buffer) {
      hello = hello.length === 0 ? chunk : Buffer.concat([hello, chunk]);
      if (hello.length > MAX_CLIENT_HELLO + 5) {
        stopListening();
        gate.refuse(t.target.host.host, t.target.port, 'malformed TLS ClientHello (too large)', t.via);
        return fail();
      }
      examine();
    }
    // A server speaking first means a protocol that is not TLS (a TLS server never does).
    function fromUpstream(chunk: Buffer) {
      if (hello.length === 0) return opaque(chunk, client);
      // The client has begun its ClientHello: keep the upstream's bytes for whoever reads next.
      upstream.pause();
      upstream.unshift(chunk);
    }
    client.on('data', fromClient);
    upstream.on('data', fromUpstream);
    client.resume();
    upstream.resume();
    examine();
  }

  private handOver(t: AdmittedTunnel): { splicers: Splicers; label: string } | undefined {
    return this.opts.splicers && { splicers: this.opts.splicers, label: `${t.via} ${t.target.display}` };
  }

  close(): void {
    this.closed = true;
    void this.terminator?.then((t) => t.close(), () => undefined);
  }
}

/** The stages' guard of the client bytes of a tunnel whose content srt does not parse (opaque, or
 *  not HTTP inside terminated TLS); a stop it makes is recorded as a refusal. */
export function guardTunnel(gate: Gate, stages: readonly Stage[], t: Pick<TunnelInfo, 'target' | 'via'>): Transform | undefined {
  const guard = tunnelGuard(stages, { target: t.target, via: t.via });
  guard?.on('error', (e) => {
    if (e instanceof RefusedError) gate.refuse(t.target.host.host, t.target.port, e.refusal.refuse, t.via, e.refusal);
  });
  return guard;
}

/**
 * Pipe both directions with backpressure (at most a high-water mark buffered per direction);
 * a half-close travels through; an error or a full close on one side frees the other once what
 * was already read has been flushed. `aToB` (a stage's guard) sits between a and b; when it
 * fails, both sides are destroyed before the bytes it stopped reach b. Without a guard, `handOver`
 * may take a long tunnel out of node (splicer.ts).
 */
export function splice(a: Duplex, b: Duplex, aToB?: Transform, handOver?: { splicers: Splicers; label: string }): void {
  const closeAfterFlush = (s: Duplex) => {
    if (s.destroyed) return;
    if (s.writableFinished) s.destroy();
    else {
      s.end();
      s.once('finish', () => s.destroy());
    }
  };
  const aFailed = () => b.destroy();
  const bFailed = () => a.destroy();
  const aClosed = () => closeAfterFlush(b);
  const bClosed = () => closeAfterFlush(a);
  a.on('error', aFailed);
  b.on('error', bFailed);
  b.once('close', bClosed);
  b.pipe(a);
  if (!aToB) {
    a.once('close', aClosed);
    a.pipe(b);
    if (handOver) {
      const detach = () => {
        a.unpipe(b);
        b.unpipe(a);
        a.off('error', aFailed).off('close', aClosed);
        b.off('error', bFailed).off('close', bClosed);
      };
      handOver.splicers.watch(a, b, handOver.label, detach, () => splice(a, b));
    }
    return;
  }
  aToB.on('error', () => {
    b.destroy();
    a.destroy();
  });
  // a's FIN travels through the guard to b as a half-close (pipe ends b), so b's answer still
  // comes back; only a's full close frees b, after what the guard still holds reached it.
  a.once('close', () => {
    if (aToB.readableEnded) return closeAfterFlush(b);
    aToB.once('end', () => closeAfterFlush(b));
    aToB.end();
  });
  a.pipe(aToB).pipe(b);
}

/**
 * Why a ClientHello's server name does not fit the tunnel, or undefined: the SNI, when there is
 * one, must be the tunnel's host (an IP-literal tunnel has none to offer). Encrypted Client Hello
 * shows only a provider's public name and is refused the same way: srt cannot see the host it asks for.
 */
export function otherServerName(sni: string | undefined, target: Target): string | undefined {
  if (sni === undefined) return undefined;
  const name = normalizeHost(sni);
  return name && name.host === target.host.host ? undefined : `TLS server name "${sni}" is not the tunnel's host ${target.display}`;
}
