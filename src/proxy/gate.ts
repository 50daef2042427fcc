// The one path every proxied connection takes, whatever the protocol (HTTP absolute-form,
// CONNECT, SOCKS5): decide (policy) → guard (resolve once, drop forbidden addresses) → dial
// exactly the addresses that passed. Refusals are recorded as distinct violations here.

import { connect as netConnect, isIP, type Socket } from 'node:net';
import type { AuditSink } from '../audit.js';
import type { Policy } from '../policy.js';
import type { DomainRule } from './domains.js';
import type { NormalizedHost } from './domains.js';
import { SIGN_ONLY, type Refusal } from './pipeline.js';
import { guardDestination, isLoopbackAddress, type Resolver } from './address-guard.js';
import { decide, displayHostPort } from './decide.js';
import { bypassesUpstream, connectThrough, type UpstreamProxies } from './upstream.js';

export interface Violation {
  host: string;
  port: number;
  reason: string;
  /** A credential's sentinel on its way outside its injectHosts (the tripwire): its label. */
  sentinel?: string;
  /** That sentinel may go nowhere at all (SIGN_ONLY). */
  nowhere?: boolean;
}

/** The line srt prints for a refusal: `srt: blocked evil.example:443 — not in network.allowedDomains`,
 *  or for the tripwire `srt: blocked GH_TOKEN's sentinel on its way to paste.example`. */
export function formatViolation(v: Violation): string {
  if (v.sentinel !== undefined) {
    const host = displayHostPort(v.host, v.port);
    const line = `srt: blocked ${v.sentinel}'s sentinel on its way to ${host.slice(0, host.lastIndexOf(':'))}`;
    return v.nowhere ? `${line} — it may go nowhere (${SIGN_ONLY})` : line;
  }
  return `srt: blocked ${displayHostPort(v.host, v.port)} — ${v.reason}`;
}

/** Checks a destination host name before anything is resolved or dialled (the credential
 *  tripwire: a sentinel inside a host name would otherwise reach a DNS resolver). */
export type HostScreen = (host: string, port: number) => Refusal | undefined;

/** How a connection reached the gate; `forward`: a forwarded host loopback port (local-services.ts). */
export type Via = 'http' | 'connect' | 'socks' | 'upgrade' | 'forward';

export interface Target {
  host: NormalizedHost;
  port: number;
  /** Addresses that passed the guard, in resolver order; dialed in turn, never re-resolved. */
  addresses: string[];
  /** Corporate proxy the connection is chained through, asked for each of `addresses` in turn. */
  upstream?: URL;
  /** `host:port` for messages and Host headers (IPv6 bracketed). */
  display: string;
}

export type Authorization = { ok: true; target: Target } | { ok: false; reason: string; display: string; proxyError?: string };

export interface GateOptions {
  network: Policy['network'];
  resolver: Resolver;
  log?: (line: string) => void;
  /** `--log FILE`: every decision and every upstream connection's byte counts, as data. */
  audit?: AuditSink;
  upstream?: UpstreamProxies;
  connectTimeoutMs: number;
  testOnlyExemptAddresses?: readonly string[];
  screenHost?: HostScreen;
}

export class Gate {
  network: Policy['network'];
  private readonly refusals = new Map<string, Violation>();
  private readonly sockets = new Set<Socket>();

  constructor(private readonly opts: GateOptions) {
    this.network = opts.network;
  }

  violations(): Violation[] {
    return [...this.refusals.values()];
  }

  /** The next command's refusals start from none (ProxyHandle.endCommand). */
  forgetRefusals(): void {
    this.refusals.clear();
  }

  log(line: string): void {
    this.opts.log?.(line);
  }

  /** Record a refusal (once per distinct host, port and reason; a sentinel's once per credential
   *  and host, as its line says) and log it. `by`: the rule that refused it, or the credential
   *  whose sentinel it was (its own report line). */
  refuse(host: string, port: number, reason: string, via: Via, by: {
    rule?: DomainRule; source?: Policy['network']['deniedDomains'][number]['source']; sentinel?: string; nowhere?: boolean; proxyError?: string;
  } = {}): Authorization {
    const v: Violation = { host, port, reason };
    if (by.sentinel !== undefined) v.sentinel = by.sentinel;
    if (by.nowhere) v.nowhere = true;
    const key = by.sentinel !== undefined ? `${host}\0${by.sentinel}` : `${host}\0${port}\0${reason}`;
    if (!this.refusals.has(key)) this.refusals.set(key, v);
    const display = displayHostPort(host, port);
    this.log(`proxy: ${via} deny ${display}: ${reason}`);
    this.opts.audit?.({
      kind: 'network', client: via, target: display, verdict: 'deny', reason,
      ...(by.rule ? { rule: by.rule.text } : {}), ...(by.source ? { source: by.source } : {}),
    });
    return { ok: false, reason, display, ...(by.proxyError ? { proxyError: by.proxyError } : {}) };
  }

