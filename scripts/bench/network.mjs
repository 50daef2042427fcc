#!/usr/bin/env node
// The network path as a user gets it: the client runs INSIDE `srt` (bwrap, srt-init,
// relays, proxy), each figure against the same client directly on the host in the same run:
//  - keep-alive req/s through the HTTP proxy (absolute-form), CONNECTIONS concurrent
//  - bulk MB/s of one stream through a CONNECT tunnel, through SOCKS5, and of one plain-HTTP GET
//    through the HTTP proxy (absolute-form; srt's request/response pipeline sees every byte)
//  - bulk MB/s of one stream through a forwarded port (allowedDomains `127.0.0.1:PORT`: the client
//    connects to 127.0.0.1:PORT inside, plain TCP)
//  - peak RSS of srt's own process and of its process tree (srt, bwrap, helper, relays; the
//    client excluded), sampled while the req/s load runs
//  - CPU (user + system, /proc/PID/stat) of srt itself and of its process tree without the
//    client (the relay, splicers srt started and reaped) while each figure is measured: per
//    request and per MB, the figures that hold when machine load makes the rates noisy
// Usage: node scripts/bench/network.mjs [--vs LIST] [--requests N] [--connections N] [--bulk-mb N] [--rounds N]
//   [--only proxy,connect,socks,http,forward] (a subset of the figures, e.g. `--only proxy` for
//   keep-alive req/s, CPU per request and peak RSS alone)
// With --vs (lib.mjs peersFromArgs), the same figures for the reference tool or another
// srt-compatible CLI (e.g. a build of an older commit), interleaved round by round so machine
// load hits all alike; Codex has no network inside its sandbox and is left out here.
import http from 'node:http';
import net from 'node:net';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, peersFromArgs, report, scratch, SRT, writeBulk } from './lib.mjs';

const SELF = fileURLToPath(import.meta.url);
let clockTicks; // CLK_TCK, read once when first needed

if (process.env.SRT_BENCH_CLIENT) await client(JSON.parse(process.env.SRT_BENCH_CLIENT));
else await main();

