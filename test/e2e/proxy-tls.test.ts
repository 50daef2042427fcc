// TLS termination in the proxy (SPEC §7), in-process: real clients (curl h1 and h2, node
// https/fetch, python3 urllib/requests) run as child processes with the environment the sandbox
// gets, against loopback HTTPS / HTTP/2 servers whose certificates come from a test CA made with
// openssl, which srt is told to trust through extraCaCertPaths. Test names exist only in the
// proxy's injected resolver, so a request that succeeds went through the proxy. Also: the
// authority rules, excludeDomains, upstream certificate failures, non-TLS tunnels,
// maxTunnels/handshakeTimeoutMs, broken and abandoned ClientHellos, WebSocket and SSE streaming.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { rules } from './proxy-fixtures.js';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { sandboxProxyEnv } from '../../src/proxy/env.js';
import { prepareTermination, type Termination } from '../../src/proxy/trust.js';
import type { Policy } from '../../src/policy.js';
import type { Stage } from '../../src/proxy/pipeline.js';
import { REPO, tempDir } from './helpers.js';
import { INIT_HELPER_PATH } from '../../src/platform/init-helper.js';
import { listenOn, network, openFds, testPki } from './proxy-fixtures.js';

const PRELOAD = join(REPO, 'dist', 'proxy', 'node-preload.cjs');

