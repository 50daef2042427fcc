#!/usr/bin/env node
// Requests per second on loopback: direct vs through srt's HTTP proxy (absolute-form, keep-alive)
// and through a CONNECT tunnel. Needs a build (dist/). Usage: node scripts/bench/proxy.mjs [requests] [connections]
import http from 'node:http';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REQUESTS = Number(process.argv[2] ?? 20000);
const CONNECTIONS = Number(process.argv[3] ?? 50);

if (process.env.SRT_BENCH_CLIENT) {
  // Load generator (child process): CONNECTIONS keep-alive sockets, REQUESTS in total.
  const { mode, target, proxyPort } = JSON.parse(process.env.SRT_BENCH_CLIENT);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let tunnelAgent;
  if (mode === 'connect') {
    // One CONNECT tunnel per connection, then plain HTTP inside it.
    tunnelAgent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    tunnelAgent.createConnection = (_o, cb) => {
      const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: target, agent: false });
      req.on('connect', (_res, socket) => cb(null, socket));
      req.on('error', cb);
      req.end();
    };
  }
  let next = 0;
  let errors = 0;
  const one = () =>
    new Promise((resolve) => {
      const opts =
        mode === 'direct'
          ? { host: '127.0.0.1', port: Number(target.split(':')[1]), path: '/', agent }
          : mode === 'proxy'
            ? { host: '127.0.0.1', port: proxyPort, path: `http://${target}/`, agent }
            : { host: '127.0.0.1', port: Number(target.split(':')[1]), path: '/', agent: tunnelAgent };
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
    while (next++ < REQUESTS) await one();
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  process.send({ rps: REQUESTS / s, errors });
  agent.destroy();
  tunnelAgent?.destroy();
  process.exit(0);
}

const { startProxy } = await import('../../dist/proxy/server.js');
const { parseDomainEntry } = await import('../../dist/proxy/domains.js');
const origin = http.createServer((_req, res) => res.end('ok'));
await new Promise((r) => origin.listen(0, '127.0.0.1', r));
const target = `127.0.0.1:${origin.address().port}`;
const network = {
  allowedDomains: parseDomainEntry(target, 'allow').rules.map((rule) => ({ rule, source: { scope: 'cli' } })),
  deniedDomains: [],
  deniedDomainReasons: {},
  strictAllowlist: true,
  allowManagedDomainsOnly: false,
  deniedResolvedAddresses: [],
  allowUnixSockets: [],
  allowAllUnixSockets: false,
  allowLocalBinding: false,
};
const proxy = await startProxy({ network, listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } }, upstreamEnv: {} });

const run = (mode) =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [String(REQUESTS), String(CONNECTIONS)], {
      env: { ...process.env, SRT_BENCH_CLIENT: JSON.stringify({ mode, target, proxyPort: proxy.httpPort }) },
    });
    child.on('message', resolve);
    child.on('error', reject);
  });

const results = {};
for (const mode of ['direct', 'proxy', 'connect']) results[mode] = await run(mode);
await proxy.close();
origin.close();
const fmt = (m) => `${Math.round(results[m].rps)} req/s${results[m].errors ? ` (${results[m].errors} errors)` : ''}`;
console.log(`${REQUESTS} requests, ${CONNECTIONS} keep-alive connections, loopback`);
console.log(`direct:               ${fmt('direct')}`);
console.log(`via proxy (absolute): ${fmt('proxy')}  ratio ${(results.proxy.rps / results.direct.rps).toFixed(2)}`);
console.log(`via CONNECT tunnel:   ${fmt('connect')}  ratio ${(results.connect.rps / results.direct.rps).toFixed(2)}`);
