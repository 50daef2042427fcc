// TLS termination end to end: the real srt, the real sandbox, real clients inside (curl h1 and
// h2, node https and fetch, python3 urllib and requests, git, pip, Java's HttpClient, a gRPC
// call with @grpc/grpc-js) against HTTPS, HTTP/2 and gRPC servers on the host's loopback whose
// certificates come from a test CA (openssl), which srt is told to trust (extraCaCertPaths).
// Host servers listen on 127.0.0.2 (not in the sandbox's NO_PROXY), allowed as an IP literal.
// Also: the CA key never enters the sandbox, whatever path is tried; CA problems stop the run;
// --dry-run and `srt config` show the CA, never its key; `srt -- true` does not load node-forge.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { keyValues, loadedFiles, REPO, srt, tempDir } from './helpers.js';
import { INIT_HELPER_PATH } from '../../src/platform/init-helper.js';
import { listenOn, testPki } from './proxy-fixtures.js';

const HOST = '127.0.0.2';

const tmp = tempDir('srt-tls-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
let pki: ReturnType<typeof testPki>;
let H1 = 0, H2 = 0, GRPC = 0, EXCLUDED = 0, EXPIRED = 0, ECHO = 0;
const hits: string[] = [];
let wheel: Buffer;
let excludedCert: { certPath: string };
let grpcServer: grpc.Server;
const servers: Array<https.Server | http2.Http2SecureServer | Server> = [];
const hasJava = (() => {
  try {
    // Without perf data: the JVM would leave /tmp/hsperfdata_USER behind.
    execFileSync('java', ['-XX:-UsePerfData', '-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A minimal wheel (a zip) made with python's zipfile: what pip downloads from the index. */
function makeWheel(path: string): Buffer {
  execFileSync('python3', ['-c', [
    'import sys, zipfile',
    'z = zipfile.ZipFile(sys.argv[1], "w")',
    'z.writestr("srt_demo/__init__.py", "VALUE = 42\\n")',
    'z.writestr("srt_demo-1.2.3.dist-info/METADATA", "Metadata-Version: 2.1\\nName: srt-demo\\nVersion: 1.2.3\\n")',
    'z.writestr("srt_demo-1.2.3.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")',
    'z.writestr("srt_demo-1.2.3.dist-info/RECORD", "")',
    'z.close()',
  ].join('\n'), path]);
  return readFileSync(path);
}

beforeAll(async () => {
  mkdirSync(home);
  mkdirSync(cwd);
  pki = testPki(tmp.path);
  wheel = makeWheel(join(tmp.path, 'srt_demo-1.2.3-py3-none-any.whl'));
  // A bare repository served as static files (git's "dumb" HTTP protocol) over HTTPS.
  const bare = join(tmp.path, 'repo.git');
  const src = join(tmp.path, 'src-repo');
  mkdirSync(src);
  const git = (dir: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], { cwd: dir, env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: '1' }, stdio: 'ignore' });
  git(tmp.path, 'init', '-q', '--bare', bare);
  git(src, 'init', '-q');
  writeFileSync(join(src, 'README'), 'cloned over terminated TLS\n');
  git(src, 'add', 'README');
  git(src, 'commit', '-q', '-m', 'first');
  git(src, 'push', '-q', bare, 'HEAD:main');
  git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
  git(bare, 'update-server-info');

  const cert = pki.leaf([`IP:${HOST}`]);
  const h1 = https.createServer({ cert: cert.cert, key: cert.key, ALPNProtocols: ['http/1.1'] }, (req, res) => {
    const url = req.url ?? '/';
    hits.push(`h1 ${url} host=${req.headers.host}`);
    if (url.startsWith('/repo.git/')) {
      try {
        res.end(readFileSync(join(bare, url.slice('/repo.git/'.length).split('?')[0]!)));
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    if (url === '/simple/srt-demo/') {
      res.setHeader('content-type', 'text/html');
      const sha = createHash('sha256').update(wheel).digest('hex');
      res.end(`<html><body><a href="/files/srt_demo-1.2.3-py3-none-any.whl#sha256=${sha}">srt_demo-1.2.3-py3-none-any.whl</a></body></html>`);
      return;
    }
    if (url === '/files/srt_demo-1.2.3-py3-none-any.whl') {
      res.end(wheel);
      return;
    }
    if (url === '/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = setInterval(() => {
        res.write(`data: ${n} ${Date.now()}\n\n`);
        if (++n === 10) {
          clearInterval(tick);
          res.end();
        }
      }, 100);
      res.on('close', () => clearInterval(tick));
      return;
    }
    res.end(`hello ${url}`);
  });
  H1 = await listenOn(h1, HOST);
  const h2 = http2.createSecureServer({ cert: cert.cert, key: cert.key });
  h2.on('stream', (stream, headers) => {
    hits.push(`h2 ${headers[':path']} authority=${headers[':authority']}`);
    stream.respond({ ':status': 200 });
    stream.end(`h2 hello ${headers[':path']}`);
  });
  await new Promise<void>((r) => h2.listen(0, HOST, r));
  H2 = (h2.address() as { port: number }).port;
  const expiredCert = pki.leaf([`IP:${HOST}`], { expired: true });
  const expired = https.createServer({ cert: expiredCert.cert, key: expiredCert.key }, (_req, res) => {
    hits.push('expired');
    res.end('UPSTREAM DATA MUST NOT ARRIVE');
  });
  EXPIRED = await listenOn(expired, HOST);
  excludedCert = pki.leaf(['IP:127.0.0.3'], { selfSigned: true });
  const excluded = https.createServer({ cert: readFileSync(excludedCert.certPath), key: readFileSync(excludedCert.certPath.replace(/\.pem$/, '.key')) }, (_req, res) =>
    res.end('excluded origin'),
  );
  EXCLUDED = await listenOn(excluded, '127.0.0.3');
  const echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, HOST, r));
  ECHO = (echo.address() as { port: number }).port;
  servers.push(h1, h2, expired, excluded, echo);

  grpcServer = new grpc.Server();
  const raw = (b: Buffer) => b;
  grpcServer.addService(
    { say: { path: '/srt.test.Echo/Say', requestStream: false, responseStream: false, requestSerialize: raw, requestDeserialize: raw, responseSerialize: raw, responseDeserialize: raw, originalName: 'say' } } as unknown as grpc.ServiceDefinition,
    {
      say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        hits.push(`grpc ${call.request.toString()}`);
        cb(null, Buffer.from(`pong:${call.request.toString()}`));
      },
    },
  );
  GRPC = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync(`${HOST}:0`, grpc.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(cert.cert), private_key: Buffer.from(cert.key) }]), (e, port) =>
      e ? reject(e) : resolve(port),
    ),
  );
});