const tmp = tempDir('srt-proxy-tls-');
const resolver = async (host: string) => {
  if (host.endsWith('.test')) return ['127.0.0.1'];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

let pki: ReturnType<typeof testPki>;
let H1 = 0; // HTTP/1.1-only HTTPS origin (allowed.test, 127.0.0.1)
let H2 = 0; // HTTP/2 origin (h2.test)
let BAD = 0; // wrong-name certificate (names other.test)
let EXPIRED = 0;
let UNTRUSTED = 0; // self-signed, not in extraCaCertPaths
let EXCLUDED = 0; // excluded.test: tunnelled, its own self-signed certificate
let ECHO = 0; // plain TCP echo
let BANNER = 0; // a server that speaks first
const servers: Array<http.Server | https.Server | Server | http2.Http2SecureServer> = [];
const seen: Array<{ method: string; url: string; host: string; headers: http.IncomingHttpHeaders; alpn: string | false }> = [];
let badHits = 0;
let excludedCert: ReturnType<ReturnType<typeof testPki>['leaf']>;
let termination: Termination;
let bundlePath: string;
let env: Record<string, string>;
let proxy: ProxyHandle;
const stageLog: string[] = [];

function tlsNetwork(allow: string[], over: Partial<NonNullable<Policy['network']['tlsTerminate']>> = {}): Policy['network'] {
  return {
    ...network({ allow }),
    tlsTerminate: {
      excludeDomains: rules(['excluded.test'], 'allow').map((d) => d.rule),
      extraCaCertPaths: [pki.caPath],
      maxTunnels: 256,
      handshakeTimeoutMs: 10_000,
      source: { scope: 'user' },
      ...over,
    },
  };
}

const ALLOW = ['allowed.test', 'h2.test', 'bad.test', 'expired.test', 'untrusted.test', 'excluded.test', 'echo.test', 'banner.test', '127.0.0.1'];

async function startTlsProxy(over: Partial<NonNullable<Policy['network']['tlsTerminate']>> = {}, extra: { stages?: Stage[]; idleTimeoutMs?: number } = {}) {
  return startProxy({
    network: tlsNetwork(ALLOW, over),
    listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
    resolver,
    upstreamEnv: {},
    testOnlyExemptAddresses: ['127.0.0.1'],
    termination,
    ...extra,
  });
}

function run(cmd: string, args: string[], extra: Record<string, string> = {}) {
  return execa(cmd, args, { env: { ...env, ...extra }, extendEnv: false, reject: false, timeout: 20_000, stdin: 'ignore' });
}

function origin(req: http.IncomingMessage, res: http.ServerResponse) {
  const alpn = (req.socket as tls.TLSSocket).alpnProtocol ?? false;
  seen.push({ method: req.method!, url: req.url!, host: req.headers.host ?? '', headers: req.headers, alpn });
  if (req.url === '/sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let n = 0;
    const tick = setInterval(() => {
      // Ten events, then the stream stays open: a proxy that buffered would never deliver them.
      res.write(`data: ${n} ${Date.now()}\n\n`);
      if (++n === 10) clearInterval(tick);
    }, 50);
    res.on('close', () => clearInterval(tick));
    return;
  }
  if (req.url?.startsWith('/hold')) {
    setTimeout(() => res.end(`held ${req.url}\n`), 200);
    return;
  }
  if (req.url === '/endless') {
    // Writes as fast as the proxy reads: a slow client must stop it (backpressure).
    endless = { sent: 0, held: false, closed: new Promise((resolve) => res.on('close', () => resolve())) };
    const chunk = Buffer.alloc(64 * 1024, 1);
    const pump = () => {
      endless!.held = false;
      while (res.write(chunk)) endless!.sent += chunk.length;
      endless!.sent += chunk.length;
      endless!.held = true; // until the next drain
    };
    res.on('drain', pump);
    pump();
    return;
  }
  let len = 0;
  req.on('data', (c: Buffer) => (len += c.length));
  req.on('end', () => res.end(`hello ${req.method} ${req.url} host=${req.headers.host} alpn=${alpn} body=${len}\n`));
}
v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
let endless: { sent: number; held: boolean; closed: Promise<void> } | undefined;

beforeAll(async () => {
  pki = testPki(tmp.path);
  const h1Cert = pki.leaf(['DNS:allowed.test', 'DNS:echo.test', 'IP:127.0.0.1']);
  const h1 = https.createServer({ cert: h1Cert.cert, key: h1Cert.key, ALPNProtocols: ['http/1.1'] }, origin);
  h1.on('upgrade', (req, socket: Socket, head: Buffer) => {
    seen.push({ method: req.method!, url: req.url!, host: req.headers.host ?? '', headers: req.headers, alpn: 'http/1.1' });
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    if (head.length) socket.write(head);
    socket.pipe(socket);
  });
  H1 = await listenOn(h1);
  const h2Cert = pki.leaf(['DNS:h2.test']);
  const h2 = http2.createSecureServer({ cert: h2Cert.cert, key: h2Cert.key });
  h2.on('stream', (stream, headers) => {
    seen.push({ method: String(headers[':method']), url: String(headers[':path']), host: String(headers[':authority']), headers: headers as http.IncomingHttpHeaders, alpn: 'h2' });
    let len = 0;
    stream.on('data', (c: Buffer) => (len += c.length));
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'x-from': 'h2-origin' });
      stream.end(`h2 hello ${headers[':method']} ${headers[':path']} authority=${headers[':authority']} body=${len}\n`);
      // The origin goes away after this one (GOAWAY): srt must open a new session for the next.
      if (headers[':path'] === '/goaway') stream.session?.close();
    });
  });
  await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
  H2 = (h2.address() as { port: number }).port;
  servers.push(h1, h2);

  const marker = (req: http.IncomingMessage, res: http.ServerResponse) => {
    badHits++;
    res.end('UPSTREAM DATA MUST NOT ARRIVE\n');
    void req;
  };
  const wrong = pki.leaf(['DNS:other.test']);
  const bad = https.createServer({ cert: wrong.cert, key: wrong.key }, marker);
  BAD = await listenOn(bad);
  const exp = pki.leaf(['DNS:expired.test'], { expired: true });
  const expired = https.createServer({ cert: exp.cert, key: exp.key }, marker);
  EXPIRED = await listenOn(expired);
  const self = pki.leaf(['DNS:untrusted.test'], { selfSigned: true });
  const untrusted = https.createServer({ cert: self.cert, key: self.key }, marker);
  UNTRUSTED = await listenOn(untrusted);
  excludedCert = pki.leaf(['DNS:excluded.test'], { selfSigned: true });
  const excluded = https.createServer({ cert: excludedCert.cert, key: excludedCert.key }, (_req, res) => res.end('excluded origin\n'));
  EXCLUDED = await listenOn(excluded);
  const echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  ECHO = (echo.address() as { port: number }).port;
  const banner = createServer((s) => {
    s.end('220 banner.test ready\r\n');
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => banner.listen(0, '127.0.0.1', r));
  BANNER = (banner.address() as { port: number }).port;
  servers.push(bad, expired, untrusted, excluded, echo, banner);

  termination = prepareTermination(tlsNetwork([]).tlsTerminate!);
  bundlePath = join(tmp.path, 'bundle.pem');
  writeFileSync(bundlePath, termination.bundle());
  proxy = await startTlsProxy({}, {
    stages: [
      {
        name: 'test',
        request: (req) => {
          stageLog.push(`${req.scheme} ${req.method} ${req.authority}${req.path}`);
          if (req.path === '/refused-by-stage') return { refuse: 'the test stage refuses this' };
          req.headers.push(['X-Stage', 'seen']);
        },
        response: (res) => void res.headers.push(['X-Stage-Response', 'seen']),
      },
    ],
  });
  env = {
    PATH: process.env.PATH!,
    HOME: tmp.path,
    LANG: 'C.UTF-8',
    ...sandboxProxyEnv({ httpPort: proxy.httpPort!, socksPort: proxy.socksPort!, nodePreloadPath: PRELOAD, helperPath: INIT_HELPER_PATH }),
    SSL_CERT_FILE: bundlePath,
    CURL_CA_BUNDLE: bundlePath,
    NODE_EXTRA_CA_CERTS: bundlePath,
    REQUESTS_CA_BUNDLE: bundlePath,
  };
});