/** The proxy the sandbox gives the command (its HTTP_PROXY), with the credentials some CLIs put in it. */
function proxyFromEnv() {
  const raw = process.env.HTTP_PROXY || process.env.http_proxy || process.env.HTTPS_PROXY;
  if (!raw) return { proxyHost: '127.0.0.1', proxyPort: 3128, auth: undefined };
  const u = new URL(raw);
  const auth = u.username ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}` : undefined;
  return { proxyHost: u.hostname.replace(/^\[|\]$/g, ''), proxyPort: Number(u.port || 80), auth };
}

/** The load generator; prints one JSON line `{ value, errors }`. */
async function client({ mode, host, port, socksPort, requests, connections, bulkBytes }) {
  const { proxyHost, proxyPort, auth } = proxyFromEnv();
  const proxyHeaders = auth ? { 'Proxy-Authorization': auth } : {};
  const done = (value, errors) => {
    process.stdout.write(`${JSON.stringify({ value, errors })}\n`);
    process.exit(0);
  };
  if (mode === 'bulk-http' || mode === 'bulk-http-direct') {
    // One GET of the origin's big body: through the HTTP proxy (absolute-form), or straight.
    process.stderr.write('measuring\n');
    const t0 = process.hrtime.bigint();
    let bytes = 0;
    await new Promise((resolve, reject) => {
      const o = mode === 'bulk-http' ? { host: proxyHost, port: proxyPort, path: `http://${host}:${port}/bulk`, headers: proxyHeaders } : { host, port, path: '/bulk' };
      const req = http.get({ ...o, agent: false }, (res) => {
        res.on('data', (b) => (bytes += b.length));
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    process.stderr.write('measured\n');
    return done(bytes / 1e6 / s, bytes === bulkBytes ? 0 : 1);
  }
  if (mode === 'bulk-direct' || mode === 'bulk-connect' || mode === 'bulk-forward' || mode === 'bulk-socks') {
    let bytes = 0;
    process.stderr.write('measuring\n');
    const t0 = process.hrtime.bigint();
    const socket = await new Promise((resolve, reject) => {
      if (mode === 'bulk-socks') {
        // SOCKS5, no authentication, CONNECT to an IPv4 address (RFC 1928).
        const s = net.connect(socksPort, '127.0.0.1', () => s.write(Buffer.from([5, 1, 0])));
        s.on('error', reject);
        let got = Buffer.alloc(0);
        const onData = (b) => {
          got = Buffer.concat([got, b]);
          if (got.length >= 2 && got[0] === 5 && got.length < 12 && !s.sentRequest) {
            if (got[1] !== 0) return reject(new Error('SOCKS method refused'));
            s.sentRequest = true;
            got = got.subarray(2);
            s.write(Buffer.from([5, 1, 0, 1, ...host.split('.').map(Number), port >> 8, port & 255]));
          }
          if (s.sentRequest && got.length >= 10) {
            if (got[1] !== 0) return reject(new Error(`SOCKS reply ${got[1]}`));
            s.off('data', onData);
            bytes += got.length - 10; // stream bytes that came with the reply
            resolve(s);
          }
        };
        s.on('data', onData);
        return;
      }
      if (mode !== 'bulk-connect') {
        const s = net.connect(port, host, () => resolve(s));
        s.on('error', reject);
        return;
      }
      const req = http.request({ host: proxyHost, port: proxyPort, method: 'CONNECT', path: `${host}:${port}`, agent: false, headers: proxyHeaders });
      req.on('connect', (res, s, head) => {
        if (res.statusCode !== 200) return reject(new Error(`CONNECT ${res.statusCode}`));
        bytes += head.length;
        resolve(s);
      });
      req.on('error', reject);
      req.end();
    });
    socket.on('data', (b) => (bytes += b.length));
    await new Promise((resolve, reject) => {
      socket.on('end', resolve);
      socket.on('error', reject);
    });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    process.stderr.write('measured\n');
    socket.destroy();
    return done(bytes / 1e6 / s, bytes === bulkBytes ? 0 : 1);
  }
  // `connections` keep-alive sockets; a warm-up round (JIT, connections), then `requests` timed.
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const opts = mode === 'proxy' ? { host: proxyHost, port: proxyPort, path: `http://${host}:${port}/`, agent, headers: proxyHeaders } : { host, port, path: '/', agent };
  let next = 0;
  let errors = 0;
  let total = Math.ceil(requests / 5);
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
  await Promise.all(Array.from({ length: connections }, worker));
  [next, errors, total] = [0, 0, requests];
  process.stderr.write('measuring\n'); // the harness samples memory and CPU from here on
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: connections }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stderr.write('measured\n');
  agent.destroy();
  done(requests / s, errors);
}

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : process.argv[i + 1];
}

/** Pids of `root` and all its descendants. */
function tree(root) {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch { /* gone */ }
  }
  const out = [];
  const walk = (pid) => {
    out.push(pid);
    for (const c of children.get(pid) ?? []) walk(c);
  };
  walk(root);
  return out;
}

function rssKb(pid) {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** CPU seconds (user + system) of a process; with `children`, also of the children it reaped. */
function cpuSeconds(pid, children = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14-17 of proc(5): utime, stime, cutime, cstime (here from field 3 on).
    const ticks = Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0);
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    return ticks / clockTicks;
  } catch {
    return 0;
  }
}

/** CPU seconds of srt itself, and of its process tree without the client (srt, the relay, splicers
 *  it started and reaped: bwrap and the helper are idle). */
function treeCpu(root) {
  const pids = tree(root);
  const excluded = new Set(pids.filter(isClient).flatMap(tree));
  const others = pids.filter((p) => p !== root && !excluded.has(p));
  const own = cpuSeconds(root);
  return { own, tree: cpuSeconds(root, true) + others.reduce((sum, p) => sum + cpuSeconds(p), 0) };
}

/** The load generator: a node running this file as its script (srt, bwrap and the helper only name it later in their argv). */
function isClient(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[1] === SELF;
  } catch {
    return false;
  }
}

/** Every 20 ms: VmRSS of srt itself and the sum over its tree without the client (and what it started); the peaks. */
function sampleTree(root) {
  let peak = 0;
  let own = 0;
  const timer = setInterval(() => {
    const pids = tree(root);
    const excluded = new Set(pids.filter(isClient).flatMap(tree));
    const kb = pids.filter((p) => !excluded.has(p)).reduce((sum, p) => sum + rssKb(p), 0);
    peak = Math.max(peak, kb);
    own = Math.max(own, rssKb(root));
  }, 20);
  return () => {
    clearInterval(timer);
    return { tree: peak / 1024, own: own / 1024 };
  };
}

