#!/usr/bin/env node
// Credential substitution and re-masking (SPEC §7), as ratios in one run:
//  - in-process MB/s of the proxy's body stage: a clean body and one with sentinels (several per
//    64 KiB chunk, some straddling chunk boundaries), injection and tripwire patterns armed; and
//    the same with 20 more secrets whose sentinels are tripwires there (every form of each)
//  - a 100 MB download by curl inside the real sandbox over terminated TLS, the request carrying
//    the token: with a masked credential (injected, the response re-masked) vs the same download
//    unmasked (target ≤ 1.3×), and vs the same download through an opaque tunnel (an
//    excludeDomains host: no termination; target ≥ 0.5× its throughput)
//  - an SSE stream from an inject host over terminated TLS (one event every 100 ms): how late
//    each event reaches a client inside the sandbox (target ≤ 20 ms)
// Needs a build (dist/) and openssl. Usage: node scripts/bench/credentials.mjs [bodyMB] [downloadMB]
import https from 'node:https';
import { execFile } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { median, report, REPO, scratch, SRT, testPki } from './lib.mjs';

const BODY_MB = Number(process.argv[2] ?? 512);
const DOWNLOAD_MB = Number(process.argv[3] ?? 100);
const { CredentialStage } = await import(`${REPO}/dist/credentials/stage.js`);

const token = (n) => `ghp_${'abcdefghijklmnopqrstuvwxyz0123'.slice(0, 30)}${String(n).padStart(6, '0')}`;
const host = { raw: 'api.example', text: 'api.example', kind: 'host', host: 'api.example' };
/** `count` more secrets of other shapes, injected elsewhere: at api.example their sentinels are
 *  tripwires in every form, and their real values are re-masked in every form. */
const others = (count) => Array.from({ length: count }, (_, i) => ({
  label: `O${i}`, real: `sk-live/${String(i).padStart(4, '0')}+Real=Value/abcdefXYZ`, sentinel: `sk-live/${String(i).padStart(4, '0')}+Fake=Token/uvwxyzABC`,
  injectInto: ['headers', 'body'], inject: true, injectHosts: [{ raw: 'other.example', text: 'other.example', kind: 'host', host: 'other.example' }],
}));
const secrets = [0, 1, 2, 3].map((i) => ({
  label: `T${i}`, real: token(i), sentinel: token(i + 10).replace('ghp_a', 'ghp_Z'), injectInto: ['headers', 'body'], inject: true,
  injectHosts: [host],
}));

/** MB/s of the stage's request-body transform over BODY_MB of 64 KiB chunks. */
async function bodyRate(withSentinels, extra = 0) {
  const stage = new CredentialStage([...secrets, ...others(extra)], { allowPlaintextInject: true });
  const chunk = Buffer.alloc(65536);
  for (let i = 0; i < chunk.length; i++) chunk[i] = 32 + ((i * 7919) % 90);
  const chunks = [];
  for (let k = 0; k < 16; k++) {
    const c = Buffer.from(chunk);
    if (withSentinels) {
      for (let j = 0; j < 4; j++) c.write(secrets[j].sentinel, 4096 + j * 12000 + k);
      c.write(secrets[k % 4].sentinel.slice(0, 20), 65536 - 20); // continues in the next chunk
      if (k > 0) c.write(secrets[(k - 1) % 4].sentinel.slice(20), 0);
    }
    chunks.push(c);
  }
  const n = (BODY_MB * 1024 * 1024) / 65536;
  const body = Readable.from((function* () { for (let i = 0; i < n; i++) yield chunks[i % 16]; })());
  const req = { scheme: 'https', target: { host: { host: 'api.example' }, port: 443 }, method: 'POST', path: '/', headers: [], body };
  if (stage.request(req)) throw new Error('refused');
  let bytes = 0;
  const t0 = process.hrtime.bigint();
  await pipeline(req.body, new Writable({ write(c, _e, cb) { bytes += c.length; cb(); } }));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return bytes / 1e6 / s;
}

const rates = { clean: [], sentinels: [], many: [] };
for (let i = 0; i < 3; i++) {
  rates.clean.push(await bodyRate(false));
  rates.sentinels.push(await bodyRate(true));
  rates.many.push(await bodyRate(true, 20));
}