afterAll(async () => {
  await proxy?.close();
  for (const s of servers) {
    if ('closeAllConnections' in s) s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  tmp.cleanup();
});

/** Open a CONNECT tunnel through `port` and return the raw socket once it is established. */
function tunnel(port: number, target: string): Promise<{ socket: Socket; status: string; head: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    s.on('error', reject);
    let buf = '';
    const onData = (c: Buffer) => {
      buf += c.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) return;
      s.off('data', onData);
      s.pause();
      const rest = buf.slice(end + 4);
      if (rest) s.unshift(Buffer.from(rest, 'latin1'));
      resolve({ socket: s, status: buf.slice(0, buf.indexOf('\r\n')), head: buf.slice(0, end) });
    };
    s.on('data', onData);
    s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}

/** TLS over a CONNECT tunnel, trusting srt's bundle. */
async function tlsThrough(port: number, target: string, opts: tls.ConnectionOptions = {}): Promise<tls.TLSSocket> {
  const { socket, status } = await tunnel(port, target);
  if (!status.includes(' 200 ')) throw new Error(status);
  return new Promise((resolve, reject) => {
    const t = tls.connect({ socket, servername: target.split(':')[0], ca: termination.bundle(), ...opts }, () => resolve(t));
    t.once('error', reject);
  });
}

function readAll(s: tls.TLSSocket | Socket, until?: RegExp, ms = 5000): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve(out);
    }, ms);
    s.on('data', (c: Buffer) => {
      out += c.toString('latin1');
      if (until?.test(out)) {
        clearTimeout(timer);
        s.destroy();
        resolve(out);
      }
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on('error', () => undefined);
    s.resume();
  });
}

const issuerOf = (stderr: string) => /issuer: (.*)/.exec(stderr)?.[1] ?? '';

