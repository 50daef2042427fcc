// startProxy: the filtering proxies srt runs outside the sandbox (SPEC §4, §6).
//
// Usage by the sandbox (Linux):
//   const dir = mkdtemp(...); chmod 0700                  // caller owns the directory
//   const proxy = await startProxy({ network: policy.network,
//     listen: { http: { socketPath: `${dir}/http.sock` }, socks: { socketPath: `${dir}/socks.sock` } },
//     log: debug ? (l) => console.error(`srt[debug]: ${l}`) : undefined });
//   // bind `dir` into the sandbox; srt-init --relay 127.0.0.1:3128:<http.sock>
//   //   --relay 127.0.0.1:1080:<socks.sock> (and one per forwarded port: listen.forwards)
//   // env: sandboxProxyEnv({ httpPort: 3128, socksPort: 1080, nodePreloadPath, helperPath })
//   ... run ...; proxy.violations().map(formatViolation) → stderr; await proxy.close();
// When the policy sets network.httpProxyPort / socksProxyPort (the user's own proxy), that
// listener is a plain relay to 127.0.0.1:<port> instead of srt's filter, so the sandbox side is
// identical either way (see ProxyHandle.httpMode / socksMode).

import { chmodSync, rmSync } from 'node:fs';
import type { AuditSink } from '../audit.js';
import { createServer, connect as netConnect, type Server, type AddressInfo } from 'node:net';
import type { Policy } from '../policy.js';
import { systemResolver, type Resolver } from './address-guard.js';
import { Gate, formatViolation, type Violation } from './gate.js';
import { createForwardServer } from './forward.js';
import { createHttpProxy } from './http.js';
import { runHostStages, type Stage } from './pipeline.js';
import { createSocksProxy } from './socks.js';
import type { Termination } from './trust.js';
import { Splicers, type SplicerOptions } from './splicer.js';
import { splice, Tunnels } from './tunnel.js';
import { upstreamFromEnv } from './upstream.js';
import { hostPort } from '../host-port.js';

export { formatViolation, type Violation };

export type ListenSpec = { socketPath: string } | { host: string; port: number };

/** A forwarded host loopback port: connections on socketPath are judged as host:port. */
export interface ForwardListen {
  socketPath: string;
  host: string;
  port: number;
}

export interface ProxyOptions {
  network: Policy['network'];
  listen: { http: ListenSpec; socks: ListenSpec; forwards?: ForwardListen[] };
  /** Resolver for the address guard (default: the system resolver). */
  resolver?: Resolver;
  /** Decision log for --debug (lines without prefix). */
  log?: (line: string) => void;
  /** `--log FILE`: decisions and connections as data (audit.ts). */
  audit?: AuditSink;
  /**
   * srt's own environment, read for a corporate HTTPS_PROXY/HTTP_PROXY/NO_PROXY to chain
   * allowed connections through. Default: process.env. Pass {} to never chain.
   */
  upstreamEnv?: Record<string, string | undefined>;
  /** Request/response pipeline stages, in order (pipeline.ts): plain and terminated requests alike. */
  stages?: readonly Stage[];
  /** TLS termination (trust.ts prepareTermination); used for tunnels while network.tlsTerminate is set. */
  termination?: Termination;
  /**
   * Hand long opaque tunnels to `srt-init --splice` (splicer.ts). Not with `audit`: its records
   * count a tunnel's bytes in node.
   */
  splicer?: SplicerOptions;
  /** A terminated connection with no request in flight is closed after this long (default 60 s). */
  idleTimeoutMs?: number;
  /** Time a client has to send a request head / finish the SOCKS handshake (default 30 s). */
  headersTimeoutMs?: number;
  /** Time to establish an upstream TCP connection (default 15 s). */
  connectTimeoutMs?: number;
  /** Largest accepted request head (default 32 KiB; larger → 431). */
  maxHeaderSize?: number;
  /**
   * TEST ONLY — never derive from settings, environment or CLI. Resolved addresses the
   * built-in address ranges (loopback, link-local, own interfaces …) do not apply to, so e2e
   * tests can map a test hostname to a loopback server.
   */
  testOnlyExemptAddresses?: readonly string[];
}

export interface ProxyHandle {
  /** Socket path or `host:port` actually bound. */
  httpAddress: string;
  socksAddress: string;
  /** Bound TCP ports (undefined for Unix sockets). */
  httpPort?: number;
  socksPort?: number;
  /** 'filter' = srt's proxy; 'relay' = plain relay to the user's own proxy (httpProxyPort/socksProxyPort). */
  httpMode: 'filter' | 'relay';
  socksMode: 'filter' | 'relay';
  /** Distinct refusals, in order. */
  violations(): Violation[];
  /** Replace the network policy; applies to connections authorized from now on. */
  setNetwork(network: Policy['network']): void;
  /** The command these clients belonged to has ended and the proxy serves the next one (a
   *  library sandbox's): every connection of it is closed and its refusals are forgotten. */
  endCommand(): void;
  /** Stop listening and free every socket (clients, tunnels, upstream connections). */
  close(): Promise<void>;
}

