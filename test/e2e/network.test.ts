// The network path end to end: real clients inside the real sandbox (bubblewrap, srt-init,
// its relays) reach servers this test starts on the host's loopback only through srt's proxy.
// Host servers listen on 127.0.0.2, which the sandbox's NO_PROXY (localhost,127.0.0.1,::1) does
// not cover, so clients send it to the proxy; the sandbox's own loopback is a different one.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { execFileSync } from 'node:child_process';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { closeServer, listenOn, selfSigned, testPki } from './proxy-fixtures.js';
import { execa } from 'execa';
import { keyValues, srt, SRT_BIN, tempDir } from './helpers.js';

const HOST = '127.0.0.2';
const tmp = tempDir('srt-net-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
const cert = selfSigned(['secure.test']);
let httpServer: http.Server;
let httpsServer: https.Server;
let otherServer: http.Server;
let echoServer: TcpServer;
let udp: UdpSocket;
let httpPort: number, httpsPort: number, otherPort: number, echoPort: number, udpPort: number;
let hostConnections = 0;
let sshServer: TcpServer;
let sshPort: number;
const sshBanners: string[] = [];
const udpReceived: string[] = [];

/** Serves `hello <path>` and, under /repo.git/, the files of a bare repository (git's dumb HTTP). */
function handler(repoDir: string) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? '/';
    if (url.startsWith('/repo.git/')) {
      try {
        res.end(readFileSync(join(repoDir, url.slice('/repo.git/'.length).split('?')[0]!)));
      } catch {
        res.statusCode = 404;
        res.end();
      }
      return;
    }
    if (url === '/simple/srt-demo/') {
      // A PEP 503 simple index page, for pip.
      res.setHeader('content-type', 'text/html');
      res.end('<html><body><a href="/files/srt_demo-1.2.3-py3-none-any.whl">srt_demo-1.2.3-py3-none-any.whl</a></body></html>');
      return;
    }
    if (url === '/srt-demo') {
      // An npm registry document, for `npm view`.
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ name: 'srt-demo', 'dist-tags': { latest: '1.2.3' }, versions: { '1.2.3': { name: 'srt-demo', version: '1.2.3' } } }));
      return;
    }
    res.end(`hello ${url}`);
  };
}

beforeAll(async () => {
  mkdirSync(home);
  mkdirSync(cwd);
  // A bare repository served over dumb HTTP for `git clone`.
  const work = join(tmp.path, 'src-repo');
  const bare = join(tmp.path, 'repo.git');
  const git = (dir: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], { cwd: dir, env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: '1' }, stdio: 'ignore' });
  mkdirSync(work);
  git(tmp.path, 'init', '-q', '--bare', bare);
  git(work, 'init', '-q');
  writeFileSync(join(work, 'README'), 'cloned through srt\n');
  git(work, 'add', 'README');
  git(work, 'commit', '-q', '-m', 'first');
  git(work, 'push', '-q', bare, 'HEAD:main');
  git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
  git(bare, 'update-server-info');

  httpServer = http.createServer(handler(bare));
  httpPort = await listenOn(httpServer, HOST);
  httpServer.on('connection', () => hostConnections++);
  httpsServer = https.createServer({ cert: cert.cert, key: cert.key }, handler(bare));
  httpsPort = await listenOn(httpsServer, HOST);
  otherServer = http.createServer((_req, res) => res.end('must not be reached'));
  otherPort = await listenOn(otherServer, HOST);
  echoServer = createTcpServer((s) => s.pipe(s));
  echoPort = await new Promise<number>((r) => echoServer.listen(0, HOST, () => r((echoServer.address() as { port: number }).port)));
  // A stand-in SSH server: records the client's identification line, then hangs up.
  sshServer = createTcpServer((sock) => {
    sock.write('SSH-2.0-srt-test\r\n');
    sock.once('data', (d) => { sshBanners.push(d.toString().split('\r\n')[0]!); sock.destroy(); });
    sock.on('error', () => {});
  });
  sshPort = await new Promise<number>((r) => sshServer.listen(0, HOST, () => r((sshServer.address() as { port: number }).port)));
  udp = createSocket('udp4');
  udp.on('message', (m) => udpReceived.push(m.toString()));
  udpPort = await new Promise<number>((r) => udp.bind(0, HOST, () => r(udp.address().port)));
});