afterAll(async () => {
  grpcServer?.forceShutdown();
  for (const s of servers) {
    if ('closeAllConnections' in s) s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  tmp.cleanup();
});

function settingsFile(settings: object): string {
  const file = join(tmp.path, `settings-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(settings));
  return file;
}

const tlsSettings = (extra: object = {}) => ({
  network: {
    allowedDomains: [HOST, '127.0.0.3'],
    tlsTerminate: { extraCaCertPaths: [pki.caPath], excludeDomains: ['127.0.0.3'], ...extra },
  },
});

async function inSandbox(script: string, settings: object, env: Record<string, string> = {}) {
  const r = await srt(['--settings', settingsFile(settings), '-c', script], { home, cwd, env, timeout: 90_000 });
  return { ...r, results: keyValues(r.stdout) };
}

describe('real clients in the sandbox through TLS termination', () => {
  it('curl (h1, h2), node, python (urllib, requests), git, pip, Java and gRPC all verify srt\'s leaf and reach the upstream', async () => {
    const base = `https://${HOST}:${H1}`;
    writeFileSync(join(cwd, 'Get.java'), [
      'import java.net.URI; import java.net.http.*;',
      'public class Get { public static void main(String[] a) throws Exception {',
      '  HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString());',
      '  System.out.println("java=" + r.statusCode() + " " + r.body()); } }',
    ].join('\n'));
    writeFileSync(join(cwd, 'grpc-client.cjs'), [
      `const grpc = require(${JSON.stringify(join(REPO, 'node_modules', '@grpc', 'grpc-js'))});`,
      'const raw = (b) => b;',
      "const Echo = grpc.makeGenericClientConstructor({ say: { path: '/srt.test.Echo/Say', requestStream: false, responseStream: false, requestSerialize: raw, requestDeserialize: raw, responseSerialize: raw, responseDeserialize: raw } }, 'Echo');",
      // Default roots: Node's own plus NODE_EXTRA_CA_CERTS (srt's bundle).
      'const c = new Echo(process.argv[2], grpc.credentials.createSsl());',
      "c.say(Buffer.from('ping'), (e, r) => { console.log('grpc=' + (e ? 'ERR ' + e.code + ' ' + e.details : r.toString())); c.close(); });",
    ].join('\n'));
    const script = [
      `curl -sS -v ${base}/curl 2>curl.err | sed 's/^/curl=/'; echo; echo curl_issuer=$(grep -o 'issuer: .*' curl.err)`,
      `echo curl_h2=$(curl -sS --http2 -w ' %{http_version}' https://${HOST}:${H2}/two)`,
      `echo node_https=$(node -e "require('https').get('${base}/https', r => { let b=''; r.on('data', d => b += d); r.on('end', () => console.log(b)); }).on('error', e => console.log('ERR', e.message))")`,
      `echo node_fetch=$(node -e "fetch('${base}/fetch').then(r => r.text()).then(console.log, e => console.log('ERR', e.cause?.message ?? e.message))")`,
      `echo urllib=$(python3 -c "import urllib.request; print(urllib.request.urlopen('${base}/urllib', timeout=10).read().decode())")`,
      `echo requests=$(/usr/bin/python3 -c "import requests; print(requests.get('${base}/requests', timeout=10).text)")`,
      // Their errors are printed only when they fail (warnings about HOME are not the point).
      `if git clone -q ${base}/repo.git clone 2>git.err; then echo git=$(cat clone/README); else echo git=FAILED $(cat git.err); fi`,
      `if python3 -m pip download srt-demo --no-deps --no-cache-dir -d "$TMPDIR/dl" --index-url ${base}/simple/ --disable-pip-version-check -q 2>pip.err; then echo pip=$(sha256sum "$TMPDIR"/dl/*.whl | cut -d' ' -f1); else echo pip=FAILED $(cat pip.err); fi`,
      `node grpc-client.cjs ${HOST}:${GRPC}`,
      // 127.0.0.2 stands in for a remote host here; Java keeps all of 127/8 off the proxy by default.
      ...(hasJava ? [`java -Dhttp.nonProxyHosts= Get.java ${base}/java 2>java.err || cat java.err`] : []),
    ].join('\n');
    const before = hits.length;
    const r = await inSandbox(script, tlsSettings());
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results).toMatchObject({
      curl: 'hello /curl',
      curl_h2: 'h2 hello /two 2',
      node_https: 'hello /https',
      node_fetch: 'hello /fetch',
      urllib: 'hello /urllib',
      requests: 'hello /requests',
      git: 'cloned over terminated TLS',
      pip: createHash('sha256').update(wheel).digest('hex'),
      grpc: 'pong:ping',
    });
    expect(r.results.curl_issuer).toMatch(/^issuer: O=srt; CN=srt ephemeral CA/);
    if (hasJava) expect(r.results.java).toBe('200 hello /java');
    // The upstreams saw the requests, each with the Host the client asked for.
    const seen = hits.slice(before);
    expect(seen).toEqual(expect.arrayContaining([`h1 /curl host=${HOST}:${H1}`, `h2 /two authority=${HOST}:${H2}`, 'grpc ping', `h1 /files/srt_demo-1.2.3-py3-none-any.whl host=${HOST}:${H1}`]));
    if (hasJava) expect(seen).toContain(`h1 /java host=${HOST}:${H1}`);
  }, 120_000);

  it.skipIf(!hasJava)('Java sees the proxy and srt\'s trust store through JAVA_TOOL_OPTIONS', async () => {
    const r = await inSandbox('echo "java_opts=$JAVA_TOOL_OPTIONS"', tlsSettings());
    expect(r.results.java_opts).toMatch(/-Dhttps\.proxyHost=127\.0\.0\.1 -Dhttps\.proxyPort=3128 .*-Djavax\.net\.ssl\.trustStore=\S+\/trust\.p12 -Djavax\.net\.ssl\.trustStoreType=PKCS12$/);
  });

  it('streams server-sent events through termination: each as it is sent', async () => {
    const js = [
      `require('https').get('https://${HOST}:${H1}/sse', (r) => {`,
      '  const lags = []; let buf = "";',
      '  r.on("data", (c) => { buf += c; for (const m of buf.matchAll(/data: (\\d+) (\\d+)\\n\\n/g)) lags[m[1]] ??= Date.now() - Number(m[2]);',
      '    if (lags.filter((x) => x !== undefined).length === 10) { console.log("lags=" + lags.join(",")); process.exit(0); } });',
      '});',
    ].join('\n');
    writeFileSync(join(cwd, 'sse.cjs'), js);
    const r = await inSandbox('node sse.cjs', tlsSettings());
    const lags = (r.results.lags ?? '').split(',').map(Number);
    expect(lags).toHaveLength(10);
    expect(lags.filter((x) => x !== undefined)).toHaveLength(10);
  });

  it('tunnels excludeDomains hosts (the client sees the upstream\'s own certificate) and non-TLS protocols', async () => {
    const r = await inSandbox([
      `echo excluded=$(curl -sS -v --cacert ${excludedCert.certPath} https://127.0.0.3:${EXCLUDED}/ 2>ex.err) $(grep -o 'issuer: .*' ex.err)`,
      // A raw byte stream through CONNECT: the helper's CONNECT client (ssh's ProxyCommand).
      `echo echo=$(echo ping | ${INIT_HELPER_PATH} --connect 127.0.0.1:3128 ${HOST} ${ECHO})`,
    ].join('\n'), tlsSettings());
    expect(r.results.excluded).toBe('excluded origin issuer: CN=127.0.0.3');
    expect(r.results.echo).toBe('ping');
  });

  it('an upstream with a bad certificate is a 502 with the reason; nothing from it reaches the client; srt reports it', async () => {
    const before = hits.length;
    const r = await inSandbox(`echo status=$(curl -s -o body.txt -w '%{http_code}' https://${HOST}:${EXPIRED}/); echo body=$(cat body.txt)`, tlsSettings());
    expect(r.results.status).toBe('502');
    expect(r.results.body).toBe(`srt: upstream ${HOST}:${EXPIRED}: certificate not trusted: certificate has expired (CERT_HAS_EXPIRED)`);
    expect(r.stdout).not.toContain('UPSTREAM DATA');
    expect(hits.length).toBe(before);
    expect(r.stderr).toContain(`srt: blocked ${HOST}:${EXPIRED} — upstream certificate not trusted: certificate has expired (CERT_HAS_EXPIRED)`);
  });
});

