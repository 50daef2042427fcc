// Chaining through a corporate proxy: when srt itself runs with HTTPS_PROXY/HTTP_PROXY set,
// allowed connections leave through that proxy with a CONNECT to the address srt's own guard
// passed, never to a name that proxy would resolve again (SPEC §6, gate.ts). The environment is
// passed in explicitly so tests (and the library API) decide it.

import { connect as netConnect, type Socket } from 'node:net';
import { hostPort } from '../host-port.js';

export interface UpstreamProxies {
  /** For CONNECT tunnels and SOCKS connections. */
  tunnel?: URL;
  /** For plain-HTTP (absolute-form) requests. */
  plain?: URL;
  /** Lowercase NO_PROXY entries. */
  noProxy: string[];
}

function proxyUrl(value: string | undefined, name: string): URL | undefined {
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value.includes('://') ? value : `http://${value}`);
  } catch {
    throw new Error(`${name}: invalid proxy URL "${value}"`);
  }
  if (url.protocol !== 'http:') throw new Error(`${name}: only http:// upstream proxies are supported (got ${url.protocol})`);
  return url;
}

/** Read the upstream proxy settings from an environment (upper case wins over lower case). */
export function upstreamFromEnv(env: Record<string, string | undefined>): UpstreamProxies | undefined {
  const get = (k: string) => env[k] ?? env[k.toLowerCase()];
  const https = proxyUrl(get('HTTPS_PROXY'), 'HTTPS_PROXY');
  const http = proxyUrl(get('HTTP_PROXY'), 'HTTP_PROXY');
  if (!https && !http) return undefined;
  const noProxy = (get('NO_PROXY') ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  return { tunnel: https ?? http, plain: http ?? https, noProxy };
}

/** Does NO_PROXY exempt `host` (canonical, IPv6 unbracketed) on `port`? */
export function bypassesUpstream(noProxy: string[], host: string, port: number): boolean {
  return noProxy.some((entry) => {
    if (entry === '*') return true;
    let name = entry;
    const m = /^(.*):(\d+)$/.exec(entry);
    if (m && !entry.endsWith(']') && (m[1]!.includes('.') || !m[1]!.includes(':'))) {
      if (Number(m[2]) !== port) return false;
      name = m[1]!;
    }
    name = name.replace(/^\[|\]$/g, '').replace(/^\*?\./, '');
    return host === name || host.endsWith(`.${name}`);
  });
}

/** Open a tunnel to `host:port` through `proxy` with CONNECT; resolves with the raw socket. */
export function connectThrough(proxy: URL, host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: proxy.hostname.replace(/^\[|\]$/g, ''), port: Number(proxy.port || 80), allowHalfOpen: true });
    const authority = hostPort(host, port);
    const auth =
      proxy.username !== ''
        ? `Proxy-Authorization: Basic ${Buffer.from(
            `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`,
          ).toString('base64')}\r\n`
        : '';
    let buf = Buffer.alloc(0);
    const fail = (why: string) => {
      socket.destroy();
      reject(new Error(`upstream proxy ${proxy.host}: ${why}`));
    };
    socket.setTimeout(timeoutMs, () => fail('timed out'));
    socket.once('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
    socket.on('connect', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`));
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buf.length > 16384) fail('oversized CONNECT response');
        return;
      }
      socket.off('data', onData);
      socket.pause();
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(buf.subarray(0, end).toString('latin1'));
      if (!status || status[1] !== '200') {
        fail(`CONNECT ${authority} answered ${status ? status[1] : 'garbage'}`);
        return;
      }
      socket.setTimeout(0);
      socket.removeAllListeners('error');
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on('data', onData);
  });
}
