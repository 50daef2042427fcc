// A refusal never crashes srt (SPEC §7 tripwire, §10 invariant 11): a sentinel found in a request
// body, wherever it falls (the first chunk, in the same TLS record as the head, a later chunk),
// over HTTP/1.1 and HTTP/2 in terminated TLS and over plain HTTP, is a 403 (or a reset, once the
// answer has begun) for that exchange alone; the command and srt go on, and the end-of-run line
// reports it. Real curl and node inside; loopback upstreams that record every byte they get.
// (Node's fetch sends plain http:// through a CONNECT tunnel, which srt does not parse: there the
// tripwire can only close the tunnel, and fetch reports the closed connection.)
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base62, crc32 } from '../../src/credentials/sentinels.js';
import { keyValues, srt, tempDir } from './helpers.js';
import { testPki } from './proxy-fixtures.js';

const tmp = tempDir('srt-cred-refusal-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
const entropy = 'Qm7wP2rT9yQ4mV8xL1nB6cH3jD5sF0';
const GH = `ghp_${entropy}${base62(crc32(entropy), 6)}`;

const received: string[] = [];
const sockets = new Set<Socket>();
let tlsServer: http2.Http2SecureServer;
let plainServer: http.Server;
let tlsPort = 0;
let plainPort = 0;
let settingsFile: string;
let caPath: string;

function record(req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): void {
  received.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}\n`);
  req.on('data', (c: Buffer) => received.push(c.toString('latin1')));
  req.on('end', () => res.end('ok'));
}

beforeAll(async () => {
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const pki = testPki(tmp.path);
  caPath = pki.caPath;
  const leaf = pki.leaf(['IP:127.0.0.3']);
  tlsServer = http2.createSecureServer({ cert: leaf.cert, key: leaf.key, allowHTTP1: true }, record);
  tlsServer.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.3', r));
  tlsPort = (tlsServer.address() as AddressInfo).port;
  plainServer = http.createServer(record);
  await new Promise<void>((r) => plainServer.listen(0, '127.0.0.3', r));
  plainPort = (plainServer.address() as AddressInfo).port;
  settingsFile = join(tmp.path, 'settings.json');
});

/** Run `script` with bash inside, with these credential entries. */
async function run(envVars: unknown[], script: string, env: Record<string, string>) {
  writeFileSync(settingsFile, JSON.stringify({
    network: { allowedDomains: [`127.0.0.2:443`, `127.0.0.3:${tlsPort}`, `127.0.0.3:${plainPort}`], tlsTerminate: { extraCaCertPaths: [caPath] } },
    credentials: { envVars },
  }));
  const r = await srt(['--settings', settingsFile, '-c', `bash -c '${script.replace(/'/g, `'\\''`)}'`], { home, cwd, env, timeout: 90_000 });
  return { ...r, kv: keyValues(r.stdout) };
}

const code = (name: string, args: string) => `echo "${name}=$(curl -s -o /dev/null -w '%{http_code}' ${args})"`;

afterAll(async () => {
  for (const s of sockets) s.destroy();
  plainServer.closeAllConnections();
  await Promise.all([tlsServer, plainServer].map((s) => new Promise((r) => s.close(r))));
  tmp.cleanup();
});