describe('real clients through TLS termination', () => {
  it('curl over HTTP/1.1: the leaf is srt\'s, the upstream sees the request with the tunnel\'s Host', async () => {
    const r = await run('curl', ['-sS', '-v', '--http1.1', `https://allowed.test:${H1}/h1?x=1`]);
    expect(r.stdout).toBe(`hello GET /h1?x=1 host=allowed.test:${H1} alpn=http/1.1 body=0`);
    expect(issuerOf(r.stderr)).toMatch(/O=srt; CN=srt ephemeral CA/);
    expect(r.stderr).toMatch(/SSL certificate verify ok/);
    expect(seen.at(-1)!.headers['x-stage']).toBe('seen');
    expect(r.stderr).toMatch(/< X-Stage-Response: seen/i);
  });

  it('curl --http2 to an HTTP/2 upstream: h2 on both sides', async () => {
    const r = await run('curl', ['-sS', '-v', '--http2', '-d', 'posted', `https://h2.test:${H2}/two`]);
    expect(r.stdout).toBe(`h2 hello POST /two authority=h2.test:${H2} body=6`);
    expect(r.stderr).toMatch(/< HTTP\/2 200/);
    expect(r.stderr).toMatch(/< x-from: h2-origin/);
    expect(issuerOf(r.stderr)).toMatch(/O=srt/);
  });

  it('an HTTP/2 upstream that goes away (GOAWAY) is reconnected for the next stream of the same client connection', async () => {
    const r = await run('curl', ['-sS', '--http2', `https://h2.test:${H2}/goaway`, `https://h2.test:${H2}/after-goaway`]);
    expect(r.stdout).toBe(`h2 hello GET /goaway authority=h2.test:${H2} body=0\nh2 hello GET /after-goaway authority=h2.test:${H2} body=0`);
  });

  it('curl --http2 to an HTTP/1.1-only upstream gets HTTP/1.1 (the upstream\'s choice is offered)', async () => {
    const r = await run('curl', ['-sS', '-v', '--http2', `https://allowed.test:${H1}/mirror`]);
    expect(r.stdout).toBe(`hello GET /mirror host=allowed.test:${H1} alpn=http/1.1 body=0`);
    expect(r.stderr).toMatch(/< HTTP\/1\.1 200/);
  });

  it('an IP-literal destination gets a leaf with an IP address', async () => {
    const r = await run('curl', ['-sS', '--noproxy', '', `https://127.0.0.1:${H1}/ip`]);
    expect(r.stdout).toBe(`hello GET /ip host=127.0.0.1:${H1} alpn=http/1.1 body=0`);
  });

  it('node https.get and fetch trust the minted leaf through NODE_EXTRA_CA_CERTS', async () => {
    const get = `require('https').get(process.argv[1], r => { let b=''; r.on('data', c => b += c); r.on('end', () => console.log(r.statusCode, b.trim())); }).on('error', e => console.log('ERR', e.message))`;
    expect((await run('node', ['-e', get, `https://allowed.test:${H1}/node`])).stdout).toBe(`200 hello GET /node host=allowed.test:${H1} alpn=false body=0`);
    const fetchJs = 'fetch(process.argv[1]).then(r => r.text()).then(t => console.log(t.trim()), e => console.log("ERR", e.cause?.message ?? e.message))';
    expect((await run('node', ['-e', fetchJs, `https://allowed.test:${H1}/fetch`])).stdout).toMatch(new RegExp(`^hello GET /fetch host=allowed.test:${H1} alpn=`));
  });

  it('python3 urllib (SSL_CERT_FILE) and requests (REQUESTS_CA_BUNDLE) verify the minted leaf', async () => {
    const urllib = 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode(), end="")';
    expect((await run('python3', ['-c', urllib, `https://allowed.test:${H1}/py`])).stdout).toMatch(new RegExp(`^hello GET /py host=allowed.test:${H1}`));
    const requests = 'import sys, requests; print(requests.get(sys.argv[1]).text, end="")';
    const r = await run('/usr/bin/python3', ['-c', requests, `https://allowed.test:${H1}/requests`]);
    expect(r.stdout, r.stderr).toMatch(new RegExp(`^hello GET /requests host=allowed.test:${H1}`));
  });

  it('SOCKS5 with a ClientHello is terminated the same way', async () => {
    const r = await run('curl', ['-sS', '-v', '--proxy', `socks5h://127.0.0.1:${proxy.socksPort}`, `https://allowed.test:${H1}/socks`]);
    expect(r.stdout).toBe(`hello GET /socks host=allowed.test:${H1} alpn=http/1.1 body=0`);
    expect(issuerOf(r.stderr)).toMatch(/O=srt/);
  });

  it('a stage sees terminated requests (scheme https, Host without :443) and may refuse them', async () => {
    const r = await run('curl', ['-sS', '-i', `https://allowed.test:${H1}/refused-by-stage`]);
    expect(r.stdout).toMatch(/\r\n\r\nHTTP\/1\.1 403 Blocked by srt: the test stage refuses this/);
    expect(stageLog).toContain(`https GET allowed.test:${H1}/refused-by-stage`);
  });
});

describe('the authority is the tunnel\'s', () => {
  it('refuses a Host header naming another host than the CONNECT target', async () => {
    const before = seen.length;
    const r = await run('curl', ['-sS', '-i', '-H', 'Host: h2.test', `https://allowed.test:${H1}/spoof`]);
    expect(r.stdout).toMatch(/\r\n\r\nHTTP\/1\.1 403 Blocked by srt: Host header "h2\.test" names another host than the TLS tunnel \(allowed\.test:\d+\)/);
    expect(seen.length).toBe(before);
  });

  it('refuses an HTTP/2 :authority naming another host', async () => {
    const before = seen.length;
    const r = await run('curl', ['-sS', '-i', '--http2', '-H', 'Host: allowed.test', `https://h2.test:${H2}/spoof2`]);
    expect(r.stdout).toMatch(/\r\n\r\nHTTP\/2 403/);
    expect(seen.length).toBe(before);
  });

  it('closes a tunnel whose SNI names another host, and records why', async () => {
    await expect(tlsThrough(proxy.httpPort!, `allowed.test:${H1}`, { servername: 'h2.test' })).rejects.toThrow();
    expect(proxy.violations()).toContainEqual({ host: 'allowed.test', port: H1, reason: `TLS server name "h2.test" is not the tunnel's host allowed.test:${H1}` });
  });
});

