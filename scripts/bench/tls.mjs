#!/usr/bin/env node
// TLS termination, against baselines measured in the same run:
//  - the real `srt proxy` (its own process) with network.tlsTerminate, a client in another
//    process, HTTPS / HTTP/2 origins on loopback with a test CA (openssl):
//    first request to a new host (a leaf is minted) vs a warm one (cached leaf), both on fresh
//    connections; 100 new hosts in a row; terminated HTTP/1.1 and HTTP/2 MB/s vs the same bytes
//    through an opaque tunnel (an excludeDomains host); SSE event and WebSocket echo latency
//    through termination; peak RSS of the proxy.
//  - the same bulk transfer with the client inside the real sandbox (terminated vs opaque).
//  - `srt -- /bin/true` with termination configured vs not (the CA is made at start; leaves
//    are minted lazily).
// Needs a build (dist/) and openssl. Usage: node scripts/bench/tls.mjs [bulkMB]
import { execFile, execFileSync, fork, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import tls from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, report, scratch, SRT, testPki, timeCommand, writeBulk } from './lib.mjs';

const BULK_MB = Number(process.argv[2] ?? 200);
const NEW_HOSTS = 100;
const hostIp = (i) => `127.0.1.${i + 1}`;

/** CONNECT through the proxy, then TLS (ALPN `alpn`) to `host:port` trusting `ca`. */
function tunnelTls(proxyPort, host, port, ca, alpn) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: `${host}:${port}`, agent: false });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) return reject(new Error(`CONNECT ${res.statusCode}`));
      const t = tls.connect({ socket, host, ca, ALPNProtocols: alpn }, () => resolve(t));
      t.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** One GET on a fresh terminated connection; resolves with the body length and the time taken. */
async function getOnce(o, host, path, alpn = ['http/1.1']) {
  const t0 = performance.now();
  const socket = await tunnelTls(o.proxyPort, host, o.h1Port, o.ca, alpn);
  const bytes = await new Promise((resolve, reject) => {
    const req = http.request({ createConnection: () => socket, path, headers: { host: `${host}:${o.h1Port}` } }, (res) => {
      let n = 0;
      res.on('data', (c) => (n += c.length));
      res.on('end', () => resolve(n));
    });
    req.on('error', reject);
    req.end();
  });
  socket.destroy();
  return { bytes, ms: performance.now() - t0 };
}

async function h2Bulk(o, host) {
  const t0 = performance.now();
  const socket = await tunnelTls(o.proxyPort, host, o.h2Port, o.ca, ['h2']);
  const session = http2.connect(`https://${host}:${o.h2Port}`, { createConnection: () => socket });
  const bytes = await new Promise((resolve, reject) => {
    const s = session.request({ ':path': `/bulk?mb=${BULK_MB}` });
    let n = 0;
    s.on('data', (c) => (n += c.length));
    s.on('end', () => resolve(n));
    s.on('error', reject);
    s.end();
  });
  session.close();
  return { bytes, ms: performance.now() - t0 };
}