/** A CA of the user's own (openssl), for caCertPath/caKeyPath. */
function userCa(dir: string): { certPath: string; keyPath: string; key: string; subject: string } {
  mkdirSync(dir, { recursive: true });
  const certPath = join(dir, 'srt-ca.pem');
  const keyPath = join(dir, 'srt-ca.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3', '-subj', '/O=Test User/CN=my srt CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', keyPath, '-out', certPath], { stdio: 'ignore' });
  return { certPath, keyPath, key: readFileSync(keyPath, 'utf8'), subject: 'O=Test User; CN=my srt CA' };
}

/** A piece of a PEM key's base64 body that is secret (past the PKCS#8 header every P-256 key shares). */
const needleOf = (keyPem: string) => keyPem.split('\n').filter((l) => l && !l.startsWith('-----')).join('').slice(48, 88);

// Looks for the key (a needle read from a file, so no command line carries it) everywhere a
// sandboxed process can reach that srt might have leaked it to: the environment and command line
// of every visible process, every file an open descriptor of theirs points at, TMPDIR and /tmp;
// and in srt's own places (the run directory, ~/.srt, the trust files) for any private key at
// all. srt's own process must not be visible.
const PROBE = `
import os, sys
needle = open(sys.argv[1]).read().strip().encode()
found = []
def check(path, any_key=False):
    try:
        with open(path, 'rb') as f:
            data = f.read(32 * 1024 * 1024)
    except OSError:
        return
    if needle in data or (any_key and b'PRIVATE KEY' in data):
        found.append(path)
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    for part in ('environ', 'cmdline'):
        check(f'/proc/{pid}/{part}', True)
    try:
        for fd in os.listdir(f'/proc/{pid}/fd'):
            target = os.path.realpath(f'/proc/{pid}/fd/{fd}')
            if os.path.isfile(target) and not target.startswith(os.getcwd()):
                check(target)
    except OSError:
        pass
    try:
        if b'bin/srt' in open(f'/proc/{pid}/cmdline', 'rb').read():
            found.append(f'srt itself is visible as pid {pid}')
    except OSError:
        pass
# srt's code cache holds srt's own source, whose PEM handling names the 'PRIVATE KEY' label:
# there only the key itself counts.
code_cache = os.path.expanduser('~/.srt/cache/code')
def walk(root, any_key):
    for dirpath, dirs, files in os.walk(root):
        if dirpath.startswith(os.getcwd()):
            continue
        for name in files:
            check(os.path.join(dirpath, name), any_key and not dirpath.startswith(code_cache))
walk(os.path.dirname(os.environ['TMPDIR']), True)
walk(os.path.expanduser('~/.srt'), True)
for name in os.listdir('/tmp'):  # the shared /tmp: only its top level (other programs' trees are not srt's)
    if os.path.isfile(os.path.join('/tmp', name)):
        check(os.path.join('/tmp', name))
for var in ('SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO', 'AWS_CA_BUNDLE', 'PIP_CERT', 'CARGO_HTTP_CAINFO', 'DENO_CERT'):
    check(os.environ[var], True)
    markers = {l for l in open(os.environ[var]).read().splitlines() if l.startswith('-----')}
    if markers != {'-----BEGIN CERTIFICATE-----', '-----END CERTIFICATE-----'}:
        found.append(f'{var} holds {sorted(markers)}')
if needle in b''.join(k.encode() + v.encode() for k, v in os.environ.items()):
    found.append('environment')
print('found=' + (';'.join(found) or 'nothing'))
`;