describe('what is not terminated', () => {
  it('tunnels excludeDomains hosts: the client sees the upstream\'s own certificate', async () => {
    const r = await run('curl', ['-sS', '-v', '--cacert', excludedCert.certPath, `https://excluded.test:${EXCLUDED}/`]);
    expect(r.stdout).toBe('excluded origin');
    expect(issuerOf(r.stderr)).toMatch(/CN=excluded\.test/);
  });

  it('relays a non-TLS protocol over CONNECT, including a server that speaks first', async () => {
    const { socket } = await tunnel(proxy.httpPort!, `echo.test:${ECHO}`);
    socket.write('ping over a tunnel');
    expect(await readAll(socket, /ping over a tunnel/)).toBe('ping over a tunnel');
    const b = await tunnel(proxy.httpPort!, `banner.test:${BANNER}`);
    expect(await readAll(b.socket, /ready/)).toBe('220 banner.test ready\r\n');
  });
});

describe('upstream certificate problems are a 502 with the reason', () => {
  it.each([
    ['a certificate for another name', () => `bad.test:${BAD}`, /Hostname\/IP does not match certificate's altnames/],
    ['an expired certificate', () => `expired.test:${EXPIRED}`, /certificate has expired/],
    ['an untrusted (self-signed) certificate', () => `untrusted.test:${UNTRUSTED}`, /self[- ]signed certificate/],
  ])('%s', async (_name, target, reason) => {
    const before = badHits;
    const r = await run('curl', ['-sS', '-i', `https://${target()}/`]);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 502 upstream /);
    expect(r.stdout).toMatch(reason);
    expect(r.stdout).toMatch(/X-Proxy-Error: upstream-error/i);
    expect(r.stdout).not.toContain('UPSTREAM DATA');
    expect(badHits).toBe(before);
  });
});

/** A real ClientHello as Node's TLS client sends it, captured from a throwaway local listener. */
async function captureClientHello(servername: string): Promise<Buffer> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const got = new Promise<Buffer>((resolve) => srv.once('connection', (s) => s.once('data', (d: Buffer) => { resolve(d); s.destroy(); })));
  const c = tls.connect({ port: (srv.address() as { port: number }).port, host: '127.0.0.1', servername, ALPNProtocols: ['http/1.1'] });
  c.on('error', () => undefined);
  const hello = await got;
  c.destroy();
  srv.close();
  return hello;
}

function closedWithin(s: Socket | tls.TLSSocket): Promise<number> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    if (s.destroyed) return resolve(0);
    s.on('close', () => resolve(Date.now() - t0));
    s.on('error', () => undefined);
    s.resume();
  });
}