async function client(o) {
  const out = {};
  // Leaves: the first request to a host mints one; later ones (fresh connections) reuse it.
  // Warm up first (JIT, the terminator's first load), then alternate new and known hosts.
  for (let i = 0; i < 20; i++) await getOnce(o, '127.0.0.1', '/small');
  const warm = [];
  const cold = [];
  for (let i = 0; i < NEW_HOSTS; i++) {
    cold.push((await getOnce(o, hostIp(i), '/small')).ms);
    warm.push((await getOnce(o, '127.0.0.1', '/small')).ms);
  }
  out.coldTotalMs = cold.reduce((a, b) => a + b, 0);
  out.warmMs = median(warm);
  out.coldMs = median(cold);
  // Bulk: terminated (127.0.0.1) vs opaque (127.0.0.2 is in excludeDomains).
  const mbps = (r) => r.bytes / 1e6 / (r.ms / 1000);
  for (const [name, host] of [['h1Terminated', '127.0.0.1'], ['h1Opaque', '127.0.0.2']]) {
    const r = await getOnce(o, host, `/bulk?mb=${BULK_MB}`);
    out[name] = r.bytes === BULK_MB * 1e6 ? mbps(r) : NaN;
  }
  for (const [name, host] of [['h2Terminated', '127.0.0.1'], ['h2Opaque', '127.0.0.2']]) {
    const r = await h2Bulk(o, host);
    out[name] = r.bytes === BULK_MB * 1e6 ? mbps(r) : NaN;
  }
  // Server-sent events (one every 50 ms, each stamped with its send time) and WebSocket echoes.
  for (const [name, host] of [['sse', '127.0.0.1'], ['sseOpaque', '127.0.0.2']]) {
    const socket = await tunnelTls(o.proxyPort, host, o.h1Port, o.ca, ['http/1.1']);
    out[name] = await new Promise((resolve) => {
      const lags = [];
      const req = http.request({ createConnection: () => socket, path: '/sse', headers: { host } }, (res) => {
        let buf = '';
        res.on('data', (c) => {
          buf += c;
          for (const m of buf.matchAll(/data: (\d+) (\d+)\n\n/g)) lags[m[1]] ??= Date.now() - Number(m[2]);
        });
        res.on('end', () => resolve({ median: median(lags), max: Math.max(...lags) }));
      });
      req.end();
    });
    socket.destroy();
  }
  for (const [name, host] of [['ws', '127.0.0.1'], ['wsOpaque', '127.0.0.2']]) {
    const socket = await tunnelTls(o.proxyPort, host, o.h1Port, o.ca, ['http/1.1']);
    socket.write(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);
    await new Promise((resolve) => socket.once('data', resolve));
    const rtts = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      socket.write(`frame-${i};`);
      let got = '';
      await new Promise((resolve) => {
        const on = (c) => {
          got += c;
          if (got.includes(`frame-${i};`)) {
            socket.off('data', on);
            resolve();
          }
        };
        socket.on('data', on);
      });
      rtts.push(performance.now() - t);
    }
    out[name] = { median: median(rtts), max: Math.max(...rtts) };
    socket.destroy();
  }
  process.send(out);
  process.exit(0);
}

function vmHwmMb(pid) {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function origins(pki) {
  const h1 = (req, res) => {
    const url = new URL(req.url, 'https://x');
    if (url.pathname === '/bulk') return writeBulk(res, Number(url.searchParams.get('mb')) * 1e6);
    if (url.pathname === '/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = setInterval(() => {
        res.write(`data: ${n} ${Date.now()}\n\n`);
        if (++n === 40) {
          clearInterval(tick);
          res.end();
        }
      }, 50);
      return;
    }
    res.end('ok');
  };
  const make1 = () => {
    const s = https.createServer({ cert: pki.cert, key: pki.key, ALPNProtocols: ['http/1.1'] }, h1);
    s.on('upgrade', (_req, socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      socket.pipe(socket);
    });
    return s;
  };
  const make2 = () => {
    const s = http2.createSecureServer({ cert: pki.cert, key: pki.key });
    s.on('stream', (stream, headers) => {
      const url = new URL(headers[':path'], 'https://x');
      stream.respond({ ':status': 200 });
      writeBulk(stream, Number(url.searchParams.get('mb') ?? 0) * 1e6);
    });
    return s;
  };
  return { make1, make2 };
}

function listen(server, port, host) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server.address().port));
  });
}

async function startSrtProxy(dir, settingsPath) {
  const env = { PATH: process.env.PATH, HOME: dir, LANG: 'C.UTF-8' };
  const child = spawn(process.execPath, [SRT, 'proxy', '--settings', settingsPath], { cwd: dir, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const got = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
      const p = /HTTP proxy:\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      const ca = /TLS CA:\s+(\S+)/.exec(out);
      if (p && ca) resolve({ port: Number(p[1]), ca: ca[1] });
    });
    child.on('exit', (code) => reject(new Error(`srt proxy exited ${code}`)));
  });
  child.stdout.resume();
  return { child, ...got };
}

