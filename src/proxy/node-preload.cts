// Loaded into every Node process in the sandbox (NODE_OPTIONS=--require <this file>, compiled to
// dist/proxy/node-preload.cjs). Node 20 ignores HTTP(S)_PROXY; this makes the three client
// stacks honour them so `fetch(url)`, `http.get` and `https.get` just work:
//  - global fetch (Node's bundled undici): a lazily created undici EnvHttpProxyAgent installed as
//    the global dispatcher (the symbol undici shares across copies); nothing is loaded until
//    fetch first asks for the dispatcher, so `node -e 0` pays nothing for it.
//  - every http.Agent (the global one and those programs make, as the AWS SDK does): sends
//    absolute-form requests to the proxy (inspectable plain HTTP).
//  - every https.Agent: opens a CONNECT tunnel, then TLS to the destination inside it.
//  - http2.connect (HTTP/2 clients that use node:http2 directly): the session's connection is
//    TLS (ALPN h2) inside a CONNECT tunnel, or for `http:` (h2c) the tunnel itself; a caller's own
//    createConnection is left alone. Loaded here, not on first use: an ESM `import 'node:http2'`
//    never passes a hook srt could set, so the patch must be in place before the program runs.
// The agents' own prototypes are patched, so an agent a library creates for itself (keep-alive
// pools, custom TLS options) honours the proxy too; a subclass that connects in its own way
// (a proxy agent of the program's) keeps doing so.
// NO_PROXY (localhost,127.0.0.1,::1 in the sandbox) keeps loopback direct. Without a proxy
// variable this file does nothing.

import http = require('node:http');
import http2 = require('node:http2');
import https = require('node:https');
import net = require('node:net');
import tls = require('node:tls');
import stream = require('node:stream');

const env = process.env;
const httpProxy = parseProxy(env.HTTP_PROXY || env.http_proxy);
const httpsProxy = parseProxy(env.HTTPS_PROXY || env.https_proxy);
const noProxy = (env.NO_PROXY || env.no_proxy || '')
  .split(',')
  .map((s) => s.trim().toLowerCase())
  .filter(Boolean);

function parseProxy(value: string | undefined): URL | undefined {
  if (!value) return undefined;
  try {
    const u = new URL(value.includes('://') ? value : `http://${value}`);
    return u.protocol === 'http:' ? u : undefined;
  } catch {
    return undefined;
  }
}

function bypass(host: string, port: number): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  return noProxy.some((entry) => {
    if (entry === '*') return true;
    let name = entry;
    const m = /^(.*):(\d+)$/.exec(entry);
    if (m && (m[1]!.includes('.') || !m[1]!.includes(':'))) {
      if (Number(m[2]) !== port) return false;
      name = m[1]!;
    }
    name = name.replace(/^\[|\]$/g, '').replace(/^\*?\./, '');
    return h === name || h.endsWith(`.${name}`);
  });
}

function authority(host: string, port: number): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${h}:${port}`;
}

function proxyAuthHeader(proxy: URL): string {
  if (proxy.username === '') return '';
  const cred = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return `Proxy-Authorization: Basic ${Buffer.from(cred).toString('base64')}\r\n`;
}

type Opts = http.ClientRequestArgs & { servername?: string };

type AddRequest = (this: http.Agent, req: http.ClientRequest & { _header?: string | null }, options: Opts) => void;
type CreateConnection = (this: https.Agent, options: Opts, cb?: (err: Error | null, s: net.Socket) => void) => net.Socket | undefined;

/** Plain HTTP: rewrite the request to absolute-form and send it to the proxy instead of the destination. */
function proxyHttp(proxy: URL): void {
  const proto = http.Agent.prototype as unknown as { addRequest: AddRequest; createConnection: unknown; createSocket: unknown };
  const original = proto.addRequest;
  const { createConnection, createSocket } = proto;
  proto.addRequest = function (req, options) {
    const host = options.hostname || options.host || 'localhost';
    const port = Number(options.port) || 80;
    // An agent that makes its connections its own way (npm's agent-base agents do their own
    // proxying from the same variables) is left to it: sent to srt's proxy, it would tunnel to it.
    const self = this as unknown as { createConnection: unknown; createSocket: unknown };
    const ownWay = self.createConnection !== createConnection || self.createSocket !== createSocket;
    if (this instanceof https.Agent || ownWay || options.socketPath || bypass(host, port) || !req.path.startsWith('/')) {
      original.call(this, req, options);
      return;
    }
    const origin = `http://${authority(host, port)}`;
    if (req._header) req._header = req._header.replace(/^(\S+) (\S+)/, (_m, method: string, path: string) => `${method} ${origin}${path}`);
    req.path = `${origin}${req.path}`;
    const auth = proxyAuthHeader(proxy);
    if (auth && !req.getHeader('proxy-authorization') && !req._header) req.setHeader('Proxy-Authorization', auth.slice(21, -2));
    original.call(this, req, { ...options, host: proxy.hostname.replace(/^\[|\]$/g, ''), hostname: undefined, port: Number(proxy.port) || 80 });
  };
}

