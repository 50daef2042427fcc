// startProxy as a whole: Unix-socket listeners, load with keep-alive clients and fd accounting,
// setNetwork, close(), chaining through a corporate proxy, and relaying to the user's own proxy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, statSync, existsSync } from 'node:fs';
import http from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { startProxy } from '../../src/proxy/server.js';
import { tempDir } from './helpers.js';
import { closeServer, listenOn, network, openFds } from './proxy-fixtures.js';

let A = 0;
let origin: http.Server;
const tmp = tempDir('srt-proxy-server-');

beforeAll(async () => {
  origin = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    res.end(`hello ${req.url} host=${req.headers.host}\n`);
  });
  A = await listenOn(origin);
});
afterAll(async () => {
  await closeServer(origin);
  tmp.cleanup();
});

function tcp(port: number) {
  return { host: '127.0.0.1', port } as const;
}

/** Send one request over a Unix socket or TCP port and return the raw response (what came within
 *  30 s: every caller waits for an answer, which a loaded machine may delay by seconds). */
function exchange(to: { path: string } | { port: number }, data: string, until = /\n$/): Promise<string> {
  return new Promise((resolve) => {
    const s: Socket = 'path' in to ? connect(to.path) : connect(to.port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => s.destroy(), 30_000);
    s.on('data', (c) => {
      out += c.toString();
      if (until.test(out)) s.destroy();
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on('error', () => undefined);
    s.write(data);
  });
}

describe('startProxy', () => {
  it('listens on Unix sockets with mode 0600 and removes them on close', async () => {
    const dir = join(tmp.path, 'sock');
    mkdirSync(dir, { mode: 0o700 });
    const p = await startProxy({
      network: network({ allow: [`127.0.0.1:${A}`] }),
      listen: { http: { socketPath: join(dir, 'http.sock') }, socks: { socketPath: join(dir, 'socks.sock') } },
      upstreamEnv: {},
    });
    expect(p.httpAddress).toBe(join(dir, 'http.sock'));
    expect(statSync(p.httpAddress).mode & 0o777).toBe(0o600);
    expect(statSync(p.socksAddress).mode & 0o777).toBe(0o600);
    const r = await exchange({ path: p.httpAddress }, `GET http://127.0.0.1:${A}/unix HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(r).toContain(`hello /unix host=127.0.0.1:${A}`);
    await p.close();
    expect(existsSync(p.httpAddress)).toBe(false);
    expect(existsSync(p.socksAddress)).toBe(false);
    await p.close(); // idempotent
  });

  it('refuses to take over an existing socket path and leaves it in place', async () => {
    const dir = join(tmp.path, 'busy');
    mkdirSync(dir, { mode: 0o700 });
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(join(dir, 'http.sock'), r));
    await expect(
      startProxy({
        network: network({}),
        listen: { http: { socketPath: join(dir, 'http.sock') }, socks: { socketPath: join(dir, 'socks.sock') } },
        upstreamEnv: {},
      }),
    ).rejects.toThrow(/EADDRINUSE/);
    expect(existsSync(join(dir, 'http.sock'))).toBe(true);
    await new Promise((r) => busy.close(r));
  });

  it('serves 200 concurrent keep-alive clients × 50 requests without errors and without fd growth', async () => {
    const p = await startProxy({ network: network({ allow: [`127.0.0.1:${A}`] }), listen: { http: tcp(0), socks: tcp(0) }, upstreamEnv: {} });
    const baseline = openFds();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
    // A loaded machine may take minutes; whatever happens, nothing of this test outlives it to
    // starve the next ones.
    let stopped = false;
    const stop = async () => { if (!stopped) { stopped = true; agent.destroy(); await p.close(); } };
    try {
      let okCount = 0;
      const client = async (c: number) => {
        for (let i = 0; i < 50; i++) {
          const body = await new Promise<string>((resolve, reject) => {
            const req = http.request(
              { host: '127.0.0.1', port: p.httpPort, path: `http://127.0.0.1:${A}/c${c}/r${i}`, agent, headers: { Host: `127.0.0.1:${A}` } },
              (res) => {
                let b = '';
                res.setEncoding('utf8');
                res.on('data', (d) => (b += d));
                res.on('end', () => (res.statusCode === 200 ? resolve(b) : reject(new Error(`status ${res.statusCode}`))));
              },
            );
            req.on('error', reject);
            req.end();
          });
          if (body === `hello /c${c}/r${i} host=127.0.0.1:${A}\n`) okCount++;
        }
      };
      await Promise.all(Array.from({ length: 200 }, (_, c) => client(c)));
      expect(okCount).toBe(200 * 50);
      expect(openFds()).toBeGreaterThan(baseline + 200); // the clients' and the proxy's sockets
      agent.destroy();
      let now = openFds();
      for (const end = Date.now() + 60_000; now > baseline && Date.now() < end;) {
        await new Promise((r) => setTimeout(r, 50));
        now = openFds();
      }
      expect(now).toBeLessThanOrEqual(baseline);
    } finally {
      await stop();
    }
  }, 300_000);

  it('setNetwork applies to the next connection; close() frees open tunnels', async () => {
    const p = await startProxy({ network: network({ allow: [`127.0.0.1:${A}`] }), listen: { http: tcp(0), socks: tcp(0) }, upstreamEnv: {} });
    const tunnel = connect(p.httpPort!, '127.0.0.1');
    const tunnelClosed = new Promise((r) => tunnel.on('close', r));
    tunnel.on('error', () => undefined);
    await new Promise<void>((resolve) => {
      tunnel.once('data', () => resolve());
      tunnel.write(`CONNECT 127.0.0.1:${A} HTTP/1.1\r\n\r\n`);
    });
    p.setNetwork(network({}));
    const r = await exchange({ port: p.httpPort! }, `GET http://127.0.0.1:${A}/after HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(r).toMatch(/^HTTP\/1\.1 403 Blocked by srt: not in network\.allowedDomains/);
    expect(p.violations()).toEqual([{ host: '127.0.0.1', port: A, reason: 'not in network.allowedDomains' }]);
    await p.close();
    await tunnelClosed; // the tunnel opened before was freed by close()
  });

  it('chains allowed connections through a corporate proxy from its environment, by the address srt checked, honouring NO_PROXY', async () => {
    const seen: string[] = [];
    const corp = http.createServer();
    corp.on('connect', (req, client: Socket) => {
      seen.push(`${req.url} auth=${req.headers['proxy-authorization'] ?? ''}`);
      // The test's corporate proxy maps every target to the loopback origin.
      const up = connect(A, '127.0.0.1', () => {
        client.write('HTTP/1.1 200 OK\r\n\r\n');
        up.pipe(client).pipe(up);
      });
      up.on('error', () => client.destroy());
    });
    const corpPort = await listenOn(corp);
    const p = await startProxy({
      network: network({ allow: ['far.example', 'near.example', 'blocked.example', 'mixed.example', 'split.example'] }),
      listen: { http: tcp(0), socks: tcp(0) },
      resolver: async (h) => {
        if (h === 'far.example') return ['192.0.2.10', '2001:db8::10'];
        if (h === 'blocked.example') return ['169.254.169.254'];
        // Only the address that passes is asked for.
        if (h === 'mixed.example') return ['169.254.169.254', '192.0.2.11'];
        if (h === 'near.example') return ['127.0.0.1'];
        throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
      },
      upstreamEnv: { HTTPS_PROXY: `http://u%40corp:p%3Ass@127.0.0.1:${corpPort}`, NO_PROXY: 'near.example' },
    });
    try {
      const r = await exchange({ port: p.httpPort! }, `GET http://far.example:${A}/far HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(r).toContain(`hello /far host=far.example:${A}`);
      expect(seen).toEqual([`192.0.2.10:${A} auth=Basic ${Buffer.from('u@corp:p:ss').toString('base64')}`]);
      const mixed = await exchange({ port: p.httpPort! }, `GET http://mixed.example:${A}/m HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(mixed).toContain(`hello /m host=mixed.example:${A}`);
      expect(seen[1]).toBe(`192.0.2.11:${A} auth=Basic ${Buffer.from('u@corp:p:ss').toString('base64')}`);
      const blocked = await exchange({ port: p.httpPort! }, 'GET http://blocked.example/ HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(blocked).toMatch(/^HTTP\/1\.1 403 Blocked by srt: resolves only to blocked addresses: 169\.254\.169\.254 is a cloud metadata address/);
      // A name srt cannot resolve is never handed to the corporate proxy to resolve.
      const split = await exchange({ port: p.httpPort! }, 'GET http://split.example/ HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(split).toMatch(/^HTTP\/1\.1 403 Blocked by srt: cannot resolve split\.example \(ENOTFOUND\); through the upstream proxy srt connects only to addresses it resolved and checked itself/);
      // NO_PROXY: direct, so the address guard refuses loopback itself (no test exemption here).
      const near = await exchange({ port: p.httpPort! }, `GET http://near.example:${A}/ HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(near).toMatch(/^HTTP\/1\.1 403 Blocked by srt: resolves only to blocked addresses: 127\.0\.0\.1 is a loopback address/);
      expect(seen).toHaveLength(2);
    } finally {
      await p.close();
      await closeServer(corp);
    }
  }, 120_000);

  it('relays to the user own proxy when httpProxyPort/socksProxyPort are set', async () => {
    const own = createServer((s) => s.resume().end('own proxy\n'));
    await new Promise<void>((r) => own.listen(0, '127.0.0.1', r));
    const ownPort = (own.address() as { port: number }).port;
    const p = await startProxy({
      network: { ...network({}), httpProxyPort: ownPort, socksProxyPort: ownPort },
      listen: { http: tcp(0), socks: tcp(0) },
      upstreamEnv: {},
    });
    expect([p.httpMode, p.socksMode]).toEqual(['relay', 'relay']);
    expect(await exchange({ port: p.httpPort! }, 'GET http://anything/ HTTP/1.1\r\n\r\n')).toBe('own proxy\n');
    expect(await exchange({ port: p.socksPort! }, 'x')).toBe('own proxy\n');
    await p.close();
    await new Promise((r) => own.close(r));
  }, 120_000);
});
