// Credentials for services on the host's loopback (SPEC §6, §7 last bullet, §10 invariants 5, 11
// and 12): an inject host reached through a forwarded port (`localhost:PORT`, which NO_PROXY
// sends direct) or by a name mapped to loopback in /etc/hosts gets injection, re-masking and the
// tripwire like any other. The real srt runs in a mount namespace with its own /etc/hosts
// (srtManaged); curl, python, node and git inside; HTTPS upstreams on 127.0.0.1 (certificates
// from a test CA srt is told to trust) record every decrypted byte they receive.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base62, crc32 } from '../../src/credentials/sentinels.js';
import { keyValues, srtManaged, tempDir } from './helpers.js';
import { testPki } from './proxy-fixtures.js';

const tmp = tempDir('srt-cred-local-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
const entropy = 'Lc8wQ2rT5yU9iO3pA6sD1fG4hJ7kZx';
const GH = `ghp_${entropy}${base62(crc32(entropy), 6)}`;
const REALS = [GH];
const env = { GH_TOKEN: GH };
const hosts = '127.0.0.1 localhost\n::1 localhost ip6-localhost\n127.0.0.1 api.fake.test\n127.0.0.9 elsewhere.fake.test\n';

interface Upstream { port: number; raw: () => string; reset: () => void }
const servers: http2.Http2SecureServer[] = [];
const sockets = new Set<Socket>();

/** An HTTPS server (HTTP/1.1 and h2) on 127.0.0.1 that records everything it receives, decrypted,
 *  and answers with an echo of the request's headers and body. */
async function upstream(cert: { cert: string; key: string }): Promise<Upstream> {
  const received: string[] = [];
  const server = http2.createSecureServer({ cert: cert.cert, key: cert.key, allowHTTP1: true }, (req, res) => {
    received.push(`${req.method} ${req.url} HTTP/${req.httpVersion}\r\n${Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}\r\n`).join('')}\r\n`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => { chunks.push(c); received.push(c.toString('latin1')); });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() }));
    });
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { port: (server.address() as AddressInfo).port, raw: () => received.join(''), reset: () => { received.length = 0; } };
}

let pki: ReturnType<typeof testPki>;
/** The inject host's service, and another local TLS service that is not an inject host. */
let service: Upstream, other: Upstream;
/** A plain-HTTP service: what it received, raw. */
let plain: http.Server;
const plainSeen: string[] = [];

async function run(settings: object, script: string, args: string[] = []) {
  const file = join(tmp.path, `settings-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(settings));
  const r = await srtManaged(null, [...args, '--settings', file, '-c', script], { home, cwd, scratch: tmp.path, hosts, env: { ...env } });
  return { ...r, kv: keyValues(r.stdout) };
}

const tls = () => ({ extraCaCertPaths: [pki.caPath] });

/** Nothing the command saw holds a real value: its output, the files it wrote, every /proc/PID/environ. */
function noReal(...texts: string[]): void {
  for (const text of texts) for (const real of REALS) expect(text, `contains ${real}`).not.toContain(real);
}

/** Saves what every process inside could read of every environment, for noReal. */
const ENVIRON = 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" > environ.txt';

beforeAll(async () => {
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  pki = testPki(tmp.path);
  const names = ['DNS:localhost', 'IP:127.0.0.1', 'DNS:api.fake.test', 'DNS:elsewhere.fake.test'];
  service = await upstream(pki.leaf(names));
  other = await upstream(pki.leaf(names));
  plain = http.createServer((req, res) => req.resume().on('end', () => res.end('plain')));
  plain.on('connection', (s: Socket) => s.on('data', (d: Buffer) => plainSeen.push(d.toString('latin1'))));
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([...servers, plain].map((s) => new Promise((r) => s.close(r))));
  tmp.cleanup();
});

describe('an inject host on a forwarded loopback port (localhost:PORT)', () => {
  it('curl, python, node and git, which NO_PROXY sends to the forwarded port, get the real value injected; the echo comes back masked', async () => {
    service.reset();
    const url = `https://localhost:${service.port}`;
    const r = await run({
      network: { allowedDomains: [`localhost:${service.port}`], tlsTerminate: tls() },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: [`localhost:${service.port}`] }] },
    }, [
      'echo no_proxy=$NO_PROXY',
      `curl -sS -H "Authorization: Bearer $GH_TOKEN" ${url}/curl > curl.json`,
      // By address, no SNI: the leaf srt mints for localhost names its addresses too.
      `curl -sS -H "Authorization: Bearer $GH_TOKEN" https://127.0.0.1:${service.port}/curl-ip > curl-ip.json`,
      `python3 -c "
import os, urllib.request
req = urllib.request.Request('${url}/python', headers={'Authorization': 'Bearer ' + os.environ['GH_TOKEN']})
open('python.json', 'w').write(urllib.request.urlopen(req, timeout=20).read().decode())"`,
      `node -e "fetch('${url}/node', { headers: { authorization: 'Bearer ' + process.env.GH_TOKEN } }).then(r => r.text()).then(t => require('fs').writeFileSync('node.json', t), e => console.log('node_error=' + e.cause))"`,
      `git -c http.extraHeader="Authorization: Bearer $GH_TOKEN" ls-remote ${url}/repo.git >/dev/null 2>&1`,
      ENVIRON,
      'echo "gh=$GH_TOKEN"',
    ].join('\n'), ['--debug']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv.no_proxy).toBe('localhost,127.0.0.1,::1');
    // They came through the forwarded port, not the proxy, and srt terminated their TLS there.
    expect(r.stderr).toContain(`proxy: forward localhost:${service.port}: terminating TLS`);
    expect(r.stderr).not.toContain(`proxy: connect allow localhost:${service.port}`);
    const seen = service.raw();
    for (const path of ['/curl', '/curl-ip', '/python', '/node', '/repo.git/info/refs?service=git-upload-pack']) {
      expect(seen).toMatch(new RegExp(`GET ${path.replace(/[?.]/g, '\\$&')} HTTP/\\S+\\r\\n(?:[^\\r\\n]+\\r\\n)*authorization: Bearer ${GH}\\r\\n`));
    }
    const files = ['curl.json', 'curl-ip.json', 'python.json', 'node.json'].map((f) => readFileSync(join(cwd, f), 'utf8'));
    for (const echo of files) expect(JSON.parse(echo).headers.authorization).toBe(`Bearer ${r.kv.gh}`);
    expect(r.kv.gh).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    noReal(r.stdout, r.stderr, ...files, readFileSync(join(cwd, 'environ.txt'), 'utf8'));
  }, 240_000);

  it('the tripwire runs on every forwarded TLS port: a sentinel sent to a local service outside its injectHosts is stopped and reported', async () => {
    other.reset();
    const url = `https://localhost:${other.port}`;
    const r = await run({
      network: { allowedDomains: [`localhost:${service.port}`, `localhost:${other.port}`], tlsTerminate: tls() },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: [`localhost:${service.port}`] }] },
    }, [
      `echo "header=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Note: $GH_TOKEN" ${url}/header)"`,
      `echo "body=$(curl -s --http2 -o /dev/null -w '%{http_code}' -d "note=$GH_TOKEN" ${url}/body)"`,
      `echo "why=$(curl -s -D - -o /dev/null -H "X-Note: $GH_TOKEN" ${url}/why | grep -i x-proxy-error | tr -d '\\r')"`,
      `echo "clean=$(curl -s -o /dev/null -w '%{http_code}' ${url}/clean)"`,
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv).toMatchObject({ header: '403', body: '403', clean: '200' });
    expect(r.kv.why).toMatch(/x-proxy-error: sentinel-not-allowed-here/i);
    const seen = other.raw();
    expect(seen).toContain('GET /clean ');
    expect(seen).not.toMatch(/ghp_[A-Za-z0-9]{36}/);
    noReal(seen, r.stdout, r.stderr);
    expect(r.stderr).toMatch(/^srt: blocked GH_TOKEN's sentinel on its way to localhost$/m);
  }, 240_000);
});