/**
 * A duplex stream to `target` through the proxy's CONNECT, usable at once: what is written before
 * the proxy said 200 waits; a refusal fails the stream with the proxy's status line.
 */
function connectTunnel(proxy: URL, target: string): stream.Duplex {
  const raw = net.connect({ host: proxy.hostname.replace(/^\[|\]$/g, ''), port: Number(proxy.port) || 80 });
  let open = false;
  let head = Buffer.alloc(0);
  const waiting: Array<[Buffer, (e?: Error | null) => void]> = [];
  const tunnel = new stream.Duplex({
    write(chunk: Buffer, _enc, cb) {
      if (open) raw.write(chunk, cb);
      else waiting.push([chunk, cb]);
    },
    final(cb) {
      if (open) raw.end(cb);
      else tunnel.once('tunnel', () => raw.end(cb));
    },
    read() {
      if (open) raw.resume();
    },
    destroy(err, cb) {
      raw.destroy();
      cb(err);
    },
  });
  raw.on('error', (e) => tunnel.destroy(e));
  raw.once('connect', () => raw.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${proxyAuthHeader(proxy)}\r\n`));
  const onHead = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) {
      if (head.length > 65536) tunnel.destroy(new Error(`proxy CONNECT ${target}: oversized response`));
      return;
    }
    raw.off('data', onHead);
    const statusLine = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
    if (!/^HTTP\/1\.[01] 200/.test(statusLine)) {
      tunnel.destroy(new Error(`proxy refused CONNECT ${target}: ${statusLine.replace(/^HTTP\/1\.[01] /, '')}`));
      return;
    }
    open = true;
    const rest = head.subarray(end + 4);
    if (rest.length > 0) tunnel.push(rest);
    raw.on('data', (c: Buffer) => {
      if (!tunnel.push(c)) raw.pause();
    });
    raw.once('end', () => tunnel.push(null));
    for (const [chunk, cb] of waiting.splice(0)) raw.write(chunk, cb);
    tunnel.emit('tunnel');
  };
  raw.on('data', onHead);
  return tunnel;
}

type Http2Connect = (authority: string | URL, options?: http2.SecureClientSessionOptions | ((s: http2.ClientHttp2Session) => void), listener?: (s: http2.ClientHttp2Session) => void) => http2.ClientHttp2Session;

/** http2.connect: the session's socket is opened through the proxy (as node itself would open it). */
function proxyHttp2(proxies: { 'http:'?: URL; 'https:'?: URL }): void {
  const original = http2.connect as Http2Connect;
  const patched: Http2Connect = function (origin, options, listener) {
    const opts = typeof options === 'object' && options !== null ? options : {};
    let url: URL;
    try {
      url = typeof origin === 'string' ? new URL(origin) : origin;
    } catch {
      return original.call(http2, origin, options, listener);
    }
    const protocol = url.protocol === 'http:' ? 'http:' : 'https:';
    const proxy = proxies[protocol];
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const port = Number(url.port) || (protocol === 'http:' ? 80 : 443);
    if (!proxy || typeof opts.createConnection === 'function' || bypass(host, port)) return original.call(http2, origin, options, listener);
    const createConnection = () => {
      const tunnel = connectTunnel(proxy, authority(host, port));
      if (protocol === 'http:') return tunnel;
      const servername = opts.servername || (net.isIP(host) ? undefined : host);
      return tls.connect({ ...(opts as tls.ConnectionOptions), socket: tunnel as net.Socket, host, ALPNProtocols: ['h2'], ...(servername ? { servername } : {}) });
    };
    const withConnection = { ...opts, createConnection };
    return typeof options === 'function' ? original.call(http2, origin, withConnection, options) : original.call(http2, origin, withConnection, listener);
  };
  http2.connect = patched as typeof http2.connect;
}

/** HTTPS: tunnel with CONNECT, then speak TLS to the destination inside the tunnel. */
function proxyHttps(proxy: URL): void {
  const proto = https.Agent.prototype as unknown as { createConnection: CreateConnection };
  const original = proto.createConnection;
  proto.createConnection = function (options, cb) {
    const host = options.hostname || options.host || 'localhost';
    const port = Number(options.port) || 443;
    if (options.socketPath || bypass(host, port)) return original.call(this, options, cb);
    const target = authority(host, port);
    const raw = net.connect({ host: proxy.hostname.replace(/^\[|\]$/g, ''), port: Number(proxy.port) || 80 });
    let buf = Buffer.alloc(0);
    const fail = (err: Error) => {
      raw.destroy();
      cb?.(err, raw);
    };
    raw.once('error', fail);
    raw.once('connect', () => raw.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${proxyAuthHeader(proxy)}\r\n`));
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buf.length > 65536) fail(new Error(`proxy CONNECT ${target}: oversized response`));
        return;
      }
      raw.off('data', onData);
      raw.off('error', fail);
      raw.pause();
      const statusLine = buf.subarray(0, buf.indexOf('\r\n')).toString('latin1');
      if (!/^HTTP\/1\.[01] 200/.test(statusLine)) {
        fail(new Error(`proxy refused CONNECT ${target}: ${statusLine.replace(/^HTTP\/1\.[01] /, '')}`));
        return;
      }
      const servername = options.servername || (net.isIP(host) ? undefined : host);
      const socket = tls.connect({ ...(options as tls.ConnectionOptions), socket: raw, ...(servername ? { servername } : {}) });
      cb?.(null, socket);
    };
    raw.on('data', onData);
    return undefined;
  };
}

