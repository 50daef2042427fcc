#!/usr/bin/env node
// srt's filtering proxy on loopback, run as the real `srt proxy` in its own process:
//  - requests/s direct vs through the proxy (absolute-form, keep-alive) vs through CONNECT tunnels
//  - bulk throughput (MB/s) of one stream through a CONNECT tunnel vs direct
//  - peak RSS (VmHWM) of the proxy process after the request load and after the bulk stream
// Needs a build (dist/). Usage: node scripts/bench/proxy.mjs [requests] [connections] [bulkMB]
// SRT_BENCH_PROXY_NODE_ARGS (space-separated) is passed to the proxy's node, e.g. `--cpu-prof`.
import http from 'node:http';
import net from 'node:net';
import { fork, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { report, scratch, SRT, writeBulk } from './lib.mjs';

const REQUESTS = Number(process.argv[2] ?? 20000);
const CONNECTIONS = Number(process.argv[3] ?? 50);
const BULK_MB = Number(process.argv[4] ?? 200);

if (process.env.SRT_BENCH_CLIENT) await client(JSON.parse(process.env.SRT_BENCH_CLIENT));
else await main();

/** Load generator (child process); reports its figure over IPC. */
async function client({ mode, target, proxyPort }) {
  const [host, port] = [target.split(':')[0], Number(target.split(':')[1])];
  const tunnel = (cb) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: target, agent: false });
    req.on('connect', (res, socket, head) => (res.statusCode === 200 ? cb(null, socket, head) : cb(new Error(`CONNECT ${res.statusCode}`))));
    req.on('error', cb);
    req.end();
  };
  if (mode === 'bulk-direct' || mode === 'bulk-connect') {
    // One stream of BULK_MB from the origin's bulk server, read to the end.
    let bytes = 0;
    const t0 = process.hrtime.bigint();
    const socket = await new Promise((resolve, reject) => {
      if (mode === 'bulk-direct') {
        const s = net.connect(port, host, () => resolve(s));
        s.on('error', reject);
      } else
        tunnel((e, s, head) => {
          if (e) return reject(e);
          bytes += head.length; // bytes that arrived with the CONNECT reply
          resolve(s);
        });
    });
    socket.on('data', (b) => (bytes += b.length));
    await new Promise((resolve, reject) => {
      socket.on('end', resolve);
      socket.on('error', reject);
    });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    socket.destroy();
    process.send({ value: bytes / 1e6 / s, errors: bytes === BULK_MB * 1e6 ? 0 : 1 });
    process.exit(0);
  }
  // CONNECTIONS keep-alive sockets, REQUESTS in total.
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  if (mode === 'connect') agent.createConnection = (_o, cb) => tunnel(cb); // plain HTTP inside each tunnel
  let next = 0;
  let errors = 0;
  let total = Math.ceil(REQUESTS / 5); // warm-up round first (JIT, connections), not measured
  const opts = mode === 'proxy' ? { host: '127.0.0.1', port: proxyPort, path: `http://${target}/`, agent } : { host, port, path: '/', agent };
  const one = () =>
    new Promise((resolve) => {
      const req = http.get(opts, (res) => {
        if (res.statusCode !== 200) errors++;
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
    });
  const worker = async () => {
    while (next++ < total) await one();
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  [next, errors, total] = [0, 0, REQUESTS];
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  agent.destroy();
  process.send({ value: REQUESTS / s, errors });
  process.exit(0);
}

function vmHwmMb(pid) {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** `srt proxy` allowing exactly the two origin ports, in a scratch HOME/cwd (no user settings, no chaining). */
async function startSrtProxy(dir, ports) {
  const env = { PATH: process.env.PATH, HOME: dir, LANG: 'C.UTF-8' };
  const nodeArgs = (process.env.SRT_BENCH_PROXY_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const args = [...nodeArgs, SRT, 'proxy', '--http-port', '0', '--socks-port', '0', ...ports.flatMap((p) => ['--allow-domain', `127.0.0.1:${p}`])];
  const child = spawn(process.execPath, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
      const m = /HTTP proxy:\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`srt proxy exited ${code}`)));
  });
  child.stdout.resume();
  return { child, port };
}

async function main() {
  const s = scratch();
  const origin = http.createServer((_req, res) => res.end('ok'));
  await new Promise((r) => origin.listen(0, '127.0.0.1', r));
  const bulk = net.createServer((socket) => {
    socket.on('error', () => socket.destroy());
    writeBulk(socket, BULK_MB * 1e6);
  });
  await new Promise((r) => bulk.listen(0, '127.0.0.1', r));
  const target = `127.0.0.1:${origin.address().port}`;
  const bulkTarget = `127.0.0.1:${bulk.address().port}`;
  const proxy = await startSrtProxy(s.dir, [origin.address().port, bulk.address().port]);
  const exited = new Promise((r) => proxy.child.once('exit', r));

  const run = (mode, t) =>
    new Promise((resolve, reject) => {
      const child = fork(fileURLToPath(import.meta.url), [String(REQUESTS), String(CONNECTIONS), String(BULK_MB)], {
        env: { ...process.env, SRT_BENCH_CLIENT: JSON.stringify({ mode, target: t, proxyPort: proxy.port }) },
      });
      child.on('message', resolve);
      child.on('error', reject);
      child.on('exit', (code) => code !== 0 && reject(new Error(`${mode} client exited ${code}`)));
    });

  const r = {};
  try {
    for (const mode of ['direct', 'proxy', 'connect']) r[mode] = await run(mode, target);
    const rssRequests = vmHwmMb(proxy.child.pid);
    for (const mode of ['bulk-direct', 'bulk-connect']) r[mode] = await run(mode, bulkTarget);
    const rssBulk = vmHwmMb(proxy.child.pid);
    const errs = (m) => (r[m].errors ? ` (${r[m].errors} errors)` : '');
    report([
      [`direct (req/s, ${REQUESTS} req, ${CONNECTIONS} keep-alive conns)`, `${Math.round(r.direct.value)}${errs('direct')}`],
      ['via proxy, absolute-form (req/s)', `${Math.round(r.proxy.value)}${errs('proxy')}`],
      ['via CONNECT tunnels (req/s)', `${Math.round(r.connect.value)}${errs('connect')}`],
      ['absolute-form / direct (target >= 0.5)', (r.proxy.value / r.direct.value).toFixed(2)],
      ['CONNECT / direct', (r.connect.value / r.direct.value).toFixed(2)],
      [`bulk direct (MB/s, ${BULK_MB} MB)`, `${Math.round(r['bulk-direct'].value)}${errs('bulk-direct')}`],
      ['bulk via CONNECT (MB/s)', `${Math.round(r['bulk-connect'].value)}${errs('bulk-connect')}`],
      ['bulk CONNECT / direct (target >= 0.3)', (r['bulk-connect'].value / r['bulk-direct'].value).toFixed(2)],
      ['proxy peak RSS after request load (MB, target <= 60)', rssRequests.toFixed(1)],
      ['proxy peak RSS after bulk stream (MB)', rssBulk.toFixed(1)],
    ]);
  } finally {
    proxy.child.kill('SIGTERM');
    await exited;
    origin.close();
    bulk.close();
    s.cleanup();
  }
}