describe('the CA key never enters the sandbox', () => {
  it('a user CA key: unreadable at its path, found nowhere else; the CA is the one in use', async () => {
    const ca = userCa(join(home, 'ca'));
    writeFileSync(join(cwd, 'needle'), needleOf(ca.key));
    writeFileSync(join(cwd, 'probe.py'), PROBE);
    // An extra CA file that also holds a key: only its certificate may be copied.
    const extra = join(tmp.path, 'extra-with-key.pem');
    writeFileSync(extra, `${pki.caPem}${ca.key}`);
    const r = await inSandbox([
      `echo key_read=$(cat ${ca.keyPath} 2>/dev/null | wc -c)`,
      `echo key_dir=$(ls ${join(home, 'ca')} | tr '\\n' ' ')`,
      'python3 probe.py needle',
      `curl -sS -v https://${HOST}:${H1}/user-ca 2>err >/dev/null; echo issuer=$(grep -o 'issuer: .*' err)`,
    ].join('\n'), {
      network: { allowedDomains: [HOST], tlsTerminate: { caCertPath: ca.certPath, caKeyPath: ca.keyPath, extraCaCertPaths: [pki.caPath, extra] } },
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results.key_read).toBe('0');
    expect(r.results.found).toBe('nothing');
    expect(r.results.issuer).toBe(`issuer: ${ca.subject}`);
  }, 240_000);

  it('a user CA key inside a writable directory can be neither read, nor rewritten, nor swapped', async () => {
    const ca = userCa(join(cwd, 'keys'));
    const hash = () => createHash('sha256').update(readFileSync(ca.keyPath)).digest('hex');
    const before = hash();
    const r = await inSandbox([
      'echo read=$(cat keys/srt-ca.key 2>/dev/null | wc -c)',
      '(echo planted > keys/srt-ca.key) 2>/dev/null; echo write=$?',
      '(mv keys keys-moved) 2>/dev/null; echo rename=$?',
      '(rm -f keys/srt-ca.key) 2>/dev/null; echo rm=$?',
    ].join('\n'), { network: { allowedDomains: [HOST], tlsTerminate: { caCertPath: ca.certPath, caKeyPath: ca.keyPath } } });
    expect(r.results.read).toBe('0');
    expect(r.results.write).not.toBe('0');
    expect(r.results.rename).not.toBe('0');
    expect(r.results.rm).not.toBe('0');
    expect(hash()).toBe(before);
  });

  it('an ephemeral CA: no key in the run directory, the trust files, the environment or any visible process', async () => {
    // The key is unknown here: srt's own places are searched for any private key at all.
    writeFileSync(join(cwd, 'needle'), `no-such-needle-${Math.random()}`);
    writeFileSync(join(cwd, 'probe.py'), PROBE);
    const r = await inSandbox('python3 probe.py needle', tlsSettings());
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results.found).toBe('nothing');
  }, 240_000);
});