afterAll(async () => {
  await Promise.all([closeServer(httpServer), closeServer(httpsServer), closeServer(otherServer)]);
  await new Promise<void>((r) => echoServer.close(() => r()));
  await new Promise<void>((r) => sshServer.close(() => r()));
  udp.close();
  tmp.cleanup();
  execFileSync('rm', ['-rf', cert.dir]);
});

/** Run a shell script in the sandbox; each check prints `name=result` lines. */
async function inSandbox(script: string, settings: object) {
  const file = join(tmp.path, `settings-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(settings));
  const r = await srt(['--settings', file, '-c', script], { home, cwd, env: { NODE_EXTRA_CA_CERTS: cert.certPath } });
  return { ...r, results: keyValues(r.stdout) };
}

describe('network through the proxy', () => {
  it('curl, python, node, git, npm, pip and SOCKS reach allowed destinations; others get 403; deny beats allow; ports hold', async () => {
    const base = `http://${HOST}`;
    const script = [
      `echo curl=$(curl -s --max-time 10 ${base}:${httpPort}/curl)`,
      `echo curl_tls=$(curl -s --max-time 10 --cacert ${cert.certPath} https://secure.test:${httpsPort}/tls --connect-to secure.test:${httpsPort}:${HOST}:${httpsPort} -o /dev/null -w '%{http_code}' || true)`,
      `echo curl_tls_ip=$(curl -s --max-time 10 -k https://${HOST}:${httpsPort}/tls)`,
      `echo denied=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' ${base}:${otherPort}/)`,
      `echo denied_reason=$(curl -s --max-time 10 ${base}:${otherPort}/ | tr -d '\\n')`,
      `echo unlisted=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://127.0.0.3:${httpPort}/)`,
      `echo python=$(python3 -c "import urllib.request; print(urllib.request.urlopen('${base}:${httpPort}/py', timeout=10).read().decode())")`,
      `echo python_blocked=$(python3 -c "
import urllib.request, urllib.error
try: urllib.request.urlopen('${base}:${otherPort}/', timeout=10)
except urllib.error.HTTPError as e: print(e.code)")`,
      `echo node_fetch=$(node -e "fetch('${base}:${httpPort}/fetch').then(r => r.text()).then(console.log)")`,
      `echo node_https=$(node -e "require('https').get('https://${HOST}:${httpsPort}/https', {rejectUnauthorized: false}, r => { let b=''; r.on('data', d => b += d); r.on('end', () => console.log(b)); })")`,
      `echo node_http=$(node -e "require('http').get('${base}:${httpPort}/nodehttp', r => { let b=''; r.on('data', d => b += d); r.on('end', () => console.log(b)); })")`,
      `git clone -q ${base}:${httpPort}/repo.git clone 2>/dev/null; echo git=$(cat clone/README)`,
      `echo npm=$(npm_config_cache=$TMPDIR/npm npm view srt-demo version --no-update-notifier --registry ${base}:${httpPort}/ 2>/dev/null)`,
      `echo pip=$(python3 -m pip index versions srt-demo --index-url ${base}:${httpPort}/simple/ --disable-pip-version-check 2>/dev/null | head -1)`,
      `echo socks=$(curl -s --max-time 10 --socks5-hostname 127.0.0.1:1080 ${base}:${httpPort}/socks)`,
      `curl -s --max-time 10 --socks5-hostname 127.0.0.1:1080 ${base}:${otherPort}/ >/dev/null; echo socks_blocked=$?`,
      // The ProxyCommand srt puts in GIT_SSH_COMMAND (ssh's route): a raw TCP stream via CONNECT.
      `proxy_command() { eval "$(printf '%s' "$GIT_SSH_COMMAND" | sed -e "s/^ssh -o 'ProxyCommand=//" -e "s/'$//" -e "s/%h/$1/" -e "s/%p/$2/")"; }`,
      `echo ssh_route=$(echo ping | proxy_command ${HOST} ${echoPort})`,
      `echo ssh_route_blocked=$(echo ping | proxy_command ${HOST} ${otherPort} 2>/dev/null)`,
    ].join('\n');
    const r = await inSandbox(script, {
      network: {
        allowedDomains: [HOST, 'secure.test'],
        deniedDomains: [`${HOST}:${otherPort}`],
        deniedDomainReasons: { [`${HOST}:${otherPort}`]: 'the test forbids this port' },
      },
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results).toMatchObject({
      curl: 'hello /curl',
      curl_tls_ip: 'hello /tls',
      denied: '403',
      unlisted: '403',
      python: 'hello /py',
      python_blocked: '403',
      node_fetch: 'hello /fetch',
      node_https: 'hello /https',
      node_http: 'hello /nodehttp',
      git: 'cloned through srt',
      npm: '1.2.3',
      pip: 'srt-demo (1.2.3)',
      socks: 'hello /socks',
      socks_blocked: '97',
      ssh_route: 'ping',
      ssh_route_blocked: '',
    });
    // TLS through the CONNECT tunnel, verified end to end against the server's own certificate.
    expect(r.results.curl_tls).toBe('200');
    expect(r.results.denied_reason).toContain('the test forbids this port');
    expect(r.stderr).toContain(`srt: blocked 127.0.0.3:${httpPort} — not in network.allowedDomains`);
    expect(r.stderr).toContain(`srt: blocked ${HOST}:${otherPort}`);
  });

  it('ssh through GIT_SSH_COMMAND reaches an allowed host:port through the proxy and is refused elsewhere', async () => {
    const ssh = (port: number) => `eval "$GIT_SSH_COMMAND -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -p ${port} git@${HOST} true" >/dev/null 2>&1`;
    const before = sshBanners.length;
    const r = await inSandbox(`${ssh(sshPort)}; ${ssh(otherPort)}; echo done=1`, { network: { allowedDomains: [`${HOST}:${sshPort}`] } });
    expect(r.results.done).toBe('1');
    // The real ssh client spoke to the allowed server only.
    expect(sshBanners.slice(before)).toEqual([expect.stringMatching(/^SSH-2\.0-OpenSSH/)]);
    expect(r.stderr).toContain(`srt: blocked ${HOST}:${otherPort} — not in network.allowedDomains`);
  });

  it('a port-restricted entry allows only that port', async () => {
    const r = await inSandbox([
      `echo allowed=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://${HOST}:${httpPort}/)`,
      `echo other_port=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://${HOST}:${otherPort}/)`,
    ].join('\n'), { network: { allowedDomains: [`${HOST}:${httpPort}`] } });
    expect(r.results).toMatchObject({ allowed: '200', other_port: '403' });
  });

  it('connections that ignore the proxy variables reach nothing on the host; UDP does not leave', async () => {
    const script = [
      `(exec 3<>/dev/tcp/${HOST}/${httpPort}) 2>/dev/null; echo bash_tcp=$?`,
      `echo node_net=$(node -e "const s=require('net').connect(${httpPort}, '${HOST}'); s.on('connect',()=>{console.log('connected');process.exit(0)}); s.on('error',e=>{console.log(e.code);process.exit(0)})")`,
      `echo python_raw=$(python3 -c "
import socket
s = socket.socket(); s.settimeout(5)
try: s.connect(('${HOST}', ${httpPort})); print('connected')
except OSError as e: print(type(e).__name__)")`,
      `echo curl_noproxy=$(curl -s --max-time 5 --noproxy '*' -o /dev/null -w '%{http_code}' http://${HOST}:${httpPort}/)`,
      `python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try: s.sendto(b'leak', ('${HOST}', ${udpPort})); print('udp=sent')
except OSError as e: print('udp=' + type(e).__name__)"`,
    ].join('\n');
    const before = hostConnections;
    const r = await inSandbox(script, { network: { allowedDomains: [HOST] } });
    // 127.0.0.2 inside is the sandbox's own loopback: nothing listens there.
    expect(r.results.bash_tcp).not.toBe('0');
    expect(r.results.node_net).toBe('ECONNREFUSED');
    expect(r.results.python_raw).not.toBe('connected');
    expect(r.results.curl_noproxy).toBe('000');
    // A datagram to 127.0.0.2 goes to the sandbox's own loopback; the host's listener must see nothing.
    expect(r.results.udp).toBeDefined();
    await new Promise((res) => setTimeout(res, 200));
    expect(udpReceived).toEqual([]);
    expect(hostConnections).toBe(before);
  });

  it('an allowed hostname that resolves to loopback is refused; an allowed IP literal or `localhost` itself is not', async () => {
    // `localhost` is in NO_PROXY, so curl is told to use the proxy explicitly. `*:PORT` allows the
    // name but does not name the host's loopback; `localhost:PORT` does (local-services.test.ts).
    const script = (port: number) => [
      `echo by_name=$(curl -s --max-time 10 --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%{http_code}' http://localhost:${port}/)`,
      `echo by_ip=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://${HOST}:${port}/)`,
    ].join('\n');
    const wildcard = await inSandbox(script(httpPort), { network: { allowedDomains: [`*:${httpPort}`, `${HOST}:${httpPort}`] } });
    expect(wildcard.results).toMatchObject({ by_name: '403', by_ip: '200' });
    expect(wildcard.stderr).toMatch(new RegExp(`srt: blocked localhost:${httpPort} — resolves only to blocked addresses: .*loopback`));
    // The host's localhost is 127.0.0.1, not the 127.0.0.2 this server listens on: refused upstream.
    const named = await inSandbox(script(httpPort), { network: { allowedDomains: [`localhost:${httpPort}`, `${HOST}:${httpPort}`] } });
    expect(named.results).toMatchObject({ by_name: '502', by_ip: '200' });
    expect(named.stderr).not.toContain('srt: blocked');
  });

  it('--control-fd replaces the network lists of a running sandbox; a bad line changes nothing', async () => {
    const url = `http://${HOST}:${httpPort}/live`;
    // A CLI settings file the command can write (it is in cwd): updates must not re-read it.
    const cliSettings = join(cwd, 'cli-settings.json');
    writeFileSync(cliSettings, '{}');
    const script = [
      `echo '{"network": {"allowedDomains": ["${HOST}"]}}' > ${cliSettings}`,
      `echo first=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' ${url})`,
      // Wait (bounded) until the new policy lets the request through.
      `for i in $(seq 1 100); do code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' ${url}); [ "$code" = 200 ] && break; sleep 0.1; done`,
      'echo second=$code',
      `echo third=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://${HOST}:${otherPort}/)`,
    ].join('; ');
    const child = execa(process.execPath, [SRT_BIN, '--settings', cliSettings, '--control-fd', '5', '-c', script], {
      cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false, timeout: 60_000,
      stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', 'pipe'],
    });
    const control = (child.stdio as unknown as import('node:stream').Writable[])[5]!;
    child.stdout!.on('data', (d: Buffer) => {
      if (!d.toString().includes('first=')) return;
      control.write('{"network": {"allowedDomains": 7}}\n');
      control.write(JSON.stringify({ network: { allowedDomains: [`${HOST}:${httpPort}`] } }) + '\n');
    });
    const r = await child;
    expect(r.stdout).toContain('first=403');
    expect(r.stdout).toContain('second=200');
    expect(r.stdout).toContain('third=403');
    expect(r.stderr).toMatch(/srt: --control-fd 5 line 1: network\.allowedDomains: .*\(ignored; the previous policy stays\)/);
    expect(r.exitCode).toBe(0);
  });

  it('--control-fd: a line replaces the whole configuration below managed scope, so it revokes what a --settings file granted', async () => {
    const url = `http://${HOST}:${httpPort}/revoke`;
    const granted = join(cwd, 'granted.json');
    writeFileSync(granted, JSON.stringify({ network: { allowedDomains: [`${HOST}:${httpPort}`] } }));
    const script = [
      `echo first=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' ${url})`,
      // Wait (bounded) until the next connection is refused.
      `for i in $(seq 1 100); do code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' ${url}); [ "$code" != 200 ] && break; sleep 0.1; done`,
      'echo second=$code',
    ].join('; ');
    const child = execa(process.execPath, [SRT_BIN, '--settings', granted, '--control-fd', '5', '-c', script], {
      cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false, timeout: 60_000,
      stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', 'pipe'],
    });
    const control = (child.stdio as unknown as import('node:stream').Writable[])[5]!;
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('first=')) control.write('{"network": {"allowedDomains": []}, "filesystem": {"allowWrite": ["elsewhere"]}}\n');
    });
    const r = await child;
    expect(r.stdout).toContain('first=200');
    expect(r.stdout).toContain('second=403');
    expect(r.stderr).toContain(`srt: blocked ${HOST}:${httpPort} — not in network.allowedDomains`);
    // What cannot change mid-run is said, not silently dropped.
    expect(r.stderr).toContain('srt: warning: --control-fd 5 line 1: filesystem.allowWrite cannot change while the command runs');
    expect(r.exitCode).toBe(0);
  });
});

