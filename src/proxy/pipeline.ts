// The request/response pipeline every proxied HTTP exchange goes through, whatever carried it:
// plain HTTP (absolute-form through the proxy), HTTP/1.1 decrypted from a terminated TLS
// tunnel, or one HTTP/2 stream of a terminated tunnel.
//
//   authorize (gate) → request stages → forward upstream → response stages (reverse order) → client
//
// A stage may rewrite the request (method, path, headers), replace its body with a transformed
// stream, or refuse it; on the way back it may rewrite the response head and body the same way.
// Stages also see every tunnel as it opens (CONNECT/SOCKS target, then the SNI name once the
// ClientHello is read), so a stage can stop a tunnel before any byte of it leaves; they can see a
// host name before it is resolved, and watch the client's bytes of a tunnel that stays opaque.
// Credential injection, response re-masking, the sentinel tripwire and SigV4 re-signing are stages.

import type { Readable, Transform } from 'node:stream';
import type { NormalizedHost } from './domains.js';
import type { Target } from './gate.js';
import { bracketHost } from '../host-port.js';

/** One header line; order and repeated names are kept. */
export type Header = [name: string, value: string];

export interface ProxyRequest {
  /** `http`: plain HTTP through the proxy. `https`: decrypted from a terminated TLS tunnel. */
  readonly scheme: 'http' | 'https';
  /** The authorized destination (policy decision and address guard already passed). */
  readonly target: Target;
  method: string;
  /** Origin-form path and query sent upstream (`/a?b=c`). */
  path: string;
  /** Host / :authority sent upstream: always the target, without the scheme's default port. */
  readonly authority: string;
  /** End-to-end request headers in order: no Host, no hop-by-hop headers. */
  headers: Header[];
  /** The body as it streams from the client; null when the request has none. Replace it to
   *  rewrite the body, and fix or drop `content-length` if the length changes. */
  body: Readable | null;
  /** The protocol an HTTP/1.1 upgrade asks for (`websocket`), else undefined. */
  readonly upgrade: string | undefined;
}

export interface ProxyResponse {
  status: number;
  /** HTTP/1.1 reason phrase ('' when the upstream spoke HTTP/2). */
  statusMessage: string;
  /** End-to-end response headers in order (no hop-by-hop headers, no pseudo-headers). */
  headers: Header[];
  /** Streamed response body; null when there is none (an upgrade's 101, a HEAD response). */
  body: Readable | null;
  /** Trailers, once the body has ended (HTTP/2 upstreams: gRPC's status lives there). */
  trailers(): Header[];
}

/** A stage's refusal: answered to the client (403 `X-Proxy-Error: blocked-by-srt` by default). */
export interface Refusal {
  refuse: string;
  status?: number;
  proxyError?: string;
  /** A credential's sentinel on its way where it may not go (the tripwire): reported as its own
   *  line, `srt: blocked GH_TOKEN's sentinel on its way to paste.example`. */
  sentinel?: string;
  /** That sentinel may go nowhere at all (SIGN_ONLY). */
  nowhere?: boolean;
}

/** Why a secret srt never injects may go nowhere. */
export const SIGN_ONLY = 'an AWS secret key is only ever used to sign';

export interface TunnelInfo {
  target: Target;
  /** `forward`: a forwarded host loopback port (forward.ts). */
  via: 'connect' | 'socks' | 'forward';
  /** The TLS SNI name (canonical) once the ClientHello has been read; absent before that. */
  sni?: string;
}

export interface Stage {
  readonly name: string;
  /** A destination host name as the client named it (CONNECT/SOCKS target, absolute URL),
   *  before it is resolved: a name can carry data to a DNS resolver. */
  screenHost?(host: string, port: number): Refusal | void;
  /** The client's bytes of a tunnel that stays opaque (not terminated): a stream they pass
   *  through, or nothing. Failing it with RefusedError closes the tunnel before those bytes leave. */
  guard?(t: TunnelInfo): Transform | void;
  /** A tunnel opens (once before it is dialled, once more with `sni` when it is terminated). */
  tunnel?(t: TunnelInfo): Refusal | void;
  /** Before the request is forwarded. */
  request?(req: ProxyRequest): Refusal | void | Promise<Refusal | void>;
  /** After the response head arrived, before anything reaches the client (reverse stage order). */
  response?(res: ProxyResponse, req: ProxyRequest): Refusal | void | Promise<Refusal | void>;
}

