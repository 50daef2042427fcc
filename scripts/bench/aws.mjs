#!/usr/bin/env node
// AWS re-signing (SPEC §7, AWS bullet), as ratios in one run: a signed aws-chunked upload
// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, 64 KiB chunks, each signed by the client with its sentinel
// secret) from a client inside the real sandbox, to a loopback HTTPS sink:
//  - re-signed: TLS terminated, every chunk signature recomputed on the fly with the real secret
//  - terminated: the same upload, TLS terminated but not re-signed (nothing masked: the client
//    holds the real key): what termination alone costs
//  - baseline: the same upload through an opaque tunnel (the host in excludeDomains)
// MB/s of each, and the peak RSS of the srt process (where the proxy runs) while re-signing
// (target ≤ 150 MB). The sink checks which key id each upload arrived with (the real one when
// re-signed, the sentinel through the tunnel) and counts the bytes.
// Needs a build (dist/) and openssl. Usage: node scripts/bench/aws.mjs [MB] [runs]
import https from 'node:https';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median, report, REPO, scratch, SRT, testPki } from './lib.mjs';

const MB = Number(process.argv[2] ?? 1024);
const RUNS = Number(process.argv[3] ?? 3);
const BYTES = MB * 1024 * 1024;
const REAL = { id: 'AKIAREALKEYID2345ABC', secret: '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' };

const tmp = scratch();
const pki = testPki(tmp.dir, ['127.0.0.2']);
let last = { keyId: '', bytes: 0 };
const sink = https.createServer({ cert: pki.cert, key: pki.key }, (req, res) => {
  let bytes = 0;
  req.on('data', (c) => { bytes += c.length; });
  req.on('end', () => {
    last = { keyId: /Credential=([^/]+)\//.exec(req.headers.authorization ?? '')?.[1] ?? '', bytes };
    res.writeHead(200, { 'content-length': '0' });
    res.end();
  });
});
await new Promise((r) => sink.listen(0, '127.0.0.2', r));
const port = sink.address().port;
const home = join(tmp.dir, 'home');
const cwd = join(tmp.dir, 'work');
mkdirSync(join(home, '.srt'), { recursive: true });
mkdirSync(cwd);
const settings = (mode) => {
  const file = join(tmp.dir, `settings-${mode}.json`);
  writeFileSync(file, JSON.stringify({
    network: { allowedDomains: [`127.0.0.2:${port}`], tlsTerminate: { extraCaCertPaths: [pki.ca], ...(mode === 'tunnel' ? { excludeDomains: ['127.0.0.2'] } : {}) } },
    // Terminated only: nothing masked, so the client signs with the real key and nothing re-signs.
    credentials: mode === 'terminated' ? {} : {
      envVars: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].map((name) => ({ name, mode: 'mask', injectHosts: ['127.0.0.2'] })),
    },
  }));
  return file;
};
const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', AWS_ACCESS_KEY_ID: REAL.id, AWS_SECRET_ACCESS_KEY: REAL.secret, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
const client = join(REPO, 'test/e2e/aws-clients/signed-chunked.mjs');

/** One upload inside srt: the client's JSON line, and srt's peak RSS (MB) sampled every 50 ms. */
function upload(mode) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SRT, '--settings', settings(mode), '--', 'node', client, `https://127.0.0.2:${port}`, 'chunked', 'bench.bin', String(BYTES), '65536'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let peak = 0;
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setInterval(() => {
      try {
        const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (hwm) peak = Math.max(peak, Number(hwm[1]) / 1024);
      } catch { /* exited */ }
    }, 50);
    child.on('close', (code) => {
      clearInterval(timer);
      if (code !== 0) return reject(new Error(`srt exited ${code}: ${err}`));
      const r = JSON.parse(out.trim().split('\n').at(-1));
      if (r.status !== 200) return reject(new Error(`upload answered ${r.status}: ${r.body}`));
      resolve({ ...r, peak });
    });
  });
}

const rates = { resigned: [], terminated: [], tunnel: [] };
let peak = 0;
for (let i = 0; i < RUNS; i++) {
  for (const mode of ['tunnel', 'terminated', 'resigned']) {
    const r = await upload(mode);
    if (last.bytes < BYTES) throw new Error(`the ${mode} upload arrived with ${last.bytes} bytes`);
    // Re-signed: the real key id. Through the tunnel: the sentinel, untouched.
    if ((mode === 'resigned') !== (last.keyId === REAL.id) && mode !== 'terminated') throw new Error(`the ${mode} upload arrived with key id ${last.keyId}`);
    rates[mode].push(MB / r.seconds);
    if (mode === 'resigned') peak = Math.max(peak, r.peak);
  }
}
sink.closeAllConnections();
sink.close();
tmp.cleanup();

const resigned = median(rates.resigned);
const terminated = median(rates.terminated);
const tunnel = median(rates.tunnel);
report([
  [`${MB} MiB aws-chunked upload MiB/s, opaque tunnel`, tunnel.toFixed(0)],
  [`${MB} MiB aws-chunked upload MiB/s, terminated only`, terminated.toFixed(0)],
  [`${MB} MiB aws-chunked upload MiB/s, re-signed`, resigned.toFixed(0)],
  ['re-signed / tunnel throughput', `${(resigned / tunnel).toFixed(2)}x`],
  ['re-signed / terminated throughput', `${(resigned / terminated).toFixed(2)}x`],
  ['srt peak RSS while re-signing, MB (<= 150)', peak.toFixed(0)],
]);