describe('bad input and limits', () => {
  let p: ProxyHandle; // short handshake timeout
  let q: ProxyHandle; // short idle timeout, ordinary handshake timeout
  let m: ProxyHandle; // ordinary timeouts: the tunnels the cap test holds must stay open however slow the machine
  let upstreamBytes = 0;
  let sink: Server;
  let SINK = 0;
  beforeAll(async () => {
    // An upstream that counts every byte it ever receives: a broken hello must not reach it.
    sink = createServer((s) => {
      s.on('data', (d: Buffer) => (upstreamBytes += d.length));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
    SINK = (sink.address() as { port: number }).port;
    const start = (limits: { maxTunnels: number; handshakeTimeoutMs?: number }, idle: { idleTimeoutMs?: number } = {}) => startProxy({
      network: tlsNetwork([...ALLOW, 'sink.test'], limits),
      listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
      resolver,
      upstreamEnv: {},
      testOnlyExemptAddresses: ['127.0.0.1'],
      termination,
      ...idle,
    });
    p = await start({ maxTunnels: 2, handshakeTimeoutMs: 400 });
    q = await start({ maxTunnels: 2 }, { idleTimeoutMs: 600 });
    m = await start({ maxTunnels: 2 });
  });
  afterAll(async () => {
    await p?.close();
    await q?.close();
    await m?.close();
    sink?.close();
  });

  it.each([
    ['a record that is not a handshake', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x02, 0, 0, 1, 0])],
    ['a zero-length record', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00])],
    ['an unknown record version', Buffer.from([0x16, 0x07, 0x01, 0x00, 0x04, 1, 0, 0, 0])],
    ['a truncated hello body', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x08, 0x01, 0x00, 0x00, 0x04, 0x03, 0x03, 0, 0])],
  ])('closes a tunnel whose ClientHello is broken (%s); the upstream receives nothing', async (_name, bytes) => {
    const { socket } = await tunnel(p.httpPort!, `sink.test:${SINK}`);
    socket.write(bytes);
    await closedWithin(socket);
    expect(upstreamBytes).toBe(0);
    expect(p.violations().some((v) => v.host === 'sink.test' && v.reason.startsWith('malformed TLS ClientHello'))).toBe(true);
  });

  it('closes a tunnel with a ClientHello carrying a hostile SNI', async () => {
    const hello = await captureClientHello('sink.test');
    // Same length, different bytes: a space inside the server name.
    const i = hello.indexOf('sink.test');
    hello[i + 4] = 0x20;
    const { socket } = await tunnel(p.httpPort!, `sink.test:${SINK}`);
    socket.write(hello);
    await closedWithin(socket);
    expect(upstreamBytes).toBe(0);
  });

  it('handshakeTimeoutMs closes a tunnel that never speaks and a slowloris ClientHello', async () => {
    // Each wait starts as soon as its tunnel is open (the proxy's clock started a little earlier).
    const hello = await captureClientHello('sink.test');
    const silent = await tunnel(p.httpPort!, `sink.test:${SINK}`);
    const silentClosed = closedWithin(silent.socket);
    const slow = await tunnel(p.httpPort!, `sink.test:${SINK}`);
    const slowClosed = closedWithin(slow.socket);
    let i = 0;
    const drip = setInterval(() => slow.socket.writable && i < hello.length && slow.socket.write(hello.subarray(i, ++i)), 30);
    const [a, b] = await Promise.all([silentClosed, slowClosed]);
    clearInterval(drip);
    // Closed by the timeout (no sooner), not by anything else.
    for (const ms of [a, b]) expect(ms).toBeGreaterThanOrEqual(350);
    expect(upstreamBytes).toBe(0);
  });

  it('maxTunnels answers 503 too-many-tunnels past the cap; hang-ups mid-handshake give their slot back', async () => {
    const hello = await captureClientHello(`allowed.test`);
    // Clients that hang up half-way through the ClientHello, five times.
    for (let k = 0; k < 5; k++) {
      const { socket } = await tunnel(m.httpPort!, `allowed.test:${H1}`);
      socket.write(hello.subarray(0, 20));
      socket.destroy();
      await closedWithin(socket);
    }
    // Their slots come back as soon as srt sees them go (bounded wait).
    const terminated = async () => {
      for (let i = 0; ; i++) {
        const t = await tlsThrough(m.httpPort!, `allowed.test:${H1}`).catch((e: Error) => e);
        if (!(t instanceof Error)) return t;
        if (i === 100 || !/503/.test(t.message)) throw t;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const a = await terminated();
    const b = await terminated();
    const third = await tunnel(m.httpPort!, `allowed.test:${H1}`);
    expect(third.status).toBe('HTTP/1.1 503 too many TLS tunnels open (network.tlsTerminate.maxTunnels: 2)');
    expect(third.head).toMatch(/\r\nX-Proxy-Error: too-many-tunnels\r\n/i);
    third.socket.destroy();
    // Tunnels to excludeDomains hosts are never terminated and do not count.
    const excluded = await tunnel(m.httpPort!, `excluded.test:${EXCLUDED}`);
    expect(excluded.status).toBe('HTTP/1.1 200 Connection Established');
    excluded.socket.destroy();
    a.destroy();
    const c = await terminated();
    c.destroy();
    b.destroy();
  });

  it('closes a terminated connection that stays idle (no request in flight)', async () => {
    const t = await tlsThrough(q.httpPort!, `allowed.test:${H1}`);
    t.write(`GET /idle HTTP/1.1\r\nHost: allowed.test:${H1}\r\n\r\n`);
    // Answered, then closed once idle (not sooner).
    let got = '';
    t.on('data', (c: Buffer) => (got += c.toString()));
    const ms = await closedWithin(t);
    expect(got).toMatch(/^HTTP\/1\.1 200 /);
    expect(ms).toBeGreaterThanOrEqual(550);
  });

  it('closes a terminated connection whose request head never completes (slowloris inside TLS)', async () => {
    const t = await tlsThrough(q.httpPort!, `allowed.test:${H1}`);
    t.write(`GET /slow HTTP/1.1\r\nHost: allowed.test:${H1}\r\nX-Slow: `);
    const drip = setInterval(() => t.writable && t.write('a'), 50);
    const ms = await closedWithin(t);
    clearInterval(drip);
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(seen.some((r) => r.url === '/slow')).toBe(false);
  });

  it('a client that rejects srt\'s certificate is closed and nothing is sent upstream', async () => {
    const before = seen.length;
    await expect(tlsThrough(q.httpPort!, `allowed.test:${H1}`, { ca: pki.caPem })).rejects.toThrow(/self[- ]signed|unable to verify|unable to get/);
    expect(seen.length).toBe(before);
  });
});

