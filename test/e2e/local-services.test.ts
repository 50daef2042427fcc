// Local services both ways (SPEC §6), through the real srt: host loopback services reached from
// inside by clients that know nothing about proxies (a forwarded `localhost:PORT`), and servers
// the command starts reached from the host (`network.exposePorts`). Every host server here
// listens on the host's loopback only.
import { execa } from 'execa';
import { createServer as createTcpServer, connect, type Server as TcpServer } from 'node:net';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INIT_HELPER_PATH } from '../../src/platform/init-helper.js';
import { keyValues, processesWith, srt, SRT_BIN, srtManaged, startBackground, stopStragglers, tempDir, track, type DryRunPlan } from './helpers.js';
import { closeServer, listenOn } from './proxy-fixtures.js';

const tmp = tempDir('srt-local-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
/** What each host server saw: `port path` per request. */
const seen: string[] = [];
let service: http.Server, other: http.Server, upstream: TcpServer;
let PORT: number, OTHER: number, UPSTREAM: number;
const upstreamSaw: string[] = [];

function hostService(label: string): http.Server {
  return http.createServer((req, res) => {
    seen.push(`${label} ${req.url}`);
    res.end(`${label} says hello to ${req.url}`);
  });
}

/** A free host loopback port (bound and released). */
function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve) => {
    const s = createTcpServer().listen(0, host, () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** Connect from the host; resolves with what the peer sent before closing, or the error code. */
function fetchFromHost(port: number, path = '/', host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, host, () => s.end(`GET ${path} HTTP/1.0\r\n\r\n`));
    let b = '';
    s.setTimeout(10_000, () => s.destroy());
    s.on('data', (d) => (b += d));
    s.on('close', () => resolve(b));
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
}

const HAS_IPV6 = await new Promise<boolean>((resolve) => {
  const s = createTcpServer();
  s.once('error', () => resolve(false));
  s.listen(0, '::1', () => s.close(() => resolve(true)));
});

beforeAll(async () => {
  mkdirSync(home);
  mkdirSync(cwd);
  service = hostService('service');
  PORT = await listenOn(service);
  other = hostService('other');
  OTHER = await listenOn(other);
  // Stands in for a corporate proxy srt was told to chain through: it must see nothing.
  upstream = createTcpServer((s) => {
    s.once('data', (d) => upstreamSaw.push(d.toString().split('\r\n')[0]!));
    s.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
  });
  UPSTREAM = await new Promise<number>((r) => upstream.listen(0, '127.0.0.1', () => r((upstream.address() as { port: number }).port)));
});

afterAll(async () => {
  await stopStragglers();
  await Promise.all([closeServer(service), closeServer(other)]);
  await new Promise<void>((r) => upstream.close(() => r()));
  tmp.cleanup();
});

function settingsFile(settings: object): string {
  const file = join(tmp.path, `settings-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(settings));
  return file;
}

async function inSandbox(script: string, settings: object, opts: { env?: Record<string, string>; args?: string[] } = {}) {
  const r = await srt([...(opts.args ?? []), '--settings', settingsFile(settings), '-c', script], { home, cwd, ...(opts.env ? { env: opts.env } : {}) });
  return { ...r, results: keyValues(r.stdout) };
}

// Raw clients: none of them knows anything about proxies. Prints NAME=BODY, NAME=closed when the
// connection ends without a response, or NAME=ERROR.
const pyGet = (name: string, host: string, port: number, path: string) => `python3 -c "
import socket
try:
    s = socket.create_connection(('${host}', ${port}), timeout=10); s.sendall(b'GET ${path} HTTP/1.0\\r\\n\\r\\n')
    b = b''
    while True:
        d = s.recv(4096)
        if not d: break
        b += d
    print('${name}=' + (b.decode().split('\\r\\n\\r\\n', 1)[1] if b'\\r\\n\\r\\n' in b else 'closed'))
except OSError as e: print('${name}=' + type(e).__name__)"`;
const nodeGet = (name: string, host: string, port: number, path: string) =>
  `node -e "const s=require('net').connect(${port},'${host}',()=>s.end('GET ${path} HTTP/1.0\\r\\n\\r\\n'));let b='';s.on('data',d=>b+=d);s.on('end',()=>console.log('${name}='+b.split('\\r\\n\\r\\n')[1]));s.on('error',e=>console.log('${name}='+e.code))"`;

describe('forwarded host loopback ports (allowedDomains localhost:PORT)', () => {
  it('python, node and bash raw TCP, and curl http://localhost:PORT with NO_PROXY as srt sets it, reach the host service through the gate', async () => {
    const before = seen.length;
    const r = await inSandbox([
      'echo no_proxy=$NO_PROXY',
      pyGet('python', '127.0.0.1', PORT, '/py'),
      nodeGet('node_v6', '::1', PORT, '/node6'),
      nodeGet('node_name', 'localhost', PORT, '/nodename'),
      `exec 3<>/dev/tcp/127.0.0.1/${PORT} && printf 'GET /bash HTTP/1.0\\r\\n\\r\\n' >&3 && echo bash=$(sed -n '$p' <&3)`,
      `echo curl=$(curl -sS --max-time 10 http://localhost:${PORT}/curl)`,
    ].join('\n'), { network: { allowedDomains: [`localhost:${PORT}`] } }, { args: ['--debug'] });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results).toMatchObject({
      no_proxy: 'localhost,127.0.0.1,::1',
      python: 'service says hello to /py',
      node_v6: 'service says hello to /node6', // the [::1] listener; the host service is on 127.0.0.1
      node_name: 'service says hello to /nodename',
      bash: 'service says hello to /bash',
      curl: 'service says hello to /curl',
    });
    expect(seen.slice(before).sort()).toEqual(['/bash', '/curl', '/node6', '/nodename', '/py'].map((p) => `service ${p}`));
    // Decided and logged by the proxy like any connection; nothing refused.
    expect(r.stderr).toContain(`srt[debug]: proxy: forward allow localhost:${PORT} (rule localhost:${PORT}) -> 127.0.0.1, ::1`);
    expect(r.stderr).not.toContain('srt: blocked');
  });

  it('a port that is not listed is refused and reported; nothing reaches the host', async () => {
    const before = seen.length;
    const r = await inSandbox([
      pyGet('raw', '127.0.0.1', OTHER, '/raw'),
      `echo proxied=$(curl -s --max-time 10 --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%{http_code}' http://localhost:${OTHER}/)`,
    ].join('\n'), { network: { allowedDomains: [`localhost:${PORT}`] } });
    // Inside, nothing listens on the unlisted port: the sandbox's loopback refuses it.
    expect(r.results.raw).toBe('ConnectionRefusedError');
    expect(r.results.proxied).toBe('403');
    expect(r.stderr).toContain(`srt: blocked localhost:${OTHER} — not in network.allowedDomains`);
    expect(seen.slice(before)).toEqual([]);
  });

  it('literal loopback entries forward only their own address; an allow `*` opens no loopback', async () => {
    const r = await inSandbox([
      pyGet('v4', '127.0.0.1', PORT, '/v4'),
      pyGet('v6', '::1', PORT, '/v6'),
    ].join('\n'), { network: { allowedDomains: [`127.0.0.1:${PORT}`] } });
    expect(r.results).toEqual({ v4: 'service says hello to /v4', v6: 'ConnectionRefusedError' });

    const star = await inSandbox([
      pyGet('raw', '127.0.0.1', PORT, '/star'),
      `echo proxied=$(curl -s --max-time 10 --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%{http_code}' http://localhost:${PORT}/)`,
    ].join('\n'), { network: { allowedDomains: ['*'] } });
    expect(star.results).toEqual({ raw: 'ConnectionRefusedError', proxied: '403' });
    expect(star.stderr).toMatch(new RegExp(`srt: blocked localhost:${PORT} — resolves only to blocked addresses: .*loopback`));
  });

  it.skipIf(!HAS_IPV6)('an [::1]-only host service is reached through localhost:PORT and [::1]:PORT', async () => {
    const v6 = hostService('v6service');
    const port = await listenOn(v6, '::1');
    try {
      const r = await inSandbox([
        pyGet('via_v4', '127.0.0.1', port, '/a'), // localhost: 127.0.0.1 refuses on the host, ::1 answers
        pyGet('via_v6', '::1', port, '/b'),
      ].join('\n'), { network: { allowedDomains: [`localhost:${port}`] } });
      expect(r.results).toEqual({ via_v4: 'v6service says hello to /a', via_v6: 'v6service says hello to /b' });
      const literal = await inSandbox(pyGet('v6', '::1', port, '/c'), { network: { allowedDomains: [`[::1]:${port}`] } });
      expect(literal.results).toEqual({ v6: 'v6service says hello to /c' });
    } finally {
      await closeServer(v6);
    }
  });

  it('--control-fd updates apply to the next connection: denied, reported, allowed again', async () => {
    const settings = settingsFile({ network: { allowedDomains: [`localhost:${PORT}`] } });
    // Each step waits for the test's go (a line on stdin, sent after the control line), then
    // retries (bounded) until the new policy shows: a control line applies to the next connection.
    const attempt = (n: number) => pyGet(`step${n}`, '127.0.0.1', PORT, `/step${n}`);
    const until = (n: number, test: string) =>
      `read line; for i in $(seq 1 100); do r=$(${attempt(n)}); case "$r" in ${test}) break;; esac; sleep 0.1; done; echo "$r"`;
    const script = `${attempt(1)}; echo waiting1; ${until(2, '*=closed')}; echo waiting2; ${until(3, '*hello*')}`;
    const child = execa(process.execPath, [SRT_BIN, '--settings', settings, '--control-fd', '5', '-c', script], {
      cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, extendEnv: false, reject: false, timeout: 60_000,
      stdio: ['pipe', 'pipe', 'pipe', 'ignore', 'ignore', 'pipe'],
    });
    track(child);
    const control = (child.stdio as unknown as import('node:stream').Writable[])[5]!;
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      // After each step: a new whole config on the control fd, then the go for the next step.
      const send = (doc: object) => {
        control.write(`${JSON.stringify(doc)}\n`);
        child.stdin!.write('\n');
      };
      if (out.includes('waiting1') && !out.includes('sent1')) { out += 'sent1'; send({ network: { deniedDomains: [`localhost:${PORT}`] } }); }
      // Each line is the whole configuration below managed scope: the grant is named again.
      if (out.includes('waiting2') && !out.includes('sent2')) { out += 'sent2'; send({ network: { allowedDomains: [`localhost:${PORT}`] } }); child.stdin!.end(); }
    });
    const r = await child;
    const results = keyValues(String(r.stdout));
    expect(results.step1).toBe('service says hello to /step1');
    expect(results.step2).toBe('closed'); // the proxy refused it and closed it at once
    expect(results.step3).toBe('service says hello to /step3');
    expect(String(r.stderr)).toContain(`srt: blocked localhost:${PORT} — denied by network.deniedDomains (localhost:${PORT})`);
    expect(r.exitCode).toBe(0);
  });

  it('with a corporate HTTP(S)_PROXY, loopback targets are never sent to it', async () => {
    const before = upstreamSaw.length;
    const proxyUrl = `http://127.0.0.1:${UPSTREAM}`;
    const r = await inSandbox([
      pyGet('raw', '127.0.0.1', PORT, '/corp-raw'),
      `echo proxied=$(curl -sS --max-time 10 --noproxy '' -x http://127.0.0.1:3128 http://localhost:${PORT}/corp-proxied)`,
      `echo tunnel=$(curl -sS --max-time 10 --noproxy '' -x http://127.0.0.1:3128 -p http://127.0.0.1:${PORT}/corp-tunnel)`,
    ].join('\n'), { network: { allowedDomains: [`localhost:${PORT}`, `127.0.0.1:${PORT}`] } }, {
      env: { HTTPS_PROXY: proxyUrl, HTTP_PROXY: proxyUrl },
    });
    expect(r.results).toEqual({
      raw: 'service says hello to /corp-raw',
      proxied: 'service says hello to /corp-proxied',
      tunnel: 'service says hello to /corp-tunnel',
    });
    expect(upstreamSaw.slice(before)).toEqual([]);
  });

  it('the command cannot take a forwarded port (or srt\'s own) over: every bind to it fails, on any address, with any reuse option', async () => {
    const r = await inSandbox(`python3 -c "
import socket
out = []
for port in (${PORT}, 3128, 1080):
    for fam, addr in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET, '0.0.0.0'), (socket.AF_INET6, '::1'), (socket.AF_INET6, '::')):
        for opts in ((), (socket.SO_REUSEADDR,), (socket.SO_REUSEADDR, socket.SO_REUSEPORT)):
            s = socket.socket(fam)
            for o in opts: s.setsockopt(socket.SOL_SOCKET, o, 1)
            try: s.bind((addr, port)); s.listen(); out.append('bound %s %s %s' % (addr, port, opts))
            except OSError as e: pass
            s.close()
print('bound=' + ';'.join(out))"`, { network: { allowedDomains: [`localhost:${PORT}`] } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results.bound).toBe('');
  });

  it('srt\'s own ports cannot be forwarded or exposed: a settings error, nothing runs', async () => {
    const marker = join(tmp.path, 'ran-own-port');
    for (const [settings, message] of [
      [{ network: { allowedDomains: ['localhost:3128'] } }, /network\.allowedDomains\[0\]: "localhost:3128": .*srt's HTTP proxy listens on 127\.0\.0\.1:3128 inside the sandbox; this port cannot be forwarded/],
      [{ network: { allowedDomains: ['[::1]:1080'] } }, /"\[::1\]:1080": .*srt's SOCKS5 proxy/],
      [{ network: { exposePorts: [3128] } }, /network\.exposePorts\[0\]: "3128": port 3128 cannot be exposed: srt's HTTP proxy/],
      [{ network: { exposePorts: ['9000:1080'] } }, /network\.exposePorts\[0\]: "9000:1080": port 1080 cannot be exposed/],
      [{ network: { exposePorts: ['0.0.0.0:9000:9000'] } }, /only the host's loopback can be exposed/],
      [{ network: { allowedDomains: [`localhost:${PORT}`], exposePorts: [PORT] } }, new RegExp(`sandbox port ${PORT} is already forwarded from the host by network.allowedDomains "localhost:${PORT}"`)],
    ] as const) {
      const r = await inSandbox(`touch ${marker}`, settings);
      expect(r.exitCode, JSON.stringify(settings)).toBe(125);
      expect(r.stderr).toMatch(message);
    }
    const flag = await srt(['--allow-domain', 'localhost:3128', '--', 'true'], { home, cwd });
    expect([flag.exitCode, flag.stderr]).toEqual([125, expect.stringMatching(/^srt: --allow-domain: "localhost:3128": /)]);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('a name that resolves to the host\'s loopback (SPEC §6)', () => {
  // api.fake.test is mapped to 127.0.0.1 by a private /etc/hosts (srtManaged runs srt in a mount
  // namespace of its own); the proxy resolves it there like any name.
  const hosts = '127.0.0.1 localhost\n::1 localhost ip6-localhost\n127.0.0.1 api.fake.test\n';
  const named = async (allowedDomains: string[], script: string, env: Record<string, string> = {}) => {
    const r = await srtManaged(null, ['--settings', settingsFile({ network: { allowedDomains } }), '-c', script], { home, cwd, scratch: tmp.path, hosts, env });
    return { ...r, results: keyValues(r.stdout) };
  };
  const clients = (port: number, tag: string) => [
    `echo curl=$(curl -s --max-time 10 -w ' %{http_code}' http://api.fake.test:${port}/${tag}-curl | tr -d '\\n')`,
    `python3 -c "
import urllib.request, urllib.error
try: print('python=' + urllib.request.urlopen('http://api.fake.test:${port}/${tag}-py', timeout=10).read().decode())
except urllib.error.HTTPError as e: print('python=%d' % e.code)"`,
    `node -e "fetch('http://api.fake.test:${port}/${tag}-node').then(async r=>console.log('node='+(r.ok?await r.text():r.status)),e=>console.log('node='+e.message))"`,
  ].join('\n');

  it('is reached by curl, python and node when the loopback literal with its port is allowed too; never through a corporate proxy', async () => {
    const before = seen.length;
    const corp = upstreamSaw.length;
    const proxyUrl = `http://127.0.0.1:${UPSTREAM}`;
    const r = await named(['api.fake.test', `127.0.0.1:${PORT}`], clients(PORT, 'ok'), { HTTPS_PROXY: proxyUrl, HTTP_PROXY: proxyUrl });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results).toEqual({
      curl: 'service says hello to /ok-curl 200',
      python: 'service says hello to /ok-py',
      node: 'service says hello to /ok-node',
    });
    expect(seen.slice(before).sort()).toEqual(['service /ok-curl', 'service /ok-node', 'service /ok-py']);
    expect(upstreamSaw.slice(corp)).toEqual([]);
  });

  it('stays refused without the literal, or with the literal on another port; nothing reaches the service', async () => {
    const before = seen.length;
    for (const allowed of [['api.fake.test'], ['api.fake.test', `127.0.0.1:${OTHER}`], ['*']]) {
      const r = await named(allowed, clients(PORT, 'no'));
      // (node's fetch tunnels with CONNECT even for http:, and reports a refused tunnel so.)
      expect(r.results, JSON.stringify(allowed)).toEqual({ curl: expect.stringMatching(/^srt: blocked .* 403$/), python: '403', node: 'fetch failed' });
      expect(r.stderr).toContain(`srt: blocked api.fake.test:${PORT} — resolves only to blocked addresses: 127.0.0.1 is a loopback address (allow 127.0.0.1:${PORT} to reach it)`);
    }
    expect(seen.slice(before)).toEqual([]);
  }, 120_000);
});

describe('exposed ports (network.exposePorts)', () => {
  it('a python3 -m http.server started inside is fetched from the host with curl; the port is closed after the run', async () => {
    const port = await freePort();
    const settings = settingsFile({ network: { exposePorts: [port] } });
    const www = join(tmp.path, 'www');
    mkdirSync(www, { recursive: true });
    writeFileSync(join(www, 'index.html'), 'served from inside the sandbox\n');
    // The server stops once the host has fetched the page (bounded by its own timeout).
    const script = `cd ${www} && (timeout 20 python3 -m http.server ${port} >/dev/null 2>&1 &) && ` +
      `for i in $(seq 1 200); do python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}))" 2>/dev/null && break; sleep 0.05; done; ` +
      `echo; echo ready; read line`;
    const child = execa(process.execPath, [SRT_BIN, '--settings', settings, '-c', script], {
      cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, extendEnv: false, reject: false, timeout: 60_000, stdin: 'pipe',
    });
    track(child);
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (d: Buffer) => { if (d.toString().includes('ready')) resolve(); });
      void child.then(() => resolve());
    });
    const curl = await execa('curl', ['-sS', '--max-time', '10', `http://127.0.0.1:${port}/index.html`], { reject: false });
    expect(curl.stdout).toBe('served from inside the sandbox');
    child.stdin!.end('\n');
    const r = await child;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(await fetchFromHost(port)).toBe('ECONNREFUSED');
  });

  it('--expose PORT: a server started inside on 127.0.0.1 is reached from the host at 127.0.0.1, [::1] and localhost; both closed after the run', async () => {
    const port = await freePort();
    const www = join(tmp.path, 'www-expose');
    mkdirSync(www, { recursive: true });
    writeFileSync(join(www, 'index.html'), 'served through --expose\n');
    const script = `cd ${www} && (timeout 20 python3 -m http.server --bind 127.0.0.1 ${port} >/dev/null 2>&1 &) && ` +
      `for i in $(seq 1 200); do python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}))" 2>/dev/null && break; sleep 0.05; done; ` +
      `echo; echo ready; read line`;
    const child = execa(process.execPath, [SRT_BIN, '--expose', String(port), '-c', script], {
      cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, extendEnv: false, reject: false, timeout: 60_000, stdin: 'pipe',
    });
    track(child);
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (d: Buffer) => { if (d.toString().includes('ready')) resolve(); });
      void child.then(() => resolve());
    });
    const get = (url: string) => execa('curl', ['-sS', '-g', '--max-time', '10', url], { reject: false });
    expect((await get(`http://127.0.0.1:${port}/index.html`)).stdout).toBe('served through --expose');
    if (HAS_IPV6) expect((await get(`http://[::1]:${port}/index.html`)).stdout).toBe('served through --expose');
    // Node's localhost is whichever address the resolver lists first.
    expect(await fetchFromHost(port, '/index.html', 'localhost')).toMatch(/\r\n\r\nserved through --expose\n$/);
    child.stdin!.end('\n');
    const r = await child;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(r.stderr).toBe('');
    expect(await fetchFromHost(port)).toBe('ECONNREFUSED');
    if (HAS_IPV6) expect(await fetchFromHost(port, '/', '::1')).toBe('ECONNREFUSED');
  });

  it('two concurrent runs exposing one port: the second exits 125 clearly and runs nothing', async () => {
    const port = await freePort();
    const settings = settingsFile({ network: { exposePorts: [`127.0.0.1:${port}:3000`] } });
    const first = await startBackground(['--settings', settings, '--', 'sh', '-c', 'echo x; echo ready; exec sleep 30'], home, cwd);
    try {
      const marker = join(tmp.path, 'second-ran');
      const second = await srt(['--settings', settings, '--', 'touch', marker], { home, cwd });
      expect(second.exitCode).toBe(125);
      expect(second.stderr).toBe(`srt: network.exposePorts: the host's 127.0.0.1:${port} is already in use (another srt run or another program listens there); free it or expose a different port`);
      expect(existsSync(marker)).toBe(false);
      // Nothing of the second run is left: no run directory besides the first run's.
      expect(readdirSync(join(home, '.srt', 'run')).filter((d) => !d.startsWith(`${first.child.pid}-`))).toEqual([]);
    } finally {
      first.child.kill('SIGTERM');
      await first.exit;
    }
  });

  it('project settings may not expose ports (ignored with a warning)', async () => {
    const repo = join(tmp.path, 'repo');
    mkdirSync(join(repo, '.srt'), { recursive: true });
    mkdirSync(join(repo, '.git'), { recursive: true });
    const port = await freePort();
    writeFileSync(join(repo, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(repo, '.srt', 'settings.json'), JSON.stringify({ network: { exposePorts: [port] } }));
    const r = await srt(['--dry-run', '--json', '--', 'true'], { home, cwd: repo });
    expect(r.stderr).toMatch(/\.srt\/settings\.json: network\.exposePorts: ignored — project settings \(which come with the repository\) may not make ports inside the sandbox reachable from the host/);
    expect((JSON.parse(r.stdout) as DryRunPlan).argv).not.toContain('--host-listen');
  });

  it('srt config and --dry-run list the forwarded and exposed ports', async () => {
    const settings = settingsFile({ network: { allowedDomains: ['localhost:5432', '[::1]:6379', 'example.com'], exposePorts: [3000, '127.0.0.1:8081:80'] } });
    const config = await srt(['config', '--settings', settings], { home, cwd });
    expect(config.stdout).toContain('host 127.0.0.1:3000 → sandbox 127.0.0.1:3000');
    expect(config.stdout).toContain('host [::1]:3000 → sandbox 127.0.0.1:3000 (where the host has an IPv6 loopback)');
    expect(config.stdout).toContain('host 127.0.0.1:8081 → sandbox 127.0.0.1:80');
    expect(config.stdout).toMatch(/sandbox 127\.0\.0\.1:5432, \[::1\]:5432 → host localhost:5432 +\(localhost:5432, cli /);
    expect(config.stdout).toMatch(/sandbox \[::1\]:6379 → host \[::1\]:6379/);
    const json = JSON.parse((await srt(['config', '--json', '--settings', settings], { home, cwd })).stdout);
    expect(json.forwardedPorts).toEqual([
      { value: 'localhost:5432', listen: ['127.0.0.1:5432', '[::1]:5432'], source: { scope: 'cli', file: settings } },
      { value: '[::1]:6379', listen: ['[::1]:6379'], source: { scope: 'cli', file: settings } },
    ]);
    expect(json.settings.network.exposePorts.map((e: { value: string }) => e.value)).toEqual(['127.0.0.1:3000:3000', '[::1]:3000:3000', '127.0.0.1:8081:80']);
    const dry = await srt(['--dry-run', '--settings', settings, '--', 'true'], { home, cwd });
    expect(dry.exitCode, dry.stderr).toBe(0);
    // srt-init binds the host's listeners, then runs bwrap.
    const { argv } = JSON.parse((await srt(['--dry-run', '--json', '--settings', settings, '--', 'true'], { home, cwd })).stdout) as DryRunPlan;
    const listens = HAS_IPV6 ? ['6:127.0.0.1:3000', '7:[::1]:3000', '8:127.0.0.1:8081'] : ['6:127.0.0.1:3000', '7:127.0.0.1:8081'];
    expect(argv.slice(0, argv.indexOf('--'))).toEqual([INIT_HELPER_PATH, ...listens.flatMap((l) => ['--host-listen', l])]);
    expect(argv[argv.indexOf('--') + 1]).toMatch(/\/bwrap$/);
    expect(argv).not.toContain('CAP_NET_BIND_SERVICE');
    expect(dry.stdout).toContain('sandbox 127.0.0.1:5432, [::1]:5432 → host localhost:5432, each connection decided by srt\'s proxy (network.allowedDomains "localhost:5432")');
    expect(dry.stdout).toContain('host 127.0.0.1:8081 → sandbox 127.0.0.1:80 (network.exposePorts');
    // Connecting to sandbox port 80 needs no capability (above); listening on a forwarded port
    // below 1024 does. Below 1024 only for root: bubblewrap gives other callers a user namespace
    // that does not own the network namespace.
    const low = await srt(['--dry-run', '--allow-domain', 'localhost:80', '--', 'true'], { home, cwd });
    const lowArgv = (JSON.parse((await srt(['--dry-run', '--json', '--allow-domain', 'localhost:80', '--', 'true'], { home, cwd })).stdout) as DryRunPlan).argv;
    if (process.getuid!() === 0) {
      expect(lowArgv.join(' ')).toContain('--cap-add CAP_NET_BIND_SERVICE');
      expect(low.stdout).toContain('sandbox 127.0.0.1:80, [::1]:80 → host localhost:80');
    } else {
      expect(lowArgv).not.toContain('CAP_NET_BIND_SERVICE');
      expect(low.stdout).not.toContain('→ host localhost:80');
      expect(low.stdout).toContain('srt: warning: network.allowedDomains "localhost:80" (cli --allow-domain) is not forwarded into the sandbox: ports below 1024 can be listened on inside only when srt runs as root');
    }
  });
});

describe('the relays themselves', () => {
  /** Every process descending from `root`. */
  function descendants(root: number): number[] {
    const children = new Map<number, number[]>();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
      } catch { /* gone */ }
    }
    const out: number[] = [];
    const walk = (pid: number) => { for (const c of children.get(pid) ?? []) { out.push(c); walk(c); } };
    walk(root);
    return out;
  }
  const comm = (pid: number) => { try { return readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return 'gone'; } };
  const alive = (pid: number) => { try { return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; } };

  it('no socat during a run: srt, bwrap, the helper, its relay and the command only; inside, the relay is invisible', async () => {
    const port = await freePort();
    const settings = settingsFile({ network: { allowedDomains: [`localhost:${PORT}`], exposePorts: [port] } });
    const marker = `8${process.pid}${Date.now() % 100000}`;
    // The command's own descriptors: stdio only (the exposed host socket went to the relay alone).
    // ps alone first (in a pipeline it would race the other members' exec and list them as sh).
    const bg = await startBackground(['--settings', settings, '--', 'sh', '-c', `ps -eo pid=,comm= > "$TMPDIR/ps"; tr -s ' ' < "$TMPDIR/ps" | tr '\\n' ','; echo; ls /proc/self/fd | tr '\\n' ' '; echo; echo ready; exec sleep ${marker}`], home, cwd);
    try {
      for (let i = 0; i < 200 && !processesWith(marker).some((p) => p.includes(`sleep\0${marker}`)); i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      const tree = descendants(bg.child.pid!).map(comm).filter((c) => c !== 'gone');
      expect(tree).not.toContain('socat');
      expect(new Set(tree)).toEqual(new Set(['bwrap', 'srt-init', 'sleep']));
      // bwrap, the outer helper, the relay, init: the helper's processes; then the command.
      expect(tree.filter((c) => c === 'srt-init')).toHaveLength(3);
      const [ps, fds] = bg.firstLine.trim().split('\n');
      expect(ps).toMatch(/^ ?1 srt-init, ?\d+ sh, ?\d+ ps,$/);
      expect(fds!.trim()).toBe('0 1 2 3'); // 3: ls's own directory
    } finally {
      bg.child.kill('SIGTERM');
      await bg.exit;
    }
  });

  it('kill -9 of srt leaves no relay behind and closes the exposed port', async () => {
    const port = await freePort();
    const settings = settingsFile({ network: { allowedDomains: [`localhost:${PORT}`], exposePorts: [port] } });
    const bg = await startBackground(['--settings', settings, '--', 'sh', '-c', 'echo x; echo ready; exec sleep 60'], home, cwd);
    const tree = descendants(bg.child.pid!);
    expect(tree.map(comm)).toContain('srt-init');
    const runDir = readdirSync(join(home, '.srt', 'run')).find((d) => d.startsWith(`${bg.child.pid}-`))!;
    expect(await fetchFromHost(port)).not.toBe('ECONNREFUSED'); // the relay holds the port (nothing inside listens)
    bg.child.kill('SIGKILL');
    await bg.exit;
    let left = tree;
    for (let i = 0; i < 100 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = tree.filter(alive);
    }
    expect(left).toEqual([]);
    expect(processesWith(runDir)).toEqual([]);
    expect(await fetchFromHost(port)).toBe('ECONNREFUSED');
  });
});