function installFetchDispatcher(): void {
  const key = Symbol.for('undici.globalDispatcher.1');
  if (Object.prototype.hasOwnProperty.call(globalThis, key)) return;
  const slot = globalThis as unknown as Record<symbol, unknown>;
  let dispatcher: unknown;
  let loading = false;
  Object.defineProperty(globalThis, key, {
    configurable: true,
    enumerable: false,
    get() {
      if (dispatcher !== undefined || loading) return dispatcher;
      // undici's index reads this property while it loads (and then defines it as a plain writable
      // value holding a default Agent); answer undefined meanwhile and overwrite it afterwards.
      loading = true;
      const emitWarning = process.emitWarning;
      // EnvHttpProxyAgent's one-time "experimental" warning would land on the command's stderr.
      process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
        if ((rest[0] as { code?: string } | undefined)?.code === 'UNDICI-EHPA') return;
        (emitWarning as (...a: unknown[]) => void).call(process, warning, ...rest);
      }) as typeof process.emitWarning;
      try {
        const { EnvHttpProxyAgent } = require('undici') as { EnvHttpProxyAgent?: new () => unknown };
        if (typeof EnvHttpProxyAgent === 'function') dispatcher = new EnvHttpProxyAgent();
      } catch {
        // leave fetch on its default dispatcher rather than break the program
      } finally {
        process.emitWarning = emitWarning;
        loading = false;
      }
      if (dispatcher !== undefined) slot[key] = dispatcher;
      return dispatcher;
    },
    set(value: unknown) {
      Object.defineProperty(globalThis, key, { value, writable: true, configurable: true, enumerable: false });
    },
  });
}

if (httpProxy || httpsProxy) {
  installFetchDispatcher();
  if (httpProxy) proxyHttp(httpProxy);
  if (httpsProxy) proxyHttps(httpsProxy);
  proxyHttp2({ ...(httpProxy ? { 'http:': httpProxy } : {}), ...(httpsProxy ? { 'https:': httpsProxy } : {}) });
}