/**
 * Thrown into (or destroyed onto) a body stream by a stage that must stop the exchange
 * mid-body: the upstream request is aborted and the client gets the refusal if nothing has
 * been sent to it yet (else its stream is reset).
 */
export class RefusedError extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.refuse);
  }
}

/**
 * `body` piped through `t` (a stage's rewrite of a body); an error of `body` fails `t`. When `t`
 * stops early (a tripwire, a reader that went away), the rest of `body` is drained, not
 * destroyed: the client's connection stays able to hear why.
 */
/** The whole body, or null once it is longer than `max` (leaving the loop early destroys it). */
export async function readBounded(body: Readable, max: number): Promise<Buffer | null> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    n += b.length;
    if (n > max) return null;
    parts.push(b);
  }
  return Buffer.concat(parts);
}

export function through(body: Readable, t: Transform): Transform {
  body.on('error', (e) => t.destroy(e));
  t.on('close', () => {
    if (body.readableEnded) return;
    body.unpipe(t);
    body.resume();
  });
  return body.pipe(t);
}

export async function runRequestStages(stages: readonly Stage[], req: ProxyRequest): Promise<Refusal | undefined> {
  for (const s of stages) {
    const r = await s.request?.(req);
    if (r) return r;
  }
  return undefined;
}

export async function runResponseStages(stages: readonly Stage[], res: ProxyResponse, req: ProxyRequest): Promise<Refusal | undefined> {
  for (let i = stages.length - 1; i >= 0; i--) {
    const r = await stages[i]!.response?.(res, req);
    if (r) return r;
  }
  return undefined;
}

export function runHostStages(stages: readonly Stage[], host: string, port: number): Refusal | undefined {
  for (const s of stages) {
    const r = s.screenHost?.(host, port);
    if (r) return r;
  }
  return undefined;
}

/** The guard of a tunnel's client-to-server bytes (the first stage that has one), if any. */
export function tunnelGuard(stages: readonly Stage[], t: TunnelInfo): Transform | undefined {
  for (const s of stages) {
    const g = s.guard?.(t);
    if (g) return g;
  }
  return undefined;
}

export function runTunnelStages(stages: readonly Stage[], t: TunnelInfo): Refusal | undefined {
  for (const s of stages) {
    const r = s.tunnel?.(t);
    if (r) return r;
  }
  return undefined;
}

// Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus Expect (the
// proxy answers 100-continue itself) and Proxy-*: never forwarded in either direction.
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
  'http2-settings',
]);

/**
 * End-to-end headers from a flat raw header list (`[name, value, name, value, …]`): hop-by-hop
 * headers, the headers the message's own Connection header names, Host and HTTP/2
 * pseudo-headers are dropped. `te: trailers` (gRPC needs it over HTTP/2) is kept as the one TE
 * value that is end-to-end in meaning.
 */
export function endToEndHeaders(raw: readonly string[]): Header[] {
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') for (const t of raw[i + 1]!.split(',')) (named ??= new Set()).add(t.trim().toLowerCase());
  }
  const out: Header[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (lower === 'host' || lower.startsWith(':')) continue;
    if (lower === 'te') {
      if (raw[i + 1]!.trim().toLowerCase() === 'trailers') out.push(['te', 'trailers']);
      continue;
    }
    if (HOP_BY_HOP.has(lower) || named?.has(lower)) continue;
    out.push([name, raw[i + 1]!]);
  }
  return out;
}

/**
 * The protocol an HTTP/1.1 upgrade request may switch to, or undefined to forward it as an
 * ordinary request. An upgrade to HTTP itself (`h2c`, `HTTP/2.0`) is never passed on: the requests
 * that followed would flow past the pipeline as opaque bytes. Such an offer is optional for the
 * client, which then simply gets the HTTP/1.1 answer.
 */
export function upgradeToForward(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const offers = value.split(',').map((p) => p.trim()).filter((p) => p !== '' && !/^(h2c|http\/)/i.test(p));
  return offers.length ? offers.join(', ') : undefined;
}

export function isHopByHop(name: string): boolean {
  return HOP_BY_HOP.has(name.toLowerCase());
}

/** The value of the first header called `name` (case-insensitive). */
export function headerValue(headers: readonly Header[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find(([k]) => k.toLowerCase() === lower)?.[1];
}

/** `host[:port]` for a Host header or :authority: IPv6 bracketed, the default port left out. */
export function formatAuthority(host: NormalizedHost, port: number, defaultPort: number): string {
  const h = bracketHost(host.host);
  return port === defaultPort ? h : `${h}:${port}`;
}
