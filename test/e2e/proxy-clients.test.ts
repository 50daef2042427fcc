// Real clients (curl, python3 urllib, node fetch/http/https through the preload, git, the helper's CONNECT client)
// run as child processes with the environment sandboxProxyEnv builds, against srt's proxy
// running in-process and servers on 127.0.0.1 only. Test hostnames (*.test) exist only in the
// proxy's injected resolver, so a request that succeeds can only have gone through the proxy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { sandboxProxyEnv } from '../../src/proxy/env.js';
import { INIT_HELPER_PATH } from '../../src/platform/init-helper.js';
import { REPO, tempDir } from './helpers.js';
import { closeServer, listenOn, network, rmrf, selfSigned } from './proxy-fixtures.js';

const PRELOAD = join(REPO, 'dist', 'proxy', 'node-preload.cjs');
let A = 0; // plain HTTP origin
let B = 0; // TLS origin
let origin: http.Server;
let tlsOrigin: https.Server;
let proxy: ProxyHandle;
let cert: ReturnType<typeof selfSigned>;
const tmp = tempDir('srt-proxy-clients-');
let env: Record<string, string>;

const resolver = async (host: string) => {
  if (host === 'loop2.test') return ['127.0.0.2'];
  if (host.endsWith('.test')) return ['127.0.0.1'];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

function run(cmd: string, args: string[], extra: Record<string, string> = {}) {
  return execa(cmd, args, { env: { ...env, ...extra }, extendEnv: false, reject: false, timeout: 20_000, stdin: 'ignore' });
}

beforeAll(async () => {
  if (!existsSync(PRELOAD)) throw new Error(`${PRELOAD} missing: run \`npx tsc -p tsconfig.json\` first`);
  cert = selfSigned(['allowed.test', 'denied.test']);

  // A bare repository served as static files ("dumb" HTTP protocol).
  const bare = join(tmp.path, 'repo.git');
  const work = join(tmp.path, 'work');
  mkdirSync(work);
  const git = (cwd: string, ...args: string[]) =>
    execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], { cwd, env: { HOME: tmp.path, GIT_CONFIG_NOSYSTEM: '1' } });
  await git(tmp.path, 'init', '-q', '--bare', bare);
  await git(work, 'init', '-q');
  writeFileSync(join(work, 'README'), 'through the proxy\n');
  await git(work, 'add', 'README');
  await git(work, 'commit', '-q', '-m', 'first');
  await git(work, 'push', '-q', bare, 'HEAD:main');
  await git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
  await git(bare, 'update-server-info');

  origin = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/repo.git/')) {
      const file = join(bare, decodeURIComponent(url.slice('/repo.git/'.length).split('?')[0]!));
      if (!file.startsWith(bare) || !existsSync(file) || !statSync(file).isFile()) {
        res.writeHead(404).end();
        return;
      }
      res.end(readFileSync(file));
      return;
    }
    if (url === '/upload') {
      const h = createHash('sha256');
      let n = 0;
      req.on('data', (c: Buffer) => {
        n += c.length;
        h.update(c);
      });
      req.on('end', () => res.end(`${n} ${h.digest('hex')}\n`));
      return;
    }
    res.end(`hello ${req.method} ${url} host=${req.headers.host}\n`);
  });
  A = await listenOn(origin);
  tlsOrigin = https.createServer({ cert: cert.cert, key: cert.key }, (req, res) => res.end(`secure hello ${req.url}\n`));
  B = await listenOn(tlsOrigin);

  proxy = await startProxy({
    network: network({
      allow: [`127.0.0.1:${A}`, 'allowed.test', '*.wild.test', 'denied.test', `ported.test:${A}`, 'loop2.test'],
      deny: ['denied.test'],
      reasons: { 'denied.test': 'denied for the test' },
    }),
    listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
    resolver,
    upstreamEnv: {},
    testOnlyExemptAddresses: ['127.0.0.1'],
  });
  env = {
    PATH: process.env.PATH!,
    HOME: tmp.path,
    LANG: 'C.UTF-8',
    GIT_CONFIG_NOSYSTEM: '1',
    ...sandboxProxyEnv({ httpPort: proxy.httpPort!, socksPort: proxy.socksPort!, nodePreloadPath: PRELOAD, helperPath: INIT_HELPER_PATH }),
  };
});