describe('a sentinel in a request body to a host outside its injectHosts', () => {
  it('is a 403 for that request alone: curl (h1, h2, plain HTTP) and node fetch; the command goes on and srt reports it', async () => {
    received.length = 0;
    const tls = `https://127.0.0.3:${tlsPort}`;
    const plain = `http://127.0.0.3:${plainPort}`;
    writeFileSync(join(cwd, 'post.mjs'), [
      'try {',
      '  const r = await fetch(process.argv[2], { method: "POST", body: `t=${process.env.GH_TOKEN}` });',
      '  console.log(`${process.argv[3]}=${r.status}`);',
      '} catch (e) { console.log(`${process.argv[3]}=closed`); }',
    ].join('\n'));
    writeFileSync(join(cwd, 'big.sh'), 'head -c 200000 /dev/zero | tr "\\0" a; printf "%s" "$GH_TOKEN"\n');
    const script = [
      code('h1', `--http1.1 -d "t=$GH_TOKEN" ${tls}/h1`),
      code('h2', `--http2 -d "t=$GH_TOKEN" ${tls}/h2`),
      code('plain', `-d "t=$GH_TOKEN" ${plain}/plain`),
      code('later_h1', `--http1.1 --data-binary @<(sh big.sh) ${tls}/later1`),
      code('later_h2', `--http2 --data-binary @<(sh big.sh) ${tls}/later2`),
      code('later_plain', `--data-binary @<(sh big.sh) ${plain}/later3`),
      'node post.mjs ' + `${tls}/fetch fetch_tls`,
      'node post.mjs ' + `${plain}/fetch fetch_plain`,
      code('clean', `-d "t=nothing" ${tls}/clean`),
      'echo done=1',
    ].join('\n');
    const r = await run([{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['127.0.0.2'], injectInto: ['headers', 'body'] }], script, { GH_TOKEN: GH });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv).toMatchObject({ h1: '403', h2: '403', plain: '403', later_h1: '403', later_h2: '403', later_plain: '403', fetch_tls: '403', fetch_plain: 'closed', clean: '200', done: '1' });
    expect(r.stderr).not.toMatch(/RefusedError|uncaught|at .*\.(js|cjs):\d+/i);
    expect(r.stderr.match(/^srt: blocked GH_TOKEN.s sentinel on its way to 127\.0\.0\.3$/gm)).toHaveLength(1);
    const seen = received.join('');
    expect(seen).not.toContain(GH);
    expect(seen).not.toMatch(/ghp_[A-Za-z0-9]{36}/);
    expect(seen).toContain('t=nothing');
  });
});

describe('an AWS secret key is only ever used to sign', () => {
  const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  const tls = () => `https://127.0.0.3:${tlsPort}`;
  const script = () => [
    code('header', `-H "x-amz-meta-note: $AWS_SECRET_ACCESS_KEY" ${tls()}/header`),
    code('body', `-d "note=$AWS_SECRET_ACCESS_KEY" ${tls()}/body`),
    code('query', `"${tls()}/query?note=$AWS_SECRET_ACCESS_KEY"`),
    'echo "secret=$AWS_SECRET_ACCESS_KEY"',
  ].join('\n');
  const everywhere = { injectHosts: ['127.0.0.3'], injectInto: ['headers', 'query', 'body'] };

  for (const [what, envVars, env] of [
    ['masked alone (its inject host named, every place allowed)', [{ name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask', ...everywhere }], { AWS_SECRET_ACCESS_KEY: SECRET }],
    ['paired with a key-id entry whose variable is unset', [{ name: 'AWS_ACCESS_KEY_ID', mode: 'mask', ...everywhere }, { name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask', ...everywhere }], { AWS_SECRET_ACCESS_KEY: SECRET }],
  ] as const) {
    it(`${what}: its sentinel goes nowhere, the 403 and the end-of-run line say so`, async () => {
      received.length = 0;
      const r = await run([...envVars], script(), env);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.kv).toMatchObject({ header: '403', body: '403', query: '403' });
      expect(r.kv.secret).toHaveLength(SECRET.length);
      expect(r.kv.secret).not.toBe(SECRET);
      const seen = received.join('');
      expect(seen).not.toContain(SECRET);
      expect(seen).not.toContain(r.kv.secret);
      expect(r.stderr).toMatch(/^srt: warning: credentials: AWS_SECRET_ACCESS_KEY is masked but AWS_ACCESS_KEY_ID is not( set)?: .*may go nowhere/m);
      expect(r.stderr).toMatch(/^srt: blocked AWS_SECRET_ACCESS_KEY's sentinel on its way to 127\.0\.0\.3 — it may go nowhere \(an AWS secret key is only ever used to sign\)$/m);
    });
  }

  it("the 403 names why (curl sees srt's reason)", async () => {
    const r = await run([{ name: 'AWS_SECRET_ACCESS_KEY', mode: 'mask', ...everywhere }], `curl -s --http1.1 -D - -o /dev/null -H "x-amz-meta-note: $AWS_SECRET_ACCESS_KEY" ${tls()}/why | grep "^HTTP/1.1 403"`, { AWS_SECRET_ACCESS_KEY: SECRET });
    expect(r.stdout).toMatch(/^HTTP\/1\.1 403 Blocked by srt: AWS_SECRET_ACCESS_KEY's sentinel may go nowhere, 127\.0\.0\.3 included: an AWS secret key is only ever used to sign/);
  });
});