  async authorize(rawHost: string, port: number, via: Via): Promise<Authorization> {
    const screened = this.opts.screenHost?.(rawHost, port);
    if (screened) return this.refuse(rawHost.toLowerCase(), port, screened.refuse, via, screened);
    const network = this.network; // one snapshot per connection (setNetwork applies to the next one)
    const d = decide(network, rawHost, port);
    if (!d.allow) return this.refuse(d.host, d.port, d.reason, via, d);
    const allowed = (addresses: string[], note?: string) => this.opts.audit?.({
      kind: 'network', client: via, target: display, verdict: 'allow', rule: d.rule.text, source: d.source, addresses, ...(note ? { reason: note } : {}),
    });
    const display = displayHostPort(d.host.host, port);
    const guardOpts = { network, resolver: this.opts.resolver, testOnlyExemptAddresses: this.opts.testOnlyExemptAddresses };

    const g = await guardDestination(d.host, port, d.explicit, guardOpts);
    const up = this.opts.upstream;
    const chained = up !== undefined && !bypassesUpstream(up.noProxy, d.host.host, port);
    if (!g.ok) {
      const why = chained && d.host.ip === undefined && g.reason.startsWith('cannot resolve')
        ? `${g.reason}; through the upstream proxy srt connects only to addresses it resolved and checked itself` : g.reason;
      return this.refuse(d.host.host, port, why, via);
    }
    // Through a corporate proxy srt names the address its own guard passed, never the host name:
    // that proxy would resolve the name again, and a rebinding answer there (its loopback is this
    // host's when it runs here) is what the guard refused. The name still travels inside the
    // tunnel (SNI, Host). A passed loopback address (an allowed local service) is dialled here:
    // that proxy's loopback is another machine's.
    const upstream = up && chained && !g.addresses.some(isLoopbackAddress) ? (via === 'http' ? up.plain : up.tunnel) : undefined;
    const through = upstream ? ` via upstream proxy ${upstream.host}` : '';
    if (this.opts.log) this.log(`proxy: ${via} allow ${display} (rule ${d.rule.text}) -> ${g.addresses.join(', ')}${through}`);
    allowed(g.addresses, through ? through.trim() : undefined);
    const target: Target = { host: d.host, port, addresses: g.addresses, display };
    if (upstream) target.upstream = upstream;
    return { ok: true, target };
  }

  /** Connect to an authorized target: each passed address in turn, directly or through the corporate proxy. */
  async dial(t: Target): Promise<Socket> {
    const audit = this.opts.audit;
    let socket: Socket;
    try {
      socket = await this.dialAddresses(t.addresses, t.port, t.upstream);
    } catch (e) {
      audit?.({ kind: 'connection', target: t.display, bytesUp: 0, bytesDown: 0, error: upstreamErrorReason(e) });
      throw e;
    }
    this.track(socket);
    if (audit) socket.once('close', () => audit({ kind: 'connection', target: t.display, bytesUp: socket.bytesWritten, bytesDown: socket.bytesRead }));
    return socket;
  }

  private async dialAddresses(addresses: string[], port: number, upstream?: URL): Promise<Socket> {
    let last: Error = new Error('no address to dial');
    for (const address of addresses) {
      try {
        return upstream
          ? await connectThrough(upstream, address, port, this.opts.connectTimeoutMs)
          : await dialOne(address, port, this.opts.connectTimeoutMs);
      } catch (e) {
        last = e as Error;
      }
    }
    throw last;
  }

  /** Remember a socket so close() can free it; forgotten when it closes. */
  track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  destroyAll(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }
}

function dialOne(address: string, port: number, timeoutMs: number): Promise<Socket> {
  if (!isIP(address)) return Promise.reject(new Error(`refusing to dial non-address ${address}`));
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: address, port, allowHalfOpen: true });
    socket.setTimeout(timeoutMs, () => socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })));
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.setTimeout(0);
      socket.off('error', reject);
      socket.setNoDelay(true);
      resolve(socket);
    });
  });
}

/** A short reason for an upstream failure (`ECONNREFUSED`, `connect timed out`, …). */
export function upstreamErrorReason(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return err.code ?? err.message ?? String(e);
}