afterAll(async () => {
  await proxy?.close();
  if (origin) await closeServer(origin);
  if (tlsOrigin) await closeServer(tlsOrigin);
  tmp.cleanup();
  if (cert) rmrf(cert.dir);
});

describe('curl', () => {
  it('reaches an allowed host over plain HTTP (absolute-form) and the Host header is the authority', async () => {
    const r = await run('curl', ['-sS', `http://allowed.test:${A}/hello?x=1`]);
    expect(r.stdout).toBe(`hello GET /hello?x=1 host=allowed.test:${A}`);
  });

  it('reaches an allowed IP-literal entry', async () => {
    const r = await run('curl', ['-sS', '--noproxy', '', `http://127.0.0.1:${A}/ip`]);
    expect(r.stdout).toBe(`hello GET /ip host=127.0.0.1:${A}`);
  });

  it('gets 403 with the reason for a host that is not allowed', async () => {
    const r = await run('curl', ['-sS', '-i', 'http://other.test/']);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 403 Blocked by srt: not in network\.allowedDomains\r\n/);
    expect(r.stdout).toMatch(/\r\nX-Proxy-Error: blocked-by-srt\r\n/i);
    expect(r.stdout).toContain('srt: blocked other.test:80 — not in network.allowedDomains');
  });

  it('tunnels HTTPS with CONNECT to an allowed host (certificate verified)', async () => {
    const r = await run('curl', ['-sS', '--cacert', cert.certPath, `https://allowed.test:${B}/tls`]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('secure hello /tls');
  });

  it('refuses CONNECT to a denied host; deniedDomains beats allowedDomains; curl shows the reason', async () => {
    const r = await run('curl', ['-sS', '-v', '--cacert', cert.certPath, `https://denied.test:${B}/`]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain('< HTTP/1.1 403 Blocked by srt: denied for the test (network.deniedDomains: denied.test)');
    expect(r.stderr).toMatch(/X-Proxy-Error: blocked-by-srt/i);
  });

  it('holds port-restricted entries', async () => {
    expect((await run('curl', ['-sS', `http://ported.test:${A}/p`])).stdout).toBe(`hello GET /p host=ported.test:${A}`);
    const r = await run('curl', ['-sS', '-i', `http://ported.test:${B}/p`]);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 403 /);
  });

  it('matches wildcard entries for subdomains only', async () => {
    expect((await run('curl', ['-sS', `http://a.b.wild.test:${A}/w`])).stdout).toBe(`hello GET /w host=a.b.wild.test:${A}`);
    expect((await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', `http://wild.test:${A}/w`])).stdout).toBe('403');
  });

  it('refuses an allowed hostname that resolves to a non-exempt loopback address (address guard)', async () => {
    const r = await run('curl', ['-sS', '-i', `http://loop2.test:${A}/`]);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 403 Blocked by srt: resolves only to blocked addresses: 127\.0\.0\.2 is a loopback address/);
  });

  it('uploads a large chunked body intact', async () => {
    const file = join(tmp.path, 'big.bin');
    const data = Buffer.alloc(8 * 1024 * 1024, 7);
    writeFileSync(file, data);
    const r = await run('curl', ['-sS', '-H', 'Transfer-Encoding: chunked', '--data-binary', `@${file}`, `http://allowed.test:${A}/upload`]);
    expect(r.stdout).toBe(`${data.length} ${createHash('sha256').update(data).digest('hex')}`);
  });

  it('goes through SOCKS5 with remote name resolution; refusals fail the connection', async () => {
    const socks = ['--proxy', `socks5h://127.0.0.1:${proxy.socksPort}`];
    expect((await run('curl', ['-sS', ...socks, `http://allowed.test:${A}/s`])).stdout).toBe(`hello GET /s host=allowed.test:${A}`);
    const https = await run('curl', ['-sS', ...socks, '--cacert', cert.certPath, `https://allowed.test:${B}/s`]);
    expect(https.stdout).toBe('secure hello /s');
    const r = await run('curl', ['-sS', ...socks, `http://other.test:${A}/s`]);
    expect(r.exitCode).toBe(97);
    expect(r.stderr).toMatch(/SOCKS5.*\(2\)|connection not allowed/i);
  });
});

describe('python3 urllib', () => {
  const py = 'import sys, urllib.request\ntry:\n  print(urllib.request.urlopen(sys.argv[1]).read().decode(), end="")\nexcept Exception as e:\n  print("ERR", e)';
  it('uses the proxy for http and https', async () => {
    expect((await run('python3', ['-c', py, `http://allowed.test:${A}/py`])).stdout).toBe(`hello GET /py host=allowed.test:${A}`);
    const r = await run('python3', ['-c', py, `https://allowed.test:${B}/py`], { SSL_CERT_FILE: cert.certPath });
    expect(r.stdout).toBe('secure hello /py');
  });
  it('sees the 403 for a host that is not allowed', async () => {
    expect((await run('python3', ['-c', py, 'http://other.test/'])).stdout).toMatch(/^ERR HTTP Error 403: Blocked by srt: not in network.allowedDomains/);
  });
});

describe('node through the preload', () => {
  const fetchJs = 'fetch(process.argv[1]).then(r => r.text().then(t => console.log(r.status, t.trim())), e => console.log("ERR", e.cause?.message ?? e.message))';
  const expectClean = (r: { stderr: string }) => expect(r.stderr).toBe('');
  const getJs = (mod: string) =>
    `require('${mod}').get(process.argv[1], r => { let b=''; r.on('data', c => b += c); r.on('end', () => console.log(r.statusCode, b.trim())); }).on('error', e => console.log('ERR', e.message))`;
  const ca = () => ({ NODE_EXTRA_CA_CERTS: cert.certPath });

  it('global fetch honours the proxy variables (http and https)', async () => {
    const plain = await run('node', ['-e', fetchJs, `http://allowed.test:${A}/f`]);
    expect(plain.stdout).toBe(`200 hello GET /f host=allowed.test:${A}`);
    expectClean(plain); // no undici "experimental" warning leaks to the command's stderr
    expect((await run('node', ['-e', fetchJs, `https://allowed.test:${B}/f`], ca())).stdout).toBe('200 secure hello /f');
    // undici reports a refused tunnel only as an aborted request; the refusal is the proxy's.
    const refused = await run('node', ['-e', fetchJs, `https://other.test:${B}/f`], ca());
    expect(refused.stdout).toMatch(/^ERR /);
    expectClean(refused);
    expect(proxy.violations()).toContainEqual({ host: 'other.test', port: B, reason: 'not in network.allowedDomains' });
  });

  it('http.get sends absolute-form through the proxy', async () => {
    expect((await run('node', ['-e', getJs('http'), `http://allowed.test:${A}/g`])).stdout).toBe(`200 hello GET /g host=allowed.test:${A}`);
    expect((await run('node', ['-e', getJs('http'), 'http://other.test/g'])).stdout).toMatch(/^403 srt: blocked other\.test:80/);
  });

  it('https.get tunnels with CONNECT', async () => {
    expect((await run('node', ['-e', getJs('https'), `https://allowed.test:${B}/h`], ca())).stdout).toBe('200 secure hello /h');
    expect((await run('node', ['-e', getJs('https'), `https://other.test:${B}/h`], ca())).stdout).toMatch(
      /^ERR proxy refused CONNECT other\.test:\d+: 403 Blocked by srt: not in network\.allowedDomains/,
    );
  });

  it('agents a program makes for itself use the proxy too (as the AWS SDK\'s keep-alive agents)', async () => {
    const own = (mod: string) =>
      `const m = require('${mod}'); const agent = new m.Agent({ keepAlive: true, maxSockets: 4 }); let n = 0; const go = () => m.get(process.argv[1], { agent }, r => { let b=''; r.on('data', c => b += c); r.on('end', () => { console.log(r.statusCode, b.trim()); if (++n < 2) go(); else agent.destroy(); }); }).on('error', e => console.log('ERR', e.message)); go();`;
    expect((await run('node', ['-e', own('http'), `http://allowed.test:${A}/o`])).stdout).toBe(`200 hello GET /o host=allowed.test:${A}\n200 hello GET /o host=allowed.test:${A}`);
    expect((await run('node', ['-e', own('https'), `https://allowed.test:${B}/o`], ca())).stdout).toBe('200 secure hello /o\n200 secure hello /o');
    expect((await run('node', ['-e', own('https'), `https://other.test:${B}/o`], ca())).stdout).toMatch(/^ERR proxy refused CONNECT other\.test/);
  });

  it('an agent that connects its own way (as npm\'s proxy agents) is left to it', async () => {
    const js = `const http = require('http'), net = require('net'); class Own extends http.Agent { createConnection(o) { console.log('asked', o.host + ':' + o.port); return net.connect(${A}, '127.0.0.1'); } } http.get(process.argv[1], { agent: new Own() }, r => { let b=''; r.on('data', c => b += c); r.on('end', () => console.log(r.statusCode, b.trim())); }).on('error', e => console.log('ERR', e.message));`;
    expect((await run('node', ['-e', js, `http://allowed.test:${A}/own`])).stdout).toBe(`asked allowed.test:${A}\n200 hello GET /own host=allowed.test:${A}`);
  });

  it('keeps NO_PROXY hosts direct and `node -e 0` working', async () => {
    expect((await run('node', ['-e', fetchJs, `http://127.0.0.1:${A}/direct`])).stdout).toBe(`200 hello GET /direct host=127.0.0.1:${A}`);
    const r = await run('node', ['-e', '0']);
    expect([r.exitCode, r.stderr]).toEqual([0, '']);
  });
});

describe('git', () => {
  it('clones over http through the proxy', async () => {
    const dest = join(tmp.path, 'clone');
    const r = await run('git', ['clone', '-q', `http://allowed.test:${A}/repo.git`, dest]);
    expect(r.stderr).toBe('');
    expect(readFileSync(join(dest, 'README'), 'utf8')).toBe('through the proxy\n');
  });

  it('fails to clone from a host that is not allowed', async () => {
    const r = await run('git', ['clone', '-q', `http://other.test:${A}/repo.git`, join(tmp.path, 'clone2')]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/403/);
  });
});

describe('ssh ProxyCommand route (the helper\'s HTTP CONNECT client, as in GIT_SSH_COMMAND)', () => {
  it('connects to an allowed host:port and is refused for others', async () => {
    const cmd = env.GIT_SSH_COMMAND!.match(/'ProxyCommand=([^']+)'/)![1]!;
    const ok = cmd.replace('%h', 'allowed.test').replace('%p', String(A)).split(' ');
    const r = await execa(ok[0]!, ok.slice(1), { input: 'GET /ssh HTTP/1.0\r\n\r\n', reject: false, timeout: 10_000 });
    expect(r.stdout).toContain('hello GET /ssh host=undefined');
    const bad = cmd.replace('%h', 'other.test').replace('%p', '22').split(' ');
    const refused = await execa(bad[0]!, bad.slice(1), { input: '', reject: false, timeout: 10_000 });
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toMatch(/Blocked by srt: not in network\.allowedDomains/);
  });
});

describe('violations', () => {
  it('lists each distinct refusal once, in order', () => {
    const lines = proxy.violations().map((v) => `${v.host}:${v.port} ${v.reason}`);
    expect(lines).toContain('other.test:80 not in network.allowedDomains');
    expect(lines).toContain(`denied.test:${B} denied for the test (network.deniedDomains: denied.test)`);
    expect(new Set(lines).size).toBe(lines.length);
  });
});
