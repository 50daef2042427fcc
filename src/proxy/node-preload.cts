// Loaded into every Node process in the sandbox (NODE_OPTIONS=--require <this file>, compiled to
// dist/proxy/node-preload.cjs). Node 20 ignores HTTP(S)_PROXY; this makes the three client
// stacks honour them so `fetch(url)`, `http.get` and `https.get` just work:
//  - global fetch (Node's bundled undici): a lazily created undici EnvHttpProxyAgent installed as
//    the global dispatcher (the symbol undici shares across copies); nothing is loaded until
//    fetch first asks for the dispatcher, so `node -e 0` pays nothing for it.
//  - http.globalAgent: sends absolute-form requests to the proxy (inspectable plain HTTP).
//  - https.globalAgent: opens a CONNECT tunnel, then TLS to the destination inside it.
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

class ProxyHttpAgent extends http.Agent {
  constructor(private readonly proxy: URL) {
    super({ keepAlive: true, timeout: 5000 });
  }
  // Rewrite the request to absolute-form and send it to the proxy instead of the destination.
  addRequest(req: http.ClientRequest & { _header?: string | null }, options: Opts): void {
    const host = options.hostname || options.host || 'localhost';
    const port = Number(options.port) || 80;
    if (options.socketPath || bypass(host, port) || !req.path.startsWith('/')) {
      (http.Agent.prototype as unknown as { addRequest: (r: unknown, o: unknown) => void }).addRequest.call(this, req, options);
      return;
    }
    const origin = `http://${authority(host, port)}`;
    if (req._header) req._header = req._header.replace(/^(\S+) (\S+)/, (_m, method: string, path: string) => `${method} ${origin}${path}`);
    req.path = `${origin}${req.path}`;
    const auth = proxyAuthHeader(this.proxy);
    if (auth && !req.getHeader('proxy-authorization') && !req._header) req.setHeader('Proxy-Authorization', auth.slice(21, -2));
    const to = { ...options, host: this.proxy.hostname.replace(/^\[|\]$/g, ''), hostname: undefined, port: Number(this.proxy.port) || 80 };
    (http.Agent.prototype as unknown as { addRequest: (r: unknown, o: unknown) => void }).addRequest.call(this, req, to);
  }
}

class ProxyHttpsAgent extends https.Agent {
  constructor(private readonly proxy: URL) {
    super({ keepAlive: true, timeout: 5000 });
  }
  // Tunnel with CONNECT, then speak TLS to the destination inside the tunnel.
  override createConnection(options: Opts, cb?: (err: Error | null, s: net.Socket) => void): net.Socket | undefined {
    const host = options.hostname || options.host || 'localhost';
    const port = Number(options.port) || 443;
    if (options.socketPath || bypass(host, port)) {
      return (https.Agent.prototype as unknown as { createConnection: (o: unknown) => net.Socket }).createConnection.call(this, options);
    }
    const target = authority(host, port);
    const raw = net.connect({ host: this.proxy.hostname.replace(/^\[|\]$/g, ''), port: Number(this.proxy.port) || 80 });
    let buf = Buffer.alloc(0);
    const fail = (err: Error) => {
      raw.destroy();
      cb?.(err, raw);
    };
    raw.once('error', fail);
    raw.once('connect', () => raw.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${proxyAuthHeader(this.proxy)}\r\n`));
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
  }
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
  if (httpProxy) http.globalAgent = new ProxyHttpAgent(httpProxy);
  if (httpsProxy) https.globalAgent = new ProxyHttpsAgent(httpsProxy);
}
