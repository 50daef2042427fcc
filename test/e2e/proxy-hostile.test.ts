// Hostile and edge-case input against the HTTP and SOCKS5 proxies over raw sockets (loopback
// only): each is refused cleanly, nothing is dialed, and the proxy keeps serving others.
// Also: pipelining, websockets (CONNECT and ws:// upgrade), backpressure, client hang-ups.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { closeServer, listenOn, network } from './proxy-fixtures.js';

let A = 0;
let V6 = 0;
let origin: http.Server;
let origin6: http.Server;
let proxy: ProxyHandle;
let dialed = 0; // connections the origin accepted
let streamClosed: Promise<void> | undefined;
let streamedBytes = 0;
let echo: Server;
let E = 0;

function exchange(port: number, data: string | Buffer, opts: { until?: RegExp; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    const done = () => {
      s.destroy();
      resolve(out);
    };
    const timer = setTimeout(done, opts.timeoutMs ?? 3000);
    s.on('data', (c) => {
      out += c.toString('latin1');
      if (opts.until?.test(out)) {
        clearTimeout(timer);
        done();
      }
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on('error', () => undefined);
    s.write(data);
  });
}

async function ok(): Promise<void> {
  const r = await exchange(proxy.httpPort!, `GET http://127.0.0.1:${A}/alive HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  expect(r).toMatch(/^HTTP\/1\.1 200 /);
}

beforeAll(async () => {
  origin = http.createServer((req, res) => {
    if (req.url === '/stream') {
      // Endless response: the proxy must stop reading when the client does, and free it on hang-up.
      streamClosed = new Promise((resolve) => res.on('close', () => resolve()));
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = () => {
        while (res.write(chunk)) streamedBytes += chunk.length;
        streamedBytes += chunk.length;
      };
      res.on('drain', pump);
      pump();
      return;
    }
    res.end(`hello ${req.method} ${req.url} host=${req.headers.host}\n`);
  });
  origin.on('connection', () => dialed++);
  origin.on('upgrade', (req, socket: Socket, head: Buffer) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    socket.write(head);
    socket.pipe(socket); // echo frames back
  });
  A = await listenOn(origin);
  origin6 = http.createServer((req, res) => res.end(`v6 ${req.url}\n`));
  V6 = await listenOn(origin6, '::1');
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  E = (echo.address() as { port: number }).port;

  proxy = await startProxy({
    network: network({ allow: [`127.0.0.1:${A}`, `[::1]:${V6}`, `127.0.0.1:${E}`, 'allowed.test'], deny: ['evil.test'] }),
    listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
    resolver: async (h) => (h.endsWith('.test') ? ['127.0.0.1'] : []),
    upstreamEnv: {},
    testOnlyExemptAddresses: ['127.0.0.1'],
    headersTimeoutMs: 600,
    maxHeaderSize: 8 * 1024,
  });
});

afterAll(async () => {
  await proxy?.close();
  if (origin) await closeServer(origin);
  if (origin6) await closeServer(origin6);
  echo?.close();
});

describe('HTTP proxy: hostile input', () => {
  it.each([
    ['a malformed request line', 'GARBAGE\r\n\r\n', /^HTTP\/1\.1 400 malformed request/],
    ['a bare LF request', 'GET http://127.0.0.1/ HTTP/1.1\nHost: x\n\n', /^HTTP\/1\.1 400 /],
    ['an oversized header', `GET http://127.0.0.1/ HTTP/1.1\r\nX: ${'a'.repeat(16 * 1024)}\r\n\r\n`, /^HTTP\/1\.1 431 request header too large/],
    ['CONNECT host:0', 'CONNECT allowed.test:0 HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 bad CONNECT target: invalid port 0/],
    ['CONNECT host:99999', 'CONNECT allowed.test:99999 HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 bad CONNECT target: invalid port 99999/],
    ['CONNECT without a port', 'CONNECT allowed.test HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 bad CONNECT target: missing port/],
    ['CONNECT with an unbracketed IPv6', 'CONNECT ::1:80 HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400 bad CONNECT target: an IPv6 address must be bracketed/],
    ['CONNECT with userinfo', 'CONNECT allowed.test@evil.test:443 HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 403 Blocked by srt: invalid destination host/],
    ['userinfo in an absolute-form target', 'GET http://allowed.test@evil.test/ HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 userinfo in the request target is not accepted/],
    ['userinfo hiding the real host', 'GET http://evil.test:80@allowed.test/ HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 userinfo/],
    ['an origin-form request (Host must not route)', `GET / HTTP/1.1\r\nHost: 127.0.0.1:${0}\r\n\r\n`, /^HTTP\/1\.1 400 not a proxy request/],
    ['https:// in absolute form', 'GET https://allowed.test/ HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 https:\/\/ must be requested with CONNECT/],
    ['an ftp:// target', 'GET ftp://allowed.test/ HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 unsupported scheme ftp:/],
    ['a percent-encoded host', 'GET http://%65vil.test/ HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 403 Blocked by srt: invalid destination host/],
    ['a denied host in absolute form', 'GET http://EVIL.test./ HTTP/1.1\r\nHost: allowed.test\r\n\r\n', /^HTTP\/1\.1 403 Blocked by srt: denied by network.deniedDomains \(evil.test\)/],
  ])('refuses %s, dials nothing and keeps serving', async (_name, data, expected) => {
    const before = dialed;
    const r = await exchange(proxy.httpPort!, data, { until: /\r\n\r\n[^]*\n/ });
    expect(r).toMatch(expected);
    expect(dialed).toBe(before);
    await ok();
  });

  it('routes by the absolute-form authority and rewrites Host; a lying Host header changes nothing', async () => {
    const r = await exchange(proxy.httpPort!, `GET http://127.0.0.1:${A}/h HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n`);
    expect(r).toMatch(/^HTTP\/1\.1 200 /);
    expect(r).toContain(`hello GET /h host=127.0.0.1:${A}`);
  });

  it('normalises IP spellings to the address they mean (the decision and the dial agree)', async () => {
    for (const host of ['2130706433', '0x7f.1', '127.1', '[::ffff:127.0.0.1]']) {
      const r = await exchange(proxy.httpPort!, `GET http://${host}:${A}/n HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(r, host).toContain(`hello GET /n host=127.0.0.1:${A}`);
    }
    const r = await exchange(proxy.httpPort!, `GET http://0x7f.1:${A + 1}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(r).toMatch(/^HTTP\/1\.1 403 Blocked by srt: not in network.allowedDomains/);
  });

  it('cuts off a slowloris client after the header timeout while serving others', async () => {
    const s = connect(proxy.httpPort!, '127.0.0.1');
    s.on('error', () => undefined);
    let got = '';
    s.on('data', (c) => (got += c.toString()));
    const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
    s.write(`GET http://127.0.0.1:${A}/ HTTP/1.1\r\nX-Slow: `);
    const drip = setInterval(() => s.writable && s.write('a'), 100);
    await ok();
    await closed; // a proxy that never cuts it off fails by the test's timeout
    clearInterval(drip);
    expect(got).toMatch(/^HTTP\/1\.1 408 request head not received in time/);
  });

  it('answers 502 with a reason when the upstream refuses the connection', async () => {
    const p = await startProxy({
      network: network({ allow: ['127.0.0.1:1'] }),
      listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
      upstreamEnv: {},
    });
    try {
      const r = await exchange(p.httpPort!, 'GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n\r\n', { until: /ECONNREFUSED[^]*\n/ });
      expect(r).toMatch(/^HTTP\/1\.1 502 upstream 127\.0\.0\.1:1: ECONNREFUSED/);
      const c = await exchange(p.httpPort!, 'CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n');
      expect(c).toMatch(/^HTTP\/1\.1 502 upstream 127\.0\.0\.1:1: ECONNREFUSED/);
      expect(c).toMatch(/X-Proxy-Error: upstream-error/);
    } finally {
      await p.close();
    }
  });
});

describe('HTTP proxy: protocol features', () => {
  it('answers pipelined requests in order on one connection', async () => {
    const req = (n: number) => `GET http://127.0.0.1:${A}/p${n} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const r = await exchange(proxy.httpPort!, req(1) + req(2) + req(3), { until: /\/p3 host/ });
    const order = [...r.matchAll(/hello GET (\/p\d)/g)].map((m) => m[1]);
    expect(order).toEqual(['/p1', '/p2', '/p3']);
  });

  it('reaches an IPv6 loopback entry through CONNECT', async () => {
    const r = await exchange(proxy.httpPort!, `CONNECT [::1]:${V6} HTTP/1.1\r\n\r\nGET /six HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, {
      until: /v6 \/six/,
    });
    expect(r).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 /);
  });

  it('carries a websocket through CONNECT and through a ws:// upgrade', async () => {
    const viaConnect = await exchange(
      proxy.httpPort!,
      `CONNECT 127.0.0.1:${A} HTTP/1.1\r\n\r\nGET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframe-1`,
      { until: /frame-1/ },
    );
    expect(viaConnect).toMatch(/101 Switching Protocols[^]*frame-1$/);
    const viaUpgrade = await exchange(
      proxy.httpPort!,
      `GET http://127.0.0.1:${A}/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframe-2`,
      { until: /frame-2/ },
    );
    expect(viaUpgrade).toMatch(/^HTTP\/1\.1 101 Switching Protocols[^]*frame-2$/);
    const refused = await exchange(proxy.httpPort!, 'GET http://evil.test/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    expect(refused).toMatch(/^HTTP\/1\.1 403 Blocked by srt/);
  });

  it('does not pass an upgrade to h2c on: the request gets its HTTP/1.1 answer (with a body: 400)', async () => {
    const h2c = 'Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nConnection: Upgrade, HTTP2-Settings\r\n';
    const r = await exchange(proxy.httpPort!, `GET http://127.0.0.1:${A}/h2c HTTP/1.1\r\nHost: x\r\n${h2c}\r\n`, { until: /hello GET \/h2c/ });
    expect(r).toMatch(/^HTTP\/1\.1 200 /);
    expect(r).not.toMatch(/101 Switching/);
    const withBody = await exchange(proxy.httpPort!, `POST http://127.0.0.1:${A}/h2c HTTP/1.1\r\nHost: x\r\n${h2c}Content-Length: 4\r\n\r\nbody`);
    expect(withBody).toMatch(/^HTTP\/1\.1 400 an upgrade to HTTP\/2 \(h2c\) is not passed on/);
  });

  it('passes a half-close through a tunnel', async () => {
    const s = connect(proxy.httpPort!, '127.0.0.1');
    let got = '';
    s.on('data', (c) => (got += c.toString()));
    const closed = new Promise((r) => s.on('close', r));
    s.write(`CONNECT 127.0.0.1:${E} HTTP/1.1\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 100));
    s.end('last words');
    await closed;
    expect(got).toBe('HTTP/1.1 200 Connection Established\r\n\r\nlast words');
  });

  it('applies backpressure to a slow reader and frees the upstream when the client hangs up', async () => {
    const s = connect(proxy.httpPort!, '127.0.0.1');
    s.on('error', () => undefined);
    s.write(`GET http://127.0.0.1:${A}/stream HTTP/1.1\r\nHost: x\r\n\r\n`);
    s.pause(); // never read
    await new Promise((r) => setTimeout(r, 800));
    const sent = streamedBytes;
    await new Promise((r) => setTimeout(r, 400));
    // The origin is blocked: only socket buffers (kernel + one high-water mark per hop) are in flight.
    expect(streamedBytes - sent).toBeLessThan(1024 * 1024);
    expect(streamedBytes).toBeLessThan(64 * 1024 * 1024);
    s.destroy();
    await streamClosed; // the origin saw its connection go away
  });
});

describe('SOCKS5', () => {
  function socks(request: Buffer, extra = Buffer.alloc(0)): Promise<Buffer> {
    return new Promise((resolve) => {
      const s = connect(proxy.socksPort!, '127.0.0.1');
      let buf = Buffer.alloc(0);
      let stage = 0;
      s.on('data', (c) => {
        buf = Buffer.concat([buf, c]);
        if (stage === 0 && buf.length >= 2) {
          stage = 1;
          buf = buf.subarray(2);
          s.write(request);
        }
        if (stage === 1 && buf.length >= 10) {
          stage = 2;
          if (buf[1] === 0 && extra.length) s.write(extra);
          else if (!extra.length) {
            s.destroy();
            resolve(buf);
          }
        }
        if (stage === 2 && buf.length > 10) {
          s.destroy();
          resolve(buf);
        }
      });
      s.on('close', () => resolve(buf));
      s.on('error', () => undefined);
      s.write(Buffer.from([5, 1, 0]));
    });
  }
  const port = (p: number) => Buffer.from([p >> 8, p & 255]);
  const domain = (name: string, p: number) => Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), Buffer.from(name), port(p)]);
  const get = Buffer.from('GET /s HTTP/1.0\r\n\r\n');

  it('connects by IPv4 address, IPv6 address and domain name', async () => {
    const v4 = await socks(Buffer.concat([Buffer.from([5, 1, 0, 1, 127, 0, 0, 1]), port(A)]), get);
    expect(v4[1]).toBe(0);
    expect(v4.subarray(10).toString()).toMatch(/^HTTP\/1\.1 200/);
    const v6 = await socks(Buffer.concat([Buffer.from([5, 1, 0, 4, ...new Array(15).fill(0), 1]), port(V6)]), get);
    expect(v6[1]).toBe(0);
    expect(v6.subarray(10).toString()).toContain('v6 /s');
    const name = await socks(domain('allowed.test', A), get);
    expect(name[1]).toBe(0);
    expect(name.subarray(10).toString()).toContain('hello GET /s');
  });

  it('replies 0x02 to refused destinations, whatever the spelling', async () => {
    expect((await socks(domain('evil.test', 80)))[1]).toBe(2);
    expect((await socks(domain('other.test', A)))[1]).toBe(2);
    expect((await socks(domain('allowed.test@evil.test', 80)))[1]).toBe(2);
    expect((await socks(domain('', 80)))[1]).toBe(2);
    expect((await socks(Buffer.concat([Buffer.from([5, 1, 0, 1, 169, 254, 169, 254]), port(80)])))[1]).toBe(2);
    expect((await socks(Buffer.concat([Buffer.from([5, 1, 0, 1, 127, 0, 0, 1]), port(0)])))[1]).toBe(2);
  });

  it('does not support BIND or UDP ASSOCIATE', async () => {
    const udp = await socks(Buffer.concat([Buffer.from([5, 3, 0, 1, 127, 0, 0, 1]), port(A)]));
    expect(udp[1]).toBe(7);
  });

  it('drops a client that never finishes the handshake', async () => {
    const s = connect(proxy.socksPort!, '127.0.0.1');
    s.on('error', () => undefined);
    s.write(Buffer.from([5]));
    await new Promise((r) => s.on('close', r)); // never closed: fails by the test's timeout
  });
});
