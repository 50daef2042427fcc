// Credentials over terminated TLS (SPEC §7): the real srt and sandbox, curl and node inside,
// HTTPS upstreams on the host's loopback (certificates from a test CA srt is told to trust) that
// record every decrypted byte they receive. 127.0.0.2 is the inject host; 127.0.0.3 is allowed
// but is not; 127.0.0.4 is an excludeDomains host, whose tunnel srt does not open.
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base62, crc32 } from '../../src/credentials/sentinels.js';
import { keyValues, srt, SRT_BIN, tempDir } from './helpers.js';
import { testPki } from './proxy-fixtures.js';

const tmp = tempDir('srt-cred-tls-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
const entropy = 'Zk4wP9rT2yQ8mV3xL6nB1cH5jD0sF7';
const GH = `ghp_${entropy}${base62(crc32(entropy), 6)}`;
const GL = 'glpat-Xy12Zw34Vu56Ts78Rq90';
const KEY = 'sk-proj-tls/key+with=symbols0123456789abcdefXYZ';
const REALS = [GH, GL, KEY];

let bomb: Buffer | undefined;
interface Upstream { port: number; raw: () => string; reset: () => void; server: http2.Http2SecureServer }
const servers: http2.Http2SecureServer[] = [];
const sockets = new Set<Socket>();

/**
 * An HTTPS server (HTTP/1.1 and h2) on `host` that records everything it receives, decrypted:
 * each request's line and headers as they arrive, then every body chunk as it arrives (so a body
 * cut off mid-way shows exactly what reached it).
 */
async function upstream(host: string, cert: { cert: string; key: string }): Promise<Upstream> {
  const received: string[] = [];
  const server = http2.createSecureServer({ cert: cert.cert, key: cert.key, allowHTTP1: true }, (req, res) => {
    const url = req.url ?? '/';
    received.push(`${req.method} ${url} HTTP/${req.httpVersion}\r\n${Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}\r\n`).join('')}\r\n`);
    // (The 200 MB upload is checked by its hash instead.)
    if (!url.startsWith('/upload')) req.on('data', (c: Buffer) => received.push(c.toString('latin1')));
    const chunks: Buffer[] = [];
    if (url.startsWith('/upload')) {
      const hash = createHash('sha256');
      let n = 0;
      req.on('data', (c: Buffer) => { hash.update(c); n += c.length; });
      req.on('end', () => res.end(JSON.stringify({ bytes: n, sha256: hash.digest('hex') })));
      return;
    }
    if (url.startsWith('/bomb')) {
      // 100 MiB, the real token once in every MiB, gzipped twice over two header lines.
      bomb ??= (() => {
        const block = Buffer.alloc(1 << 20, 'x');
        block.write(GH, 5000);
        return gzipSync(gzipSync(Buffer.concat(Array.from({ length: 100 }, () => block))));
      })();
      const headers: Record<string, string | string[]> = { 'content-type': 'application/octet-stream', 'content-encoding': req.httpVersion === '2.0' ? 'gzip, gzip' : ['gzip', 'gzip'] };
      res.writeHead(200, headers);
      res.end(bomb);
      return;
    }
    if (url.startsWith('/sse')) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // The stream never ends: its events reach the client only if nothing holds them back.
      let i = 0;
      const timer = setInterval(() => {
        res.write(`data: ${JSON.stringify({ i, tok: i === 2 ? String(req.headers.authorization ?? '') : '' })}\n\n`);
        i++;
      }, 100);
      res.on('close', () => clearInterval(timer));
      return;
    }
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (url.startsWith('/reflect')) return reflect(req, res, Buffer.concat(chunks));
      // Every header and the body as received (h2 pseudo-headers included): an echo.
      const echo = JSON.stringify({ url, version: req.httpVersion, headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (url.startsWith('/gzip')) {
        // A server that compresses although srt asked for identity: srt must still re-mask.
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(gzipSync(echo));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo-authorization': String(req.headers.authorization ?? '') });
      res.end(echo);
    });
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  servers.push(server);
  return { server, port: (server.address() as AddressInfo).port, raw: () => received.join(''), reset: () => { received.length = 0; } };
}

/** Echo encodings a reflecting server applies to the whole request (`?enc=`), each with the
 *  decoding a reader of the echo would apply. `pre` bytes before the request shift base64's
 *  alignment. */
const ENCODINGS: Record<string, { encode: (b: Buffer, pre: number) => Buffer; decode: (b: Buffer, pre: number) => Buffer }> = {
  raw: { encode: (b) => b, decode: (b) => b },
  base64: { encode: (b, pre) => Buffer.from(Buffer.concat([Buffer.alloc(pre, 42), b]).toString('base64')), decode: (b, pre) => Buffer.from(b.toString(), 'base64').subarray(pre) },
  base64url: { encode: (b, pre) => Buffer.from(Buffer.concat([Buffer.alloc(pre, 42), b]).toString('base64url')), decode: (b, pre) => Buffer.from(b.toString(), 'base64url').subarray(pre) },
  hex: { encode: (b) => Buffer.from(b.toString('hex')), decode: (b) => Buffer.from(b.toString(), 'hex') },
  HEX: { encode: (b) => Buffer.from(b.toString('hex').toUpperCase()), decode: (b) => Buffer.from(b.toString(), 'hex') },
  // Every character as \uXXXX, and Gson's HTML-safe escapes (`=` of the Basic padding too).
  'json-u': { encode: (b) => Buffer.from(`"${[...b.toString('latin1')].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`), decode: (b) => Buffer.from(JSON.parse(b.toString()) as string, 'latin1') },
  'json-gson': { encode: (b) => Buffer.from(JSON.stringify(b.toString('latin1')).replace(/[<>&='\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)), decode: (b) => Buffer.from(JSON.parse(b.toString()) as string, 'latin1') },
  // A login redirect's `?next=` holds the request's URL percent-encoded (again).
  percent: { encode: (b) => Buffer.from(encodeURIComponent(b.toString('latin1'))), decode: (b) => Buffer.from(decodeURIComponent(b.toString()), 'latin1') },
};
const COMPRESS: Record<string, (b: Buffer) => Buffer> = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };

/**
 * `/reflect?enc=E&pre=N&ce=gzip,br~gzip&te=gzip`: the request as received (line, headers, body),
 * encoded with E, then compressed per `ce` (`~` separates Content-Encoding header lines) and, over
 * HTTP/1.1, a `Transfer-Encoding: gzip, chunked` on top.
 */
function reflect(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, body: Buffer): void {
  const q = new URL(req.url ?? '/', 'https://x').searchParams;
  const heads: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) heads.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`);
  const request = Buffer.concat([Buffer.from(`${req.method} ${req.url} HTTP/${req.httpVersion}\r\n${heads.join('')}\r\n`, 'latin1'), body]);
  let out = ENCODINGS[q.get('enc') ?? 'raw']!.encode(request, Number(q.get('pre') ?? 0));
  const lines = (q.get('ce') ?? '').split('~').filter(Boolean);
  for (const line of lines) for (const c of line.split(',')) out = COMPRESS[c]!(out);
  const headers: Record<string, string | string[]> = { 'content-type': 'application/octet-stream' };
  // HTTP/2 takes one Content-Encoding field: its lines joined.
  if (lines.length) headers['content-encoding'] = req.httpVersion === '2.0' ? lines.join(', ') : lines.map((l) => l.replace(/,/g, ', '));
  if (q.get('te') === 'gzip' && req.httpVersion === '1.1') {
    out = gzipSync(out);
    headers['transfer-encoding'] = 'gzip, chunked';
  }
  res.writeHead(200, headers);
  res.end(out);
}

let pki: ReturnType<typeof testPki>;
let inject: Upstream, other: Upstream, excluded: Upstream;
/** A TLS server that speaks no HTTP (srt relays such a stream, decrypted, without parsing it). */
let raw: TlsServer;
let rawPort = 0;
const rawSeen: string[] = [];
let settingsFile: string;
const env = { GH_TOKEN: GH, GL_TOKEN: GL, BODY_KEY: KEY };

function settings() {
  return {
    network: {
      allowedDomains: [`127.0.0.2:${inject.port}`, `127.0.0.3:${other.port}`, `127.0.0.3:${rawPort}`, `127.0.0.4:${excluded.port}`],
      tlsTerminate: { extraCaCertPaths: [pki.caPath], excludeDomains: ['127.0.0.4'] },
    },
    credentials: {
      envVars: [
        { name: 'GH_TOKEN', mode: 'mask', injectHosts: ['127.0.0.2'] },
        { name: 'GL_TOKEN', mode: 'mask', injectHosts: ['127.0.0.2'], injectInto: ['headers', 'query'] },
        { name: 'BODY_KEY', mode: 'mask', injectHosts: ['127.0.0.2'], injectInto: ['headers', 'body'] },
      ],
    },
  };
}

async function run(script: string) {
  writeFileSync(settingsFile, JSON.stringify(settings()));
  const r = await srt(['--settings', settingsFile, '-c', script], { home, cwd, env, timeout: 90_000 });
  return { ...r, kv: keyValues(r.stdout) };
}

function noReal(text: string): void {
  for (const real of REALS) expect(text, `contains ${real}`).not.toContain(real);
}

beforeAll(async () => {
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  pki = testPki(tmp.path);
  inject = await upstream('127.0.0.2', pki.leaf(['IP:127.0.0.2']));
  other = await upstream('127.0.0.3', pki.leaf(['IP:127.0.0.3']));
  excluded = await upstream('127.0.0.4', pki.leaf(['IP:127.0.0.4']));
  const rawCert = pki.leaf(['IP:127.0.0.3']);
  raw = createTlsServer({ cert: rawCert.cert, key: rawCert.key }, (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('data', (d: Buffer) => rawSeen.push(d.toString('latin1')));
    s.on('error', () => {});
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.3', r));
  rawPort = (raw.address() as AddressInfo).port;
  settingsFile = join(tmp.path, 'settings.json');
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([...servers, raw].map((s) => new Promise((r) => s.close(r))));
  tmp.cleanup();
});

describe('over terminated TLS', () => {
  it('HTTP/1.1 and HTTP/2: headers (token, Bearer, Basic), the query and a body reach the inject host with the real value; the echo comes back masked', async () => {
    inject.reset();
    const base = `https://127.0.0.2:${inject.port}`;
    const r = await run([
      'for v in --http1.1 --http2; do',
      `  curl -s $v -H "Authorization: token $GH_TOKEN" ${base}/token >/dev/null`,
      `  curl -s $v -u "octocat:$GH_TOKEN" ${base}/basic >/dev/null`,
      `  curl -s $v "${base}/query?private_token=$GL_TOKEN" >/dev/null`,
      `  curl -s $v -H 'content-type: application/json' -d "{\\"key\\":\\"$BODY_KEY\\"}" ${base}/json >/dev/null`,
      'done',
      `echo "echo_h1=$(curl -s --http1.1 -i -H "Authorization: Bearer $GH_TOKEN" -d "key=$BODY_KEY" ${base}/echo | tr -d '\\r\\n')"`,
      `echo "echo_h2=$(curl -s --http2 -i -H "Authorization: Bearer $GH_TOKEN" ${base}/echo | tr -d '\\r\\n')"`,
      `echo "gzip=$(curl -s --compressed -H "Authorization: Bearer $GH_TOKEN" ${base}/gzip)"`,
      'echo "gh=$GH_TOKEN"',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    noReal(r.stdout + r.stderr);
    const seen = inject.raw();
    for (const v of ['1.1', '2.0']) {
      expect(seen).toContain(`GET /token HTTP/${v}\r\n`);
      expect(seen).toContain(`GET /query?private_token=${GL} HTTP/${v}\r\n`);
    }
    const count = (needle: string) => seen.split(needle).length - 1;
    expect(count(`authorization: token ${GH}\r\n`)).toBe(2);
    expect(count(`authorization: Basic ${Buffer.from(`octocat:${GH}`).toString('base64')}\r\n`)).toBe(2);
    expect(count(`{"key":"${KEY}"}`)).toBe(2);
    expect(r.kv.echo_h1).toContain(`"authorization":"Bearer ${r.kv.gh}"`);
    expect(r.kv.echo_h1).toContain(`x-echo-authorization: Bearer ${r.kv.gh}`);
    expect(r.kv.echo_h1).toMatch(/"accept-encoding":"identity"/);
    expect(r.kv.echo_h2).toContain('"version":"2.0"');
    expect(r.kv.echo_h2).toContain(`"authorization":"Bearer ${r.kv.gh}"`);
    expect(r.kv.gzip).toContain(`"authorization":"Bearer ${r.kv.gh}"`);
  });

  it('a reflecting upstream hands curl, python and node the request srt wrote in every form and encoding stack: they read only sentinels, the Basic credential as they sent it', async () => {
    inject.reset();
    mkdirSync(join(cwd, 'out'), { recursive: true });
    const base = `https://127.0.0.2:${inject.port}`;
    // enc:pre:ce:te — `ce` lists Content-Encoding header lines (`~`) of codings (`,`).
    const specs = [
      ...Object.keys(ENCODINGS).flatMap((e) => (e.startsWith('base64') ? ['0', '1', '2'] : ['0']).map((p) => `${e}:${p}::`)),
      'raw:0:gzip~gzip:', 'base64:1:gzip,br:', 'hex:0:deflate~br:', 'raw:0::gzip', 'base64url:2:br:gzip', 'json-u:0:gzip:',
    ];
    const few = ['raw:0::', 'base64:2:gzip~gzip:', 'hex:0:br:gzip', 'json-gson:0::', 'percent:0:deflate:'];
    writeFileSync(join(cwd, 'reflect.py'), [
      'import base64, os, sys, urllib.request',
      "auth = 'Basic ' + base64.b64encode(('x:' + os.environ['GH_TOKEN']).encode()).decode()",
      'for spec in sys.argv[2:]:',
      "    enc, pre, ce, te = spec.split(':')",
      "    url = f\"{sys.argv[1]}/reflect?enc={enc}&pre={pre}&ce={ce}&te={te}&private_token={os.environ['GL_TOKEN']}\"",
      "    req = urllib.request.Request(url, data=('key=' + os.environ['BODY_KEY']).encode(), headers={'Authorization': auth, 'Accept-Encoding': 'gzip, br'})",
      '    with urllib.request.urlopen(req) as r:',
      "        open(f'out/py_{enc}_{pre}_{ce}_{te}', 'wb').write(r.read())",
    ].join('\n'));
    writeFileSync(join(cwd, 'reflect.mjs'), [
      "import { writeFileSync } from 'node:fs';",
      'const [base, ...specs] = process.argv.slice(2);',
      "const auth = 'Basic ' + Buffer.from('x:' + process.env.GH_TOKEN).toString('base64');",
      'for (const spec of specs) {',
      "  const [enc, pre, ce, te] = spec.split(':');",
      '  const r = await fetch(`${base}/reflect?enc=${enc}&pre=${pre}&ce=${ce}&te=${te}&private_token=${process.env.GL_TOKEN}`, { method: \'POST\', headers: { authorization: auth }, body: \'key=\' + process.env.BODY_KEY });',
      '  writeFileSync(`out/node_${enc}_${pre}_${ce}_${te}`, Buffer.from(await r.arrayBuffer()));',
      '}',
    ].join('\n'));
    const curl = (v: string, name: string) => (spec: string) => {
      const [e, p, c, t] = spec.split(':');
      return `curl -s ${v} -u "x:$GH_TOKEN" -d "key=$BODY_KEY" "${base}/reflect?enc=${e}&pre=${p}&ce=${c}&te=${t}&private_token=$GL_TOKEN" -o "out/${name}_${e}_${p}_${c}_${t}"`;
    };
    const r = await run([
      ...specs.map(curl('--http1.1', 'curl1')),
      ...few.map(curl('--http2', 'curl2')),
      `python3 reflect.py ${base} ${few.join(' ')}`,
      `node reflect.mjs ${base} ${few.join(' ')}`,
      'echo "gh=$GH_TOKEN"', 'echo "gl=$GL_TOKEN"', 'echo "key=$BODY_KEY"',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    // srt did inject: the upstream got the real values (else nothing could come back).
    expect(inject.raw()).toContain(Buffer.from(`x:${GH}`).toString('base64'));
    expect(inject.raw()).toContain(`private_token=${GL}`);
    expect(inject.raw()).toContain(`key=${encodeURIComponent(KEY).replace(/%2B/g, '%2B')}`.slice(0, 12));
    const pairs: Array<[string, string]> = [[GH, r.kv.gh!], [GL, r.kv.gl!], [KEY, r.kv.key!]];
    /** An 8-byte run of a real value its sentinel does not share, or a Basic credential decoding to one. */
    const leak = (text: string, inner = false): string | undefined => {
      for (const [real, sentinel] of pairs) {
        for (let i = 0; i + 8 <= real.length; i++) if (text.includes(real.slice(i, i + 8)) && !sentinel.includes(real.slice(i, i + 8))) return real.slice(i, i + 8);
      }
      if (!inner) for (const m of text.matchAll(/Basic ([A-Za-z0-9+/=]+)/gi)) if (leak(Buffer.from(m[1]!, 'base64').toString('latin1'), true)) return `Basic ${m[1]}`;
      return undefined;
    };
    expect(leak(r.stdout + r.stderr)).toBeUndefined();
    const files = readdirSync(join(cwd, 'out'));
    expect(files).toHaveLength(specs.length + 3 * few.length);
    for (const f of files) {
      const [, e, p] = f.split('_');
      const content = readFileSync(join(cwd, 'out', f));
      const decoded = ENCODINGS[e!]!.decode(content, Number(p)).toString('latin1');
      expect(leak(content.toString('latin1')), f).toBeUndefined();
      expect(leak(decoded), `${f}: ${decoded.slice(0, 400)}`).toBeUndefined();
      // The echo is the request the client sent: its Basic credential decodes to its own sentinel
      // (inside a base64 echo, the blob's edge characters keep their bits: the last byte or two).
      expect(decoded, f).toMatch(/^(GET|POST) \/reflect\?/);
      const basic = Buffer.from(/authorization: Basic ([A-Za-z0-9+/=]+)/i.exec(decoded)?.[1] ?? '', 'base64').toString('latin1');
      if (e!.startsWith('base64')) expect(basic.startsWith(`x:${r.kv.gh!.slice(0, -2)}`), `${f}: ${basic}`).toBe(true);
      else expect(basic, f).toBe(`x:${r.kv.gh}`);
    }
  }, 180_000);

  it('the tripwire: a sentinel in a header or mid-body to a non-inject host is refused inside TLS, and never leaves', async () => {
    other.reset();
    const base = `https://127.0.0.3:${other.port}`;
    writeFileSync(join(cwd, 'body.sh'), 'head -c 262144 /dev/zero | tr "\\0" a; printf "%s" "$GH_TOKEN"; head -c 65536 /dev/zero | tr "\\0" b\n');
    const r = await run([
      `echo "header=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Note: $GH_TOKEN" ${base}/h)"`,
      `echo "header_h2=$(curl -s --http2 -o /dev/null -w '%{http_code}' -H "X-Note: $GH_TOKEN" ${base}/h2)"`,
      `echo "why=$(curl -s -D - -o /dev/null -H "X-Note: $GH_TOKEN" ${base}/h | grep -i x-proxy-error | tr -d '\\r')"`,
      `echo "body=$(sh body.sh | curl -s -o /dev/null -w '%{http_code}' --data-binary @- ${base}/body)"`,
      `echo "clean=$(curl -s -o /dev/null -w '%{http_code}' ${base}/clean)"`,
      // The same sentinel base64- or hex-encoded (any alignment) in a header, the query, a body.
      `echo "b64=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Data: $(printf %s "$GH_TOKEN" | base64 -w0)" ${base}/b64)"`,
      `echo "hex=$(curl -s -o /dev/null -w '%{http_code}' "${base}/hex?d=$(printf %s "$GH_TOKEN" | od -An -tx1 | tr -d ' \\n')")"`,
      `echo "b64body=$(printf 'ab%s' "$GH_TOKEN" | base64 -w0 | tr '+/' '-_' | python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=sys.stdin.buffer.read())).status)' ${base}/b64body 2>&1 | grep -o 'Error 403' | head -1)"`,
      'echo "gh=$GH_TOKEN"',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv).toMatchObject({ header: '403', header_h2: '403', body: '403', clean: '200', b64: '403', hex: '403', b64body: 'Error 403' });
    expect(r.kv.why).toMatch(/x-proxy-error: sentinel-not-allowed-here/i);
    const seen = other.raw();
    noReal(seen);
    expect(seen).not.toMatch(/ghp_[A-Za-z0-9]{36}/);
    expect(seen).not.toContain('bbbb');
    expect(seen).toContain('/clean');
    for (const path of ['/b64', '/hex', '/b64body']) expect(seen).not.toContain(path);
    expect(r.stderr).toMatch(/^srt: blocked GH_TOKEN's sentinel on its way to 127\.0\.0\.3$/m);
  });

  it('a TLS stream that is not HTTP is relayed decrypted, and its sentinel is still stopped', async () => {
    rawSeen.length = 0;
    const sClient = `timeout 10 openssl s_client -quiet -no_ign_eof -proxy 127.0.0.1:3128 -connect 127.0.0.3:${rawPort} >/dev/null 2>&1`;
    const r = await run([`echo 'note clean' | ${sClient}`, `echo "note $GH_TOKEN" | ${sClient}`, 'echo done=1'].join('\n'));
    expect(r.kv.done).toBe('1');
    expect(rawSeen.join('')).toContain('note clean');
    expect(rawSeen.join('')).not.toContain('ghp_');
    expect(r.stderr).toMatch(/^srt: blocked GH_TOKEN's sentinel on its way to 127\.0\.0\.3$/m);
  });

  it('what the tripwire cannot see: the inside of a tunnel to an excludeDomains host (documented)', async () => {
    excluded.reset();
    const r = await run(`curl -s --cacert ${pki.caPath} -o /dev/null -w 'code=%{http_code}\\n' -H "X-Note: $GH_TOKEN" https://127.0.0.4:${excluded.port}/x`);
    expect(r.kv.code).toBe('200');
    // The sentinel (not the real value) reached the excluded host: srt never saw inside that tunnel.
    expect(excluded.raw()).toMatch(/x-note: ghp_[A-Za-z0-9]{36}\r\n/);
    noReal(excluded.raw());
  });

  it('an SSE stream from the inject host that never ends arrives event by event (nothing held back), the echoed token re-masked', async () => {
    writeFileSync(join(cwd, 'sse.mjs'), [
      "const res = await fetch(process.argv[2], { headers: { authorization: `token ${process.env.GH_TOKEN}` } });",
      'const reader = res.body.getReader(); const dec = new TextDecoder(); let buf = "";',
      'for (;;) {',
      '  const { done, value } = await reader.read(); if (done) break;',
      '  buf += dec.decode(value, { stream: true }); let k;',
      "  while ((k = buf.indexOf('\\n\\n')) !== -1) { const ev = JSON.parse(buf.slice(6, k)); buf = buf.slice(k + 2); console.log('event=' + JSON.stringify(ev)); if (ev.i === 7) process.exit(0); }",
      '}',
    ].join('\n'));
    const r = await run(`node sse.mjs https://127.0.0.2:${inject.port}/sse; echo "gh=$GH_TOKEN"`);
    expect(r.exitCode, r.stderr).toBe(0);
    noReal(r.stdout);
    const events = r.stdout.split('\n').filter((l) => l.startsWith('event=')).map((l) => JSON.parse(l.slice(6)));
    expect(events.map((e) => e.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(events[2].tok).toBe(`token ${r.kv.gh}`);
  });

  it('a 200 MB upload with a token across every 64 KiB boundary arrives byte-exact and substituted; srt stays under 150 MB', async () => {
    const gen = [
      "const tok = Buffer.from(process.argv[2]); const n = 3200; const B = 65536; const out = process.stdout;",
      'let i = 0; let carry = Buffer.alloc(0);',
      'function more() {',
      '  while (i < n) {',
      "    const b = Buffer.alloc(B, 'x'); carry.copy(b, 0); carry = Buffer.alloc(0);",
      '    if (i < n - 1) { const at = B - 1 - (i % 40); tok.copy(b, at, 0, B - at); carry = tok.subarray(B - at); }',
      '    i++;',
      '    if (!out.write(b)) return out.once("drain", more);',
      '  }',
      '}',
      'more();',
    ].join('\n');
    writeFileSync(join(cwd, 'gen.cjs'), gen);
    const expected = await new Promise<string>((resolve) => {
      const child = spawn(process.execPath, [join(cwd, 'gen.cjs'), KEY]);
      const h = createHash('sha256');
      child.stdout.on('data', (c: Buffer) => h.update(c));
      child.on('close', () => resolve(h.digest('hex')));
    });
    const { status, out, err, peak } = await sampled(`node gen.cjs "$BODY_KEY" | curl -s -T - -H 'content-type: application/octet-stream' https://127.0.0.2:${inject.port}/upload; echo; sleep 1`);
    expect(status, err).toBe(0);
    const result = JSON.parse(out.trim());
    expect(result.bytes).toBe(3200 * 65536);
    expect(result.sha256).toBe(expected);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(150);
  }, 120_000);

  it('a 100 MiB download gzipped twice (under a megabyte on the wire) is decoded and re-masked as it streams; srt stays under 150 MB', async () => {
    writeFileSync(join(cwd, 'count.cjs'), [
      'const tok = Buffer.from(process.env.GH_TOKEN); let bytes = 0; let hits = 0; let tail = Buffer.alloc(0);',
      'process.stdin.on("data", (c) => { const b = Buffer.concat([tail, c]); for (let i = b.indexOf(tok); i !== -1; i = b.indexOf(tok, i + 1)) hits++; tail = b.subarray(Math.max(0, b.length - tok.length + 1)); bytes += c.length; });',
      'process.stdin.on("end", () => console.log(JSON.stringify({ bytes, hits })));',
    ].join('\n'));
    const { status, out, err, peak } = await sampled(`curl -s -H "Authorization: token $GH_TOKEN" https://127.0.0.2:${inject.port}/bomb | node count.cjs`);
    expect(status, err).toBe(0);
    // Every MiB held the real token once: each arrives as the sentinel the command has.
    expect(JSON.parse(out.trim())).toEqual({ bytes: 100 * 1024 * 1024, hits: 100 });
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(150);
  }, 180_000);
});

/** A run of srt (settings(), the hold raised for a loaded machine) with srt's peak RSS sampled. */
async function sampled(script: string): Promise<{ status: number | null; out: string; err: string; peak: number }> {
  writeFileSync(settingsFile, JSON.stringify(settings()));
  const child = spawn(process.execPath, [SRT_BIN, '--settings', settingsFile, '-c', script],
    // A sender stalled past the hold (this machine under the suite's load) splits a token: wait longer.
    { cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', SRT_CREDENTIAL_HOLD_MS: '5000', ...env } });
  let out = '';
  let err = '';
  let peak = 0;
  child.stdout.on('data', (b: Buffer) => { out += b; });
  child.stderr.on('data', (b: Buffer) => { err += b; });
  const sample = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (hwm) peak = Math.max(peak, Number(hwm[1]) / 1024);
    } catch { /* exited */ }
  }, 50);
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(sample);
  return { status, out, err, peak };
}
