// Loaded into every Node process in the sandbox (NODE_OPTIONS=--require <this file>, compiled to
// dist/proxy/node-preload.cjs). Node 20 ignores HTTP(S)_PROXY; this makes the three client
// stacks honour them so `fetch(url)`, `http.get` and `https.get` just work:
//  - global fetch (Node's bundled undici): a lazily created undici EnvHttpProxyAgent installed as
//    the global dispatcher (the symbol undici shares across copies); nothing is loaded until
//    fetch first asks for the dispatcher, so `node -e 0` pays nothing for it.
//  - every http.Agent (the global one and those programs make, as the AWS SDK does): sends
//    absolute-form requests to the proxy (inspectable plain HTTP).
//  - every https.Agent: opens a CONNECT tunnel, then TLS to the destination inside it.
// The agents' own prototypes are patched, so an agent a library creates for itself (keep-alive
// pools, custom TLS options) honours the proxy too; a subclass that connects in its own way
// (a proxy agent of the program's) keeps doing so.
// NO_PROXY (localhost,127.0.0.1,::1 in the sandbox) keeps loopback direct. Without a proxy
// variable this file does nothing.

import http = require('node:http');
import https = require('node:https');
import net = require('node:net');
import tls = require('node:tls');

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
}