/** A relay to the user's own proxy on loopback (it does its own filtering). */
function createRelay(gate: Gate, port: number): Server {
  return createServer({ allowHalfOpen: true }, (client) => {
    gate.track(client);
    client.on('error', () => client.destroy());
    const upstream = netConnect({ host: '127.0.0.1', port, allowHalfOpen: true });
    gate.track(upstream);
    upstream.on('error', () => client.destroy());
    splice(client, upstream);
  });
}

function listen(server: Server, spec: ListenSpec, bound?: (path: string) => void): Promise<{ address: string; port?: number }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      if ('socketPath' in spec) {
        bound?.(spec.socketPath);
        chmodSync(spec.socketPath, 0o600);
        resolve({ address: spec.socketPath });
      } else {
        const a = server.address() as AddressInfo;
        resolve({ address: hostPort(a.address, a.port), port: a.port });
      }
    };
    // The relay's connect to a full backlog fails at once (it cannot wait): a deep one.
    if ('socketPath' in spec) server.listen({ path: spec.socketPath, backlog: 4096 }, done);
    else server.listen(spec.port, spec.host, done);
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

export async function startProxy(opts: ProxyOptions): Promise<ProxyHandle> {
  const upstream = upstreamFromEnv(opts.upstreamEnv ?? process.env);
  const stages = opts.stages ?? [];
  const gate = new Gate({
    network: opts.network,
    resolver: opts.resolver ?? systemResolver,
    connectTimeoutMs: opts.connectTimeoutMs ?? 15_000,
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.audit ? { audit: opts.audit } : {}),
    ...(upstream ? { upstream } : {}),
    ...(opts.testOnlyExemptAddresses ? { testOnlyExemptAddresses: opts.testOnlyExemptAddresses } : {}),
    ...(stages.some((s) => s.screenHost) ? { screenHost: (host: string, port: number) => runHostStages(stages, host, port) } : {}),
  });
  const headersTimeoutMs = opts.headersTimeoutMs ?? 30_000;
  const maxHeaderSize = opts.maxHeaderSize ?? 32 * 1024;
  const httpMode = opts.network.httpProxyPort !== undefined ? 'relay' : 'filter';
  const socksMode = opts.network.socksProxyPort !== undefined ? 'relay' : 'filter';
  // The terminator (node:http2 and all) is loaded by the first tunnel that is terminated.
  const termination = opts.termination;
  const terminator = termination
    ? async () =>
        new (await import('./terminate.js')).Terminator(gate, {
          leaves: termination.ca,
          trust: termination.upstream,
          stages,
          idleTimeoutMs: opts.idleTimeoutMs ?? 60_000,
          maxHeaderSize,
        })
    : undefined;
  const splicers = opts.splicer && !opts.audit ? new Splicers(opts.splicer, (l) => gate.log(l)) : undefined;
  const tunnels = new Tunnels(gate, { stages, ...(terminator ? { terminator } : {}), ...(splicers ? { splicers } : {}) });
  const httpServer =
    httpMode === 'relay'
      ? createRelay(gate, opts.network.httpProxyPort!)
      : createHttpProxy(gate, { headersTimeoutMs, maxHeaderSize, stages, tunnels });
  const socksServer =
    socksMode === 'relay' ? createRelay(gate, opts.network.socksProxyPort!) : createSocksProxy(gate, tunnels, { handshakeTimeoutMs: headersTimeoutMs });

  const servers: Server[] = [];
  const socketPaths: string[] = []; // only paths we bound: never remove someone else's socket
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    const done = Promise.all(servers.map(closeServer));
    tunnels.close();
    gate.destroyAll();
    await Promise.all([done, splicers?.close()]);
    for (const p of socketPaths) rmSync(p, { force: true });
  };
  try {
    servers.push(httpServer);
    const http = await listen(httpServer, opts.listen.http, (p) => socketPaths.push(p));
    servers.push(socksServer);
    const socks = await listen(socksServer, opts.listen.socks, (p) => socketPaths.push(p));
    for (const f of opts.listen.forwards ?? []) {
      const server = createForwardServer(gate, tunnels, f.host, f.port);
      servers.push(server);
      await listen(server, { socketPath: f.socketPath }, (p) => socketPaths.push(p));
    }
    return {
      httpAddress: http.address,
      socksAddress: socks.address,
      ...(http.port !== undefined ? { httpPort: http.port } : {}),
      ...(socks.port !== undefined ? { socksPort: socks.port } : {}),
      httpMode,
      socksMode,
      violations: () => gate.violations(),
      setNetwork: (network) => {
        gate.network = network;
      },
      endCommand: () => {
        gate.destroyAll();
        void splicers?.killAll();
        gate.forgetRefusals();
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