describe('streaming through termination', () => {
  it('carries a WebSocket upgrade (the pipeline sees its head) with each frame echoed as it is sent', async () => {
    const t = await tlsThrough(proxy.httpPort!, `allowed.test:${H1}`, { ALPNProtocols: ['http/1.1'] });
    t.write(`GET /ws HTTP/1.1\r\nHost: allowed.test:${H1}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    let buf = '';
    await new Promise<void>((resolve) => {
      const on = (c: Buffer) => {
        buf += c.toString();
        if (buf.includes('\r\n\r\n')) {
          t.off('data', on);
          resolve();
        }
      };
      t.on('data', on);
    });
    expect(buf).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    expect(buf).toMatch(/\r\nUpgrade: websocket\r\n/i);
    expect(seen.at(-1)).toMatchObject({ url: '/ws', host: `allowed.test:${H1}` });
    expect(seen.at(-1)!.headers['x-stage']).toBe('seen');
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      const frame = `frame-${i}`;
      const echoed = new Promise<void>((resolve) => {
        let got = '';
        const on = (c: Buffer) => {
          got += c.toString();
          if (got.includes(frame)) {
            t.off('data', on);
            resolve();
          }
        };
        t.on('data', on);
      });
      t.write(frame);
      await echoed;
      delays.push(performance.now() - t0);
    }
    t.destroy(); // each frame's echo came before the next frame was sent: nothing was held back
    expect(delays).toHaveLength(10);
  });

  it('does not pass an upgrade to h2c on inside a terminated tunnel: the request gets its HTTP/1.1 answer', async () => {
    const t = await tlsThrough(proxy.httpPort!, `allowed.test:${H1}`, { ALPNProtocols: ['http/1.1'] });
    t.write(`GET /h2c HTTP/1.1\r\nHost: allowed.test:${H1}\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n`);
    const r = await readAll(t, /hello GET \/h2c/);
    expect(r).toMatch(/^HTTP\/1\.1 200 /);
    expect(seen.at(-1)!.headers.upgrade).toBeUndefined();
  });

  it('delivers a server-sent event stream event by event (each as it is sent)', async () => {
    const t = await tlsThrough(proxy.httpPort!, `allowed.test:${H1}`, { ALPNProtocols: ['http/1.1'] });
    t.write(`GET /sse HTTP/1.1\r\nHost: allowed.test:${H1}\r\nAccept: text/event-stream\r\n\r\n`);
    const lags: number[] = [];
    let buf = '';
    await new Promise<void>((resolve) => {
      t.on('data', (c: Buffer) => {
        buf += c.toString();
        for (const m of buf.matchAll(/data: (\d+) (\d+)\n\n/g)) lags[Number(m[1])] ??= Date.now() - Number(m[2]);
        if (lags.length === 10 && lags.every((x) => x !== undefined)) resolve();
      });
    });
    t.destroy();
    expect(lags).toHaveLength(10);
    expect(lags.filter((x) => x !== undefined)).toHaveLength(10);
  });
});

describe('resources', () => {
  it('applies backpressure through a terminated tunnel and frees the upstream when the client hangs up', async () => {
    gc();
    const before = process.memoryUsage().arrayBuffers;
    const t = await tlsThrough(proxy.httpPort!, `allowed.test:${H1}`);
    t.write(`GET /endless HTTP/1.1\r\nHost: allowed.test:${H1}\r\n\r\n`);
    t.pause(); // never read
    // Wait (bounded, generously: a loaded machine fills the buffers slowly) until the server is
    // held back: waiting for a drain, with nothing sent since the last look. Without
    // backpressure it would never be, and would write without end.
    let last = -1;
    const deadline = Date.now() + 90_000;
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      const now = endless?.sent ?? -1;
      if (endless?.held && now === last) break;
      if (Date.now() > deadline) throw new Error(`the server was never held back (${now} bytes sent)`);
      last = now;
    }
    // Only socket buffers and one high-water mark per stream are in flight: on each of the two
    // loopback hops (server → srt, srt → client) the kernel may hold its largest send and
    // receive buffers (receive autotuning goes up to tcp_rmem's maximum, 32 MiB on some hosts).
    const most = (name: string) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);
    expect(endless!.sent).toBeLessThan(2 * (most('tcp_rmem') + most('tcp_wmem')) + 4 * 1024 * 1024);
    // What the proxy itself holds (it runs in this process): buffers still reachable after a full
    // collection, against before the request.
    gc();
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(4 * 1024 * 1024);
    t.destroy();
    await endless!.closed;
  }, 120_000);

  it('opening and closing terminated connections of every kind leaves no descriptor behind', async () => {
    const baseline = openFds();
    for (let i = 0; i < 10; i++) {
      await run('curl', ['-sS', '--http1.1', `https://allowed.test:${H1}/fd`]);
      await run('curl', ['-sS', '--http2', `https://h2.test:${H2}/fd`]);
      await run('curl', ['-sS', `https://expired.test:${EXPIRED}/fd`]);
      const t = await tlsThrough(proxy.httpPort!, `allowed.test:${H1}`);
      t.destroy();
    }
    let now = openFds();
    for (let i = 0; i < 100 && now > baseline; i++) {
      await new Promise((r) => setTimeout(r, 50));
      now = openFds();
    }
    expect(now).toBeLessThanOrEqual(baseline);
  }, 240_000);
});