describe('an inject host named in /etc/hosts for a loopback service (api.fake.test → 127.0.0.1)', () => {
  const settings = (extra: string[] = []) => ({
    network: { allowedDomains: ['api.fake.test', `127.0.0.1:${service.port}`, ...extra], tlsTerminate: tls() },
    credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.fake.test'] }] },
  });

  it('gets injection through the proxy, and through the forwarded port by its TLS server name', async () => {
    service.reset();
    const url = `https://api.fake.test:${service.port}`;
    const r = await run(settings(), [
      `curl -sS -H "Authorization: Bearer $GH_TOKEN" ${url}/proxied > proxied.json`,
      // Without the proxy: the name resolves to 127.0.0.1 inside, the forwarded port; its SNI names it.
      `curl -sS --noproxy '*' -H "Authorization: Bearer $GH_TOKEN" ${url}/direct > direct.json`,
      `python3 -c "
import os, urllib.request
req = urllib.request.Request('${url}/python', headers={'Authorization': 'Bearer ' + os.environ['GH_TOKEN']})
open('python.json', 'w').write(urllib.request.urlopen(req, timeout=20).read().decode())"`,
      ENVIRON,
      'echo "gh=$GH_TOKEN"',
    ].join('\n'), ['--debug']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain(`proxy: connect api.fake.test:${service.port}: terminating TLS`);
    expect(r.stderr).toContain(`proxy: forward api.fake.test:${service.port}: terminating TLS`);
    const seen = service.raw();
    for (const path of ['/proxied', '/direct', '/python']) {
      expect(seen).toMatch(new RegExp(`GET ${path} HTTP/\\S+\\r\\n(?:[^\\r\\n]+\\r\\n)*authorization: Bearer ${GH}\\r\\n`));
    }
    const files = ['proxied.json', 'direct.json', 'python.json'].map((f) => readFileSync(join(cwd, f), 'utf8'));
    for (const echo of files) expect(JSON.parse(echo).headers.authorization).toBe(`Bearer ${r.kv.gh}`);
    noReal(r.stdout, r.stderr, ...files, readFileSync(join(cwd, 'environ.txt'), 'utf8'));
  }, 240_000);

  it('a forwarded port reached by a name the policy refuses, or by one that leads elsewhere, is closed and reported', async () => {
    service.reset();
    const port = service.port;
    const r = await run(settings(['elsewhere.fake.test', `127.0.0.9:${port}`]), [
      `echo "unlisted=$(curl -s --noproxy '*' --resolve other.fake.test:${port}:127.0.0.1 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $GH_TOKEN" https://other.fake.test:${port}/unlisted)"`,
      `echo "elsewhere=$(curl -s --noproxy '*' --resolve elsewhere.fake.test:${port}:127.0.0.1 -o /dev/null -w '%{http_code}' https://elsewhere.fake.test:${port}/elsewhere)"`,
    ].join('\n'));
    expect(r.kv).toEqual({ unlisted: '000', elsewhere: '000' });
    expect(service.raw()).toBe('');
    expect(r.stderr).toContain(`srt: blocked other.fake.test:${port} — not in network.allowedDomains`);
    expect(r.stderr).toContain(`srt: blocked elsewhere.fake.test:${port} — TLS server name "elsewhere.fake.test" does not lead to the forwarded port 127.0.0.1:${port}`);
  }, 240_000);
});

describe('a mask without injectHosts', () => {
  it('goes to every allowedDomains entry that names one host, never to a wildcard entry; srt says which it left out', async () => {
    service.reset();
    const port = service.port;
    const r = await run({
      network: { allowedDomains: ['*.fake.test', `127.0.0.1:${port}`], tlsTerminate: tls() },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }] },
    }, [
      `echo "named=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $GH_TOKEN" https://api.fake.test:${port}/wildcard)"`,
      `curl -sS -H "Authorization: Bearer $GH_TOKEN" https://127.0.0.1:${port}/single > single.json`,
      'echo "gh=$GH_TOKEN"',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv.named).toBe('403');
    expect(r.stderr).toContain('srt: warning: credentials: GH_TOKEN has no injectHosts: the real value goes only to the allowedDomains entries that name one host, not to *.fake.test; list it in injectHosts to send it there');
    expect(r.stderr).toMatch(/^srt: blocked GH_TOKEN's sentinel on its way to api\.fake\.test$/m);
    const seen = service.raw();
    expect(seen).not.toContain('/wildcard');
    expect(seen).toMatch(new RegExp(`GET /single HTTP/\\S+\\r\\n(?:[^\\r\\n]+\\r\\n)*authorization: Bearer ${GH}\\r\\n`));
    const single = readFileSync(join(cwd, 'single.json'), 'utf8');
    expect(JSON.parse(single).headers.authorization).toBe(`Bearer ${r.kv.gh}`);
    noReal(r.stdout, r.stderr, single);
  }, 240_000);
});