async function main() {
  const requests = Number(arg('--requests', 20000));
  const connections = Number(arg('--connections', 20));
  const bulkMb = Number(arg('--bulk-mb', 200));
  const rounds = Number(arg('--rounds', 3));
  const only = new Set(String(arg('--only', 'proxy,connect,socks,http,forward')).split(','));
  for (const o of only) if (!['proxy', 'connect', 'socks', 'http', 'forward'].includes(o)) throw new Error(`--only: unknown figure ${o}`);
  const peers = peersFromArgs().filter((p) => p.settings);
  const bulkBytes = bulkMb * 1e6;
  const s = scratch();
  const origin = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    if (req.url !== '/bulk') return res.end('ok');
    res.writeHead(200, { 'Content-Length': bulkBytes });
    writeBulk(res, bulkBytes);
  });
  await new Promise((r) => origin.listen(0, '127.0.0.1', r));
  const bulk = net.createServer((socket) => {
    socket.on('error', () => socket.destroy());
    writeBulk(socket, bulkBytes);
  });
  await new Promise((r) => bulk.listen(0, '127.0.0.1', r));
  const originPort = origin.address().port;
  const bulkPort = bulk.address().port;
  const base = { host: '127.0.0.1', socksPort: 1080, requests, connections, bulkBytes };
  // Both origins allowed, in the reference's settings format (srt reads it too).
  const settings = join(s.dir, 'settings.json');
  writeFileSync(settings, JSON.stringify({
    network: { allowedDomains: ['127.0.0.1', `127.0.0.1:${originPort}`, `127.0.0.1:${bulkPort}`], deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: ['.'], denyWrite: [] },
  }));

  /** One client run: directly, or inside `srt` (the given CLI) allowing both origin ports. */
  const run = (mode, port, srt) =>
    new Promise((resolve, reject) => {
      const env = { PATH: process.env.PATH, HOME: s.dir, LANG: 'C.UTF-8', SRT_BENCH_CLIENT: JSON.stringify({ ...base, mode, port }) };
      const argv = srt ? srt.argv([process.execPath, SELF], settings) : [process.execPath, SELF];
      const child = spawn(argv[0], argv.slice(1), { cwd: s.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      let stopSampling;
      let cpu0;
      let cpu;
      child.stdout.on('data', (b) => (out += b));
      child.stderr.on('data', (b) => {
        err += b;
        if (srt && !cpu0 && err.includes('measuring\n')) {
          cpu0 = treeCpu(child.pid);
          if (mode === 'proxy') stopSampling = sampleTree(child.pid);
        }
        if (srt && cpu0 && !cpu && err.includes('measured\n')) {
          const c = treeCpu(child.pid);
          cpu = { own: c.own - cpu0.own, tree: c.tree - cpu0.tree };
        }
      });
      child.on('error', reject);
      child.on('close', (code) => {
        const rss = stopSampling?.();
        const line = out.trim().split('\n').at(-1);
        if (code !== 0 || !line) return resolve({ value: NaN, errors: 1, why: err.trim().split('\n').at(-1) });
        resolve({ ...JSON.parse(line), rss: rss?.tree, ownRss: rss?.own, cpuOwn: cpu?.own ?? NaN, cpuTree: cpu?.tree ?? NaN });
      });
    });

  const srtTool = { name: 'srt', argv: (cmd, file) => [SRT, '--settings', file, '--', ...cmd] };
  const clis = [['srt', srtTool], ...peers.map((p) => [p.name, p])];
  const results = {};
  const add = (key, r) => (results[key] ??= []).push(r);
  try {
    for (let round = 0; round < rounds; round++) {
      if (only.has('proxy')) add('direct', await run('direct', originPort));
      if (only.has('connect') || only.has('socks') || only.has('forward')) add('bulk-direct', await run('bulk-direct', bulkPort));
      if (only.has('http')) add('bulk-http-direct', await run('bulk-http-direct', originPort));
      for (const [name, cli] of clis) {
        if (only.has('proxy')) add(`${name} proxy`, await run('proxy', originPort, cli));
        if (only.has('connect')) add(`${name} bulk-connect`, await run('bulk-connect', bulkPort, cli));
        if (only.has('socks')) add(`${name} bulk-socks`, await run('bulk-socks', bulkPort, cli));
        if (only.has('http')) add(`${name} bulk-http`, await run('bulk-http', originPort, cli));
        if (only.has('forward')) add(`${name} bulk-forward`, await run('bulk-forward', bulkPort, cli));
      }
    }
  } finally {
    origin.close();
    bulk.close();
    s.cleanup();
  }
  // Failed runs do not count; a figure no run produced (that CLI has no such path) is NaN, its errors beside it.
  const med = (key, field = 'value') => median(results[key].map((r) => r[field]).filter((v) => !Number.isNaN(v)));
  const errs = (key) => {
    const e = results[key].reduce((n, r) => n + (r.errors || 0), 0);
    const why = results[key].find((r) => r.why)?.why;
    return e ? ` (${e} errors${why ? `: ${why.slice(0, 80)}` : ''})` : '';
  };
  // Each row only for a figure this run measured (`--only`).
  const rows = [];
  const row = (key, label, value) => results[key] && rows.push([label, value()]);
  row('direct', `direct on the host (req/s, ${requests} req, ${connections} keep-alive conns)`, () => `${Math.round(med('direct'))}${errs('direct')}`);
  row('bulk-direct', `bulk direct on the host (MB/s, ${bulkMb} MB)`, () => `${Math.round(med('bulk-direct'))}${errs('bulk-direct')}`);
  row('bulk-http-direct', `plain-HTTP bulk direct on the host (MB/s, one GET of ${bulkMb} MB)`, () => `${Math.round(med('bulk-http-direct'))}${errs('bulk-http-direct')}`);
  for (const [label] of clis) {
    const k = (m) => `${label} ${m}`;
    row(k('proxy'), `${label}: proxied req/s inside`, () => `${Math.round(med(k('proxy')))}${errs(k('proxy'))}`);
    row(k('proxy'), `${label}: proxied / direct (target >= 0.4)`, () => (med(k('proxy')) / med('direct')).toFixed(2));
    row(k('bulk-connect'), `${label}: CONNECT bulk inside (MB/s)`, () => `${Math.round(med(k('bulk-connect')))}${errs(k('bulk-connect'))}`);
    row(k('bulk-connect'), `${label}: CONNECT bulk / direct (target >= 0.5)`, () => (med(k('bulk-connect')) / med('bulk-direct')).toFixed(2));
    row(k('bulk-http'), `${label}: plain-HTTP bulk through the proxy inside (MB/s)`, () => `${Math.round(med(k('bulk-http')))}${errs(k('bulk-http'))}`);
    row(k('bulk-http'), `${label}: plain-HTTP bulk / direct (target >= 0.3)`, () => (med(k('bulk-http')) / med('bulk-http-direct')).toFixed(2));
    row(k('bulk-socks'), `${label}: SOCKS5 bulk inside (MB/s)`, () => `${Math.round(med(k('bulk-socks')))}${errs(k('bulk-socks'))}`);
    row(k('bulk-socks'), `${label}: SOCKS5 bulk / direct`, () => (med(k('bulk-socks')) / med('bulk-direct')).toFixed(2));
    row(k('bulk-forward'), `${label}: forwarded-port bulk inside (MB/s)`, () => `${Math.round(med(k('bulk-forward')))}${errs(k('bulk-forward'))}`);
    row(k('bulk-forward'), `${label}: forwarded-port bulk / direct (target >= 0.5)`, () => (med(k('bulk-forward')) / med('bulk-direct')).toFixed(2));
    row(k('proxy'), `${label}: CPU per request, srt / its tree without the client (µs)`, () => `${Math.round((med(k('proxy'), 'cpuOwn') / requests) * 1e6)} / ${Math.round((med(k('proxy'), 'cpuTree') / requests) * 1e6)}`);
    for (const m of ['bulk-connect', 'bulk-socks', 'bulk-forward', 'bulk-http']) {
      row(k(m), `${label}: CPU ms per MB, ${m}, srt / its tree without the client`, () => `${((med(k(m), 'cpuOwn') / bulkMb) * 1e3).toFixed(2)} / ${((med(k(m), 'cpuTree') / bulkMb) * 1e3).toFixed(2)}`);
    }
    row(k('proxy'), `${label}: srt's own peak RSS under load (MB, target <= 70)`, () => med(k('proxy'), 'ownRss').toFixed(1));
    row(k('proxy'), `${label}: process tree peak RSS under load, client excluded (MB, target <= 90)`, () => med(k('proxy'), 'rss').toFixed(1));
  }
  report(rows);
}