describe('CA configuration problems stop the run (exit 125), and what srt shows', () => {
  it.each([
    ['a key that is not the certificate\'s', (a: ReturnType<typeof userCa>, b: ReturnType<typeof userCa>) => ({ caCertPath: a.certPath, caKeyPath: b.keyPath }), /caKeyPath: .*srt-ca\.key: this key does not belong to /],
    ['a certificate that is no CA', (_a: ReturnType<typeof userCa>) => ({ caCertPath: pki.leaf(['DNS:leaf.test']).certPath, caKeyPath: _a.keyPath }), /caCertPath: .*: not a CA certificate/],
    ['a missing key file', (a: ReturnType<typeof userCa>) => ({ caCertPath: a.certPath, caKeyPath: join(tmp.path, 'missing.key') }), /caKeyPath: .*missing\.key: cannot read it \(ENOENT\)/],
    ['an extra CA file without a certificate', () => ({ extraCaCertPaths: [join(cwd, 'needle')] }), /extraCaCertPaths: .*needle: no PEM certificate in it/],
  ])('%s', async (_name, tls, message) => {
    const a = userCa(join(tmp.path, `ca-a-${Math.random()}`));
    const b = userCa(join(tmp.path, `ca-b-${Math.random()}`));
    writeFileSync(join(cwd, 'needle'), 'not a certificate');
    writeFileSync(join(cwd, 'ran'), '');
    const r = await srt(['--settings', settingsFile({ network: { allowedDomains: [HOST], tlsTerminate: tls(a, b) } }), '--', 'rm', 'ran'], { home, cwd });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(new RegExp(`^srt: network\\.tlsTerminate\\.${message.source}`, 'm'));
    expect(readFileSync(join(cwd, 'ran'), 'utf8')).toBe(''); // the command did not run
  });

  it('--dry-run and srt config show termination and the CA in use, never the key', async () => {
    const ca = userCa(join(home, 'shown'));
    const settings = settingsFile({ network: { allowedDomains: [HOST], tlsTerminate: { caCertPath: ca.certPath, caKeyPath: ca.keyPath, excludeDomains: ['mtls.example'] } } });
    const dry = await srt(['--settings', settings, '--dry-run', '--', 'true'], { home, cwd });
    expect(dry.exitCode, dry.stderr).toBe(0);
    const fp = execFileSync('openssl', ['x509', '-in', ca.certPath, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' }).trim().split('=')[1]!;
    expect(dry.stdout).toContain(`on: a CONNECT or SOCKS tunnel whose client starts TLS is terminated by srt (not for mtls.example)`);
    expect(dry.stdout).toContain(`CA: ${ca.certPath} (O=Test User, CN=my srt CA, SHA-256 ${fp}); key ${ca.keyPath}, unreadable inside the sandbox`);
    const text = await srt(['config', '--settings', settings], { home, cwd });
    const json = await srt(['config', '--json', '--settings', settings], { home, cwd });
    expect(text.stdout).toMatch(/network\.tlsTerminate\s+CA .*srt-ca\.pem/);
    expect(JSON.parse(json.stdout).settings.credentials.files).toContainEqual(expect.objectContaining({ value: ca.keyPath, mode: 'deny' }));
    for (const out of [dry.stdout, dry.stderr, text.stdout, json.stdout]) {
      expect(out).not.toContain(needleOf(ca.key));
      expect(out).not.toContain('PRIVATE KEY');
    }
    const off = await srt(['--dry-run', '--', 'true'], { home, cwd });
    expect(off.stdout).toMatch(/# TLS termination\noff: /);
  });
});

describe('lazy loading', () => {
  it('`srt -- true` loads no TLS code (node-forge) unless termination is configured, and no terminator before a tunnel needs it', async () => {
    const loaded = async (settings: object) => {
      const r = await srt(['--settings', settingsFile(settings), '--', 'true'], { cwd, home, env: { NODE_DEBUG: 'module' } });
      expect(r.exitCode, r.stderr).toBe(0);
      const files = loadedFiles(r.stderr).filter((f) => f.startsWith(`${REPO}/dist/`));
      return {
        forge: files.filter((f) => readFileSync(f, 'utf8').includes('node_modules/node-forge')),
        terminator: files.filter((f) => /\/terminate\.cjs$/.test(f)),
      };
    };
    const without = await loaded({ network: { allowedDomains: [HOST] } });
    expect(without).toEqual({ forge: [], terminator: [] });
    // With termination the CA is made at start (forge); the terminator waits for a tunnel.
    const withTls = await loaded(tlsSettings());
    expect(withTls.forge.length).toBeGreaterThan(0);
    expect(withTls.terminator).toEqual([]);
  });
});