async function main() {
  const s = scratch();
  const ips = ['127.0.0.1', '127.0.0.2', ...Array.from({ length: NEW_HOSTS }, (_, i) => hostIp(i))];
  const pki = testPki(s.dir, ips);
  const { make1, make2 } = origins(pki);
  const h1Port = await listen(make1(), 0, '127.0.0.1');
  const h2Port = await listen(make2(), 0, '127.0.0.1');
  for (const ip of ips.slice(1)) await listen(make1(), h1Port, ip);
  await listen(make2(), h2Port, '127.0.0.2');

  const settingsPath = join(s.dir, 'tls.json');
  const tlsTerminate = { extraCaCertPaths: [pki.ca], excludeDomains: ['127.0.0.2'] };
  writeFileSync(settingsPath, JSON.stringify({ network: { allowedDomains: ips, tlsTerminate } }));
  const proxy = await startSrtProxy(s.dir, settingsPath);
  const exited = new Promise((r) => proxy.child.once('exit', r));
  const rssIdle = vmHwmMb(proxy.child.pid);
  let r;
  try {
    const ca = [readFileSync(proxy.ca), readFileSync(pki.ca)];
    r = await new Promise((resolve, reject) => {
      const c = fork(fileURLToPath(import.meta.url), [String(BULK_MB)], {
        env: { ...process.env, SRT_BENCH_TLS_CLIENT: JSON.stringify({ proxyPort: proxy.port, h1Port, h2Port, ca: ca.map(String) }) },
      });
      c.on('message', resolve);
      c.on('exit', (code) => code !== 0 && reject(new Error(`client exited ${code}`)));
    });
    r.rss = vmHwmMb(proxy.child.pid);
  } finally {
    proxy.child.kill('SIGTERM');
    await exited;
  }

  // The client inside the real sandbox: the same bulk download, terminated vs opaque.
  const inside = join(s.dir, 'inside.cjs');
  // 127.0.0.1 is in the sandbox's NO_PROXY: inside, the origins are reached as their 127.0.1.x twins.
  writeFileSync(inside, [
    "const https = require('https');",
    'const get = (url) => new Promise((resolve) => { const t0 = Date.now(); https.get(url, (res) => { let n = 0; res.on("data", (c) => (n += c.length)); res.on("end", () => resolve(n / 1e6 / ((Date.now() - t0) / 1000))); }); });',
    `(async () => { const terminated = await get('https://${hostIp(0)}:${h1Port}/bulk?mb=${BULK_MB}'); const opaque = await get('https://127.0.0.2:${h1Port}/bulk?mb=${BULK_MB}'); console.log(JSON.stringify({ terminated, opaque })); })();`,
  ].join('\n'));
  // Asynchronously: the origins live in this process.
  const { stdout: insideOut } = await promisify(execFile)(process.execPath, [SRT, ...(process.env.SRT_BENCH_DEBUG ? ['--debug'] : []), '--settings', settingsPath, '--', 'node', inside], {
    cwd: s.dir, env: { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8', NODE_EXTRA_CA_CERTS: pki.ca }, encoding: 'utf8',
  });
  const sandboxed = JSON.parse(insideOut.trim().split('\n').pop());

  // Startup: the same /bin/true with and without termination configured, interleaved.
  const plain = join(s.dir, 'plain.json');
  writeFileSync(plain, JSON.stringify({ network: { allowedDomains: ips } }));
  const opts = { cwd: s.dir, env: { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8' }, runs: 15, warmup: 2 };
  const off = [];
  const on = [];
  for (let round = 0; round < 3; round++) {
    off.push(timeCommand([process.execPath, SRT, '--settings', plain, '--', '/bin/true'], opts));
    on.push(timeCommand([process.execPath, SRT, '--settings', settingsPath, '--', '/bin/true'], opts));
  }
  const mid = (xs) => [...xs].sort((a, b) => a - b)[1];
  // CPU time of the whole run (srt and every child), which other load on the machine disturbs less.
  const cpu = (settings) => {
    const out = execFileSync('bash', ['-c', `for i in $(seq 20); do "$0" "$1" --settings "$2" -- /bin/true; done; times`, process.execPath, SRT, settings], { ...opts, encoding: 'utf8' });
    const [u, sys] = out.trim().split('\n').pop().split(' ').map((t) => { const [m, sec] = t.replace(/s$/, '').split('m'); return Number(m) * 60 + Number(sec); });
    return ((u + sys) * 1000) / 20;
  };
  const cpuOff = median([cpu(plain), cpu(plain), cpu(plain)]);
  const cpuOn = median([cpu(settingsPath), cpu(settingsPath), cpu(settingsPath)]);

  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
  report([
    ['warm request, fresh connection (median ms)', f(r.warmMs)],
    ['first request to a new host: leaf minted (median ms)', f(r.coldMs)],
    ['new host / warm', f(r.coldMs / r.warmMs, 2)],
    [`${NEW_HOSTS} new hosts (mean ms per host, all minted)`, f(r.coldTotalMs / NEW_HOSTS)],
    [`terminated HTTP/1.1 (MB/s, ${BULK_MB} MB)`, f(r.h1Terminated, 0)],
    ['opaque tunnel, same bytes (MB/s)', f(r.h1Opaque, 0)],
    ['terminated / opaque HTTP/1.1 (target >= 0.5)', f(r.h1Terminated / r.h1Opaque, 2)],
    [`terminated HTTP/2 (MB/s, ${BULK_MB} MB)`, f(r.h2Terminated, 0)],
    ['opaque tunnel, HTTP/2 (MB/s)', f(r.h2Opaque, 0)],
    ['terminated / opaque HTTP/2 (target >= 0.5)', f(r.h2Terminated / r.h2Opaque, 2)],
    ['inside the sandbox: terminated HTTP/1.1 (MB/s)', f(sandboxed.terminated, 0)],
    ['inside the sandbox: opaque tunnel (MB/s)', f(sandboxed.opaque, 0)],
    ['inside the sandbox: terminated / opaque', f(sandboxed.terminated / sandboxed.opaque, 2)],
    ['SSE event lag through termination (median / max ms)', `${f(r.sse.median)} / ${f(r.sse.max)}`],
    ['SSE event lag, opaque tunnel (median / max ms)', `${f(r.sseOpaque.median)} / ${f(r.sseOpaque.max)}`],
    ['WebSocket echo through termination (median / max ms)', `${f(r.ws.median, 2)} / ${f(r.ws.max)}`],
    ['WebSocket echo, opaque tunnel (median / max ms)', `${f(r.wsOpaque.median, 2)} / ${f(r.wsOpaque.max)}`],
    ['srt proxy RSS at start / peak (MB)', `${f(rssIdle)} / ${f(r.rss)}`],
    ['srt -- /bin/true, no termination (median ms)', f(mid(off))],
    ['srt -- /bin/true, termination configured (median ms)', f(mid(on))],
    ['termination configured / not (target <= 1.1)', f(mid(on) / mid(off), 2)],
    ['srt -- /bin/true CPU time, no termination / configured (ms)', `${f(cpuOff)} / ${f(cpuOn)}`],
    ['CPU time, termination configured / not', f(cpuOn / cpuOff, 2)],
  ]);
  s.cleanup();
  process.exit(0);
}

if (process.env.SRT_BENCH_TLS_CLIENT) await client(JSON.parse(process.env.SRT_BENCH_TLS_CLIENT));
else await main();