describe("node's http2.connect through the preload", () => {
  // h2 over TLS and h2c (prior knowledge) on 127.0.0.2, which is in no NO_PROXY and, allowed
  // without a port, has no forwarded listener inside: the proxy is the only way there.
  const seen: string[] = [];
  let pki: ReturnType<typeof testPki>;
  let h2: http2.Http2SecureServer;
  let h2c: http2.Http2Server;
  const answer = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    seen.push(`${req.httpVersion} ${req.url}`);
    res.end(`h2 ${req.httpVersion} ${req.url}`);
  };
  beforeAll(async () => {
    pki = testPki(tmp.path);
    const leaf = pki.leaf(['IP:127.0.0.2']);
    h2 = http2.createSecureServer({ cert: leaf.cert, key: leaf.key }, answer);
    h2c = http2.createServer(answer);
    await Promise.all([h2, h2c].map((s) => new Promise<void>((r) => s.listen(0, HOST, r))));
    // A CommonJS and an ESM client (a named import of node:http2 must see the preload's connect too).
    const client = (imp: string) => `${imp}
const [url, name] = process.argv.slice(2);
const session = connect(url);
session.on('error', (e) => console.log(name + '=error ' + e.message));
const req = session.request({ ':path': '/' + name });
let body = '';
req.setEncoding('utf8');
req.on('data', (d) => (body += d));
req.on('end', () => { console.log(name + '=' + body); session.close(); });
req.on('error', () => {});
`;
    writeFileSync(join(cwd, 'h2.cjs'), client("const { connect } = require('node:http2');"));
    writeFileSync(join(cwd, 'h2.mjs'), client("import { connect } from 'node:http2';"));
  });
  afterAll(async () => {
    await Promise.all([h2, h2c].map((s) => new Promise((r) => s.close(r))));
  });
  const port = (s: http2.Http2SecureServer | http2.Http2Server) => (s.address() as AddressInfo).port;
  const run = async (settings: object) => {
    const file = join(tmp.path, `settings-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(settings));
    const tls = `https://${HOST}:${port(h2)}`;
    const script = [
      `node h2.cjs ${tls} cjs`,
      `node h2.mjs ${tls} esm`,
      `node h2.cjs http://${HOST}:${port(h2c)} h2c`,
    ].join('\n');
    const r = await srt(['--debug', '--settings', file, '-c', script], { home, cwd, env: { NODE_EXTRA_CA_CERTS: pki.caPath } });
    return { ...r, results: keyValues(r.stdout) };
  };

  it('h2 over TLS (CommonJS and ESM) and h2c reach an allowed host through the proxy, with and without TLS termination', async () => {
    for (const tlsTerminate of [undefined, { extraCaCertPaths: [pki.caPath] }]) {
      seen.length = 0;
      const r = await run({ network: { allowedDomains: [HOST], ...(tlsTerminate ? { tlsTerminate } : {}) } });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.results, JSON.stringify(tlsTerminate)).toEqual({ cjs: 'h2 2.0 /cjs', esm: 'h2 2.0 /esm', h2c: 'h2 2.0 /h2c' });
      expect(seen.sort()).toEqual(['2.0 /cjs', '2.0 /esm', '2.0 /h2c']);
      expect(r.stderr).toContain(`proxy: connect allow ${HOST}:${port(h2)}`);
      expect(r.stderr).toContain(`proxy: connect allow ${HOST}:${port(h2c)}`);
      if (tlsTerminate) expect(r.stderr).toContain(`proxy: connect ${HOST}:${port(h2)}: terminating TLS (SNI none, ALPN h2)`);
    }
  }, 120_000);

  it('a host the policy does not allow: the session fails with the proxy\'s refusal, nothing reaches the server, srt reports it', async () => {
    seen.length = 0;
    const r = await run({ network: { allowedDomains: ['127.0.0.3'] } });
    expect(r.results).toEqual({
      cjs: `error proxy refused CONNECT ${HOST}:${port(h2)}: 403 Blocked by srt: not in network.allowedDomains`,
      esm: `error proxy refused CONNECT ${HOST}:${port(h2)}: 403 Blocked by srt: not in network.allowedDomains`,
      h2c: `error proxy refused CONNECT ${HOST}:${port(h2c)}: 403 Blocked by srt: not in network.allowedDomains`,
    });
    expect(seen).toEqual([]);
    expect(r.stderr).toContain(`srt: blocked ${HOST}:${port(h2)} — not in network.allowedDomains`);
  }, 240_000);
});