describe('tunnel stages', () => {
  it('see every tunnel before it is dialled and again with its SNI name, and may stop it there', async () => {
    const seenTunnels: string[] = [];
    const p = await startTlsProxy({}, {
      stages: [
        {
          name: 'tripwire-like',
          tunnel: (t) => {
            seenTunnels.push(`${t.via} ${t.target.display}${t.sni ? ` sni=${t.sni}` : ''}`);
            if (t.target.host.host === 'banner.test') return { refuse: 'the test stage stops this tunnel', proxyError: 'sentinel-not-allowed-here' };
            if (t.sni === 'h2.test') return { refuse: 'stopped at the SNI' };
          },
        },
      ],
    });
    try {
      const refused = await tunnel(p.httpPort!, `banner.test:${BANNER}`);
      expect(refused.status).toBe('HTTP/1.1 403 Blocked by srt: the test stage stops this tunnel');
      expect(refused.head).toMatch(/\r\nX-Proxy-Error: sentinel-not-allowed-here\r\n/);
      refused.socket.destroy();
      const socks = await run('curl', ['-sS', '--proxy', `socks5h://127.0.0.1:${p.socksPort}`, `http://banner.test:${BANNER}/`]);
      expect(socks.stderr).toMatch(/SOCKS5.*\(2\)|connection not allowed/i);
      await expect(tlsThrough(p.httpPort!, `h2.test:${H2}`)).rejects.toThrow();
      const ok = await run('curl', ['-sS', '--proxy', `http://127.0.0.1:${p.httpPort}`, `https://allowed.test:${H1}/through`]);
      expect(ok.stdout).toMatch(/^hello GET \/through /);
      expect(seenTunnels).toEqual(expect.arrayContaining([
        `connect banner.test:${BANNER}`, `socks banner.test:${BANNER}`, `connect h2.test:${H2}`, `connect h2.test:${H2} sni=h2.test`,
        `connect allowed.test:${H1}`, `connect allowed.test:${H1} sni=allowed.test`,
      ]));
      expect(p.violations()).toContainEqual({ host: 'h2.test', port: H2, reason: 'stopped at the SNI' });
    } finally {
      await p.close();
    }
  });
});

describe('the address guard decides every upstream connection of a terminated tunnel', () => {
  it('more upstream connections for concurrent requests go to the address that passed; the name is resolved once', async () => {
    const resolved: string[] = [];
    const p = await startProxy({
      network: tlsNetwork(ALLOW),
      listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
      resolver: async (h) => {
        resolved.push(h);
        return resolver(h);
      },
      upstreamEnv: {},
      testOnlyExemptAddresses: ['127.0.0.1'],
      termination,
    });
    const conns = new Set<string>();
    const count = (s: Socket) => conns.add(`${s.remotePort}`);
    servers[0]!.on('secureConnection', count);
    try {
      const t = await tlsThrough(p.httpPort!, `allowed.test:${H1}`, { ALPNProtocols: ['http/1.1'] });
      // Three pipelined requests, each held 200 ms upstream: in flight together.
      const req = (n: number) => `GET /hold-${n} HTTP/1.1\r\nHost: allowed.test:${H1}\r\n\r\n`;
      t.write(req(1) + req(2) + req(3));
      const out = await readAll(t, /held \/hold-3/);
      expect([...out.matchAll(/held (\/hold-\d)/g)].map((m) => m[1])).toEqual(['/hold-1', '/hold-2', '/hold-3']);
      expect(conns.size).toBeGreaterThan(1);
      expect(resolved).toEqual(['allowed.test']);
    } finally {
      servers[0]!.off('secureConnection', count);
      await p.close();
    }
  });
});