// --- through the real sandbox, over terminated TLS
const tmp = scratch();
const pki = testPki(tmp.dir, ['127.0.0.2']);
const origin = https.createServer({ cert: pki.cert, key: pki.key }, (req, res) => {
  if (req.url === '/sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const t = setInterval(() => {
      res.write(`data: ${JSON.stringify({ i, t: Date.now(), tok: i === 3 ? token(0) : '' })}\n\n`);
      if (++i === 30) { clearInterval(t); res.end(); }
    }, 100);
    return;
  }
  const block = Buffer.alloc(1 << 20, 'x');
  block.write(token(0), 5000); // a real value to re-mask in every MiB
  res.writeHead(200, { 'content-length': String(DOWNLOAD_MB * block.length) });
  let sent = 0;
  const more = () => {
    while (sent < DOWNLOAD_MB) { sent++; if (!res.write(block)) return res.once('drain', more); }
    res.end();
  };
  more();
});
await new Promise((r) => origin.listen(0, '127.0.0.2', r));
const port = origin.address().port;
const home = join(tmp.dir, 'home');
const cwd = join(tmp.dir, 'work');
mkdirSync(join(home, '.srt'), { recursive: true });
mkdirSync(cwd);
/** `plain`: terminated, nothing masked; `masked`: terminated, GH_TOKEN masked; `opaque`: the same
 *  mask, but 127.0.0.2 is an excludeDomains host (its tunnel is not terminated). */
const settings = (kind) => {
  const file = join(tmp.dir, `settings-${kind}.json`);
  writeFileSync(file, JSON.stringify({
    network: { allowedDomains: [`127.0.0.2:${port}`], tlsTerminate: { extraCaCertPaths: [pki.ca], ...(kind === 'opaque' ? { excludeDomains: ['127.0.0.2'] } : {}) } },
    credentials: kind !== 'plain' ? { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['127.0.0.2'] }] } : {},
  }));
  return file;
};
const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', GH_TOKEN: token(0) };
// Asynchronous: the origin server runs in this process.
const srt = (file, script) => new Promise((resolve, reject) => {
  execFile(process.execPath, [SRT, '--settings', file, '-c', script], { cwd, env, encoding: 'utf8', maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
    if (err) reject(new Error(`srt failed: ${err.message} ${stderr}`));
    else resolve(stdout);
  });
});
const download = `curl -s -o /dev/null -w '%{time_total}' -H "Authorization: token $GH_TOKEN" https://127.0.0.2:${port}/big`;
const times = { plain: [], masked: [], opaque: [] };
for (let i = 0; i < 5; i++) {
  for (const kind of ['plain', 'masked', 'opaque']) times[kind].push(Number(await srt(settings(kind), download)));
}
writeFileSync(join(cwd, 'sse.mjs'), [
  `const res = await fetch('https://127.0.0.2:${port}/sse');`,
  'const reader = res.body.getReader(); const dec = new TextDecoder(); let buf = "";',
  'for (;;) {',
  '  const { done, value } = await reader.read(); if (done) break;',
  "  buf += dec.decode(value, { stream: true }); let k;",
  "  while ((k = buf.indexOf('\\n\\n')) !== -1) { console.log(Date.now() - JSON.parse(buf.slice(6, k)).t); buf = buf.slice(k + 2); }",
  '}',
].join('\n'));
const late = (await srt(settings('masked'), 'node sse.mjs')).trim().split('\n').map(Number);
origin.closeAllConnections();
origin.close();
tmp.cleanup();

const tPlain = median(times.plain);
const tMasked = median(times.masked);
const tOpaque = median(times.opaque);
report([
  ['body stage MB/s, clean (>= 300)', median(rates.clean).toFixed(0)],
  ['body stage MB/s, 4+ sentinels/64 KiB (>= 300)', median(rates.sentinels).toFixed(0)],
  ['the same with 20 more secrets armed as tripwires', median(rates.many).toFixed(0)],
  [`${DOWNLOAD_MB} MB download inside (TLS terminated), s, unmasked`, tPlain.toFixed(3)],
  [`${DOWNLOAD_MB} MB download inside (TLS terminated), s, re-masked`, tMasked.toFixed(3)],
  [`${DOWNLOAD_MB} MB download inside, opaque tunnel (not terminated), s`, tOpaque.toFixed(3)],
  ['re-masking overhead (<= 1.3x)', `${(tMasked / tPlain).toFixed(2)}x`],
  ['terminated + re-masked / opaque throughput (>= 0.5)', `${(tOpaque / tMasked).toFixed(2)}x`],
  ['SSE event lateness median / max ms (<= 20)', `${median(late)} / ${Math.max(...late)}`],
]);