describe('an inject host over plain HTTP', () => {
  it('gets the sentinel unchanged, and srt says so at the end: not injected: plain HTTP', async () => {
    plainSeen.length = 0;
    const port = (plain.address() as AddressInfo).port;
    const r = await run({
      network: { allowedDomains: ['api.fake.test', `127.0.0.1:${port}`], tlsTerminate: tls() },
      credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.fake.test'] }] },
    }, [
      `echo "curl=$(curl -s -H "Authorization: Bearer $GH_TOKEN" http://api.fake.test:${port}/curl)"`,
      `python3 -c "
import os, urllib.request
req = urllib.request.Request('http://api.fake.test:${port}/python', headers={'Authorization': 'Bearer ' + os.environ['GH_TOKEN']})
print('python=' + urllib.request.urlopen(req, timeout=20).read().decode())"`,
      'echo "gh=$GH_TOKEN"',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv).toMatchObject({ curl: 'plain', python: 'plain' });
    const seen = plainSeen.join('');
    expect(seen.match(new RegExp(`^authorization: Bearer ${r.kv.gh}\r$`, 'gim'))).toHaveLength(2);
    noReal(seen, r.stdout, r.stderr);
    const line = `srt: warning: not injected: plain HTTP — GH_TOKEN's sentinel went to api.fake.test:${port} unchanged (srt injects only inside terminated TLS: use https://, or set credentials.allowPlaintextInject)`;
    expect(r.stderr.split('\n').filter((l) => l === line)).toHaveLength(1);
  }, 240_000);
});

describe('a guarded value elsewhere: base64-encoded in another variable, in a credential file passed unmasked', () => {
  it('the command sees the sentinel encoded the same way (and its client is injected with it), or nothing where the value is denied', async () => {
    service.reset();
    const port = service.port;
    const NPM = 'npm_deniedDeniedDeniedDenied0123456789';
    const b64 = (t: string) => Buffer.from(t).toString('base64');
    const docker = (t: string) => JSON.stringify({ auths: { [`localhost:${port}`]: { auth: b64(`octocat:${t}`) } } });
    mkdirSync(join(home, '.docker'), { recursive: true });
    writeFileSync(join(home, '.netrc'), `machine localhost login octocat password ${GH}\n`);
    writeFileSync(join(home, '.docker', 'config.json'), docker(GH));
    writeFileSync(join(home, '.npmrc'), `//localhost:${port}/:_auth=${b64(`octocat:${GH}`)}\n`);
    try {
      const file = join(tmp.path, 'settings-copies.json');
      writeFileSync(file, JSON.stringify({
        network: { allowedDomains: [`localhost:${port}`], tlsTerminate: tls() },
        credentials: {
          envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: [`localhost:${port}`] }, { name: 'NPM_TOKEN', mode: 'deny' }],
          // Patterns that match nothing in these files: they pass unmasked, but never with GH_TOKEN's value.
          files: [
            { path: '~/.netrc', mode: 'mask', extract: 'token=(\\S+)' },
            { path: '~/.docker/config.json', mode: 'mask', extract: '"identitytoken":"([^"]+)"' },
            { path: '~/.npmrc', mode: 'mask', extract: '_authToken=(\\S+)' },
          ],
        },
      }));
      const r = await srtManaged(null, ['--settings', file, '-c', [
        `curl -sS -H "Authorization: Basic $NPM_CONFIG__AUTH" https://localhost:${port}/env-basic > basic.json`,
        `curl -sS --netrc https://localhost:${port}/netrc > netrc.json`,
        // npm sends the .npmrc's _auth as a Basic credential.
        `npm view left-pad --registry https://localhost:${port}/ --cache "$PWD/npm-cache" > npm.txt 2>&1 || true`,
        `python3 -c "
import base64, json, os, urllib.request
auth = json.loads(os.environ['DOCKER_AUTH_CONFIG'])['auths']['localhost:${port}']['auth']
req = urllib.request.Request('https://localhost:${port}/docker-env', headers={'Authorization': 'Basic ' + auth})
open('docker.json', 'w').write(urllib.request.urlopen(req, timeout=20).read().decode())"`,
        'echo "decoded=$(printf %s "$NPM_CONFIG__AUTH" | base64 -d)"',
        'echo "other=${NPM_CONFIG_OTHER_AUTH:-unset}"',
        'cat ~/.netrc ~/.docker/config.json ~/.npmrc > files.txt',
        ENVIRON,
        'echo "gh=$GH_TOKEN"',
      ].join('\n')], {
        home, cwd, scratch: tmp.path, hosts,
        env: { GH_TOKEN: GH, NPM_TOKEN: NPM, NPM_CONFIG__AUTH: b64(`octocat:${GH}`), DOCKER_AUTH_CONFIG: docker(GH), NPM_CONFIG_OTHER_AUTH: b64(`me:${NPM}`) },
      });
      const kv = keyValues(r.stdout);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(kv.decoded).toBe(`octocat:${kv.gh}`);
      expect(kv.other).toBe('unset');
      // Each client sent the sentinel in its Basic credential; srt put the real token in.
      const lines = service.raw().split('\r\n');
      for (const path of ['/env-basic', '/netrc', '/docker-env', '/left-pad']) expect(lines.some((l) => l.startsWith(`GET ${path} HTTP/`)), path).toBe(true);
      const auths = lines.filter((l) => l.startsWith('authorization:'));
      expect(auths.length).toBeGreaterThanOrEqual(4);
      expect(new Set(auths)).toEqual(new Set([`authorization: Basic ${b64(`octocat:${GH}`)}`]));
      const inside = [r.stdout, ...['files.txt', 'environ.txt', 'basic.json', 'netrc.json', 'docker.json', 'npm.txt'].map((f) => readFileSync(join(cwd, f), 'utf8'))];
      for (const text of inside) {
        for (const secret of [GH, NPM, b64(`octocat:${GH}`), b64(`me:${NPM}`)]) expect(text).not.toContain(secret);
      }
      expect(readFileSync(join(cwd, 'files.txt'), 'utf8')).toBe(`machine localhost login octocat password ${kv.gh}\n${docker(kv.gh!)}//localhost:${port}/:_auth=${b64(`octocat:${kv.gh}`)}\n`);
      expect(r.stderr).toContain('srt: warning: credentials: NPM_CONFIG__AUTH holds the value of masked GH_TOKEN base64-encoded; the command sees the sentinel there, encoded the same way');
      expect(r.stderr).toContain('srt: warning: credentials: NPM_CONFIG_OTHER_AUTH holds the value of a denied variable (base64-encoded); unset too');
      expect(r.stderr).toContain(`srt: warning: credentials: ${home}/.netrc: its extract matched nothing, but it holds the value of masked GH_TOKEN: the command sees the sentinel there (the rest is passed unmasked)`);
    } finally {
      rmSync(join(home, '.netrc'));
      rmSync(join(home, '.npmrc'));
      rmSync(join(home, '.docker'), { recursive: true });
    }
  }, 240_000);
});
