// `srt proxy` as a real process: prints its URLs, filters with the merged policy (settings +
// --allow-domain), stops cleanly on SIGTERM/SIGINT and prints the refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import http from 'node:http';
import https from 'node:https';
import { existsSync } from 'node:fs';
import { SRT_BIN, tempDir, writeTree } from './helpers.js';
import { closeServer, listenOn, testPki } from './proxy-fixtures.js';

let A = 0;
let origin: http.Server;
const home = tempDir('srt-proxy-cli-home-');
const cwd = tempDir('srt-proxy-cli-cwd-');

beforeAll(async () => {
  if (!existsSync(SRT_BIN.replace(/bin\/srt$/, 'dist/cli.js'))) throw new Error('run `npx tsc -p tsconfig.json` first');
  origin = http.createServer((req, res) => res.end(`hi ${req.url}\n`));
  A = await listenOn(origin);
});
afterAll(async () => {
  await closeServer(origin);
  home.cleanup();
  cwd.cleanup();
});

function startSrtProxy(args: string[]) {
  const child = execa(process.execPath, [SRT_BIN, 'proxy', ...args], {
    cwd: cwd.path,
    env: { PATH: process.env.PATH, HOME: home.path, LANG: 'C.UTF-8' },
    extendEnv: false,
    reject: false,
    timeout: 30_000,
  });
  let out = '';
  const urls = new Promise<{ http: string; socks: string }>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const h = /HTTP proxy:\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      const s = /SOCKS5 proxy:\s+(socks5h:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (h && s) resolve({ http: h[1]!, socks: s[1]! });
    });
    child.then((r) => reject(new Error(`srt proxy exited early: ${r.stderr}`)), reject);
  });
  /** Everything printed so far, once `pattern` is in it (bounded wait). */
  const printed = async (pattern: RegExp) => {
    for (let i = 0; i < 100 && !pattern.test(out); i++) await new Promise((r) => setTimeout(r, 20));
    return out;
  };
  return { child, urls, printed };
}

const curl = (args: string[]) => execa('curl', ['-sS', ...args], { reject: false, extendEnv: false, env: { PATH: process.env.PATH } });

describe('srt proxy', () => {
  it('serves the merged policy on loopback and stops cleanly on SIGTERM, printing refusals', async () => {
    writeTree(home.path, { '.srt/settings.json': JSON.stringify({ network: { deniedDomains: ['127.0.0.3'] } }) });
    const { child, urls } = startSrtProxy(['--allow-domain', `127.0.0.1:${A}`, '--allow-domain', '127.0.0.3']);
    const u = await urls;
    expect((await curl(['-x', u.http, `http://127.0.0.1:${A}/a`])).stdout).toBe('hi /a');
    expect((await curl(['--proxy', u.socks, `http://127.0.0.1:${A}/s`])).stdout).toBe('hi /s');
    expect((await curl(['-x', u.http, '-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.2:${A}/`])).stdout).toBe('403');
    expect((await curl(['-x', u.http, '-o', '/dev/null', '-w', '%{http_code}', 'http://127.0.0.3/'])).stdout).toBe('403');
    child.kill('SIGTERM'); // a proxy that hangs instead of stopping fails by the test's timeout
    const r = await child;
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain(`srt: blocked 127.0.0.2:${A} — not in network.allowedDomains`);
    expect(r.stderr).toContain('srt: blocked 127.0.0.3:80 — denied by network.deniedDomains (127.0.0.3)');
  });

  it('takes fixed ports and stops on SIGINT', async () => {
    const probe = http.createServer();
    const port = await listenOn(probe);
    await closeServer(probe);
    const { child, urls } = startSrtProxy(['--http-port', String(port)]);
    expect((await urls).http).toBe(`http://127.0.0.1:${port}`);
    child.kill('SIGINT');
    expect((await child).exitCode).toBe(0);
  });

  it('terminates TLS with network.tlsTerminate, printing the CA clients must trust (removed when it stops)', async () => {
    const pkiDir = tempDir('srt-proxy-cli-pki-');
    try {
      const pki = testPki(pkiDir.path);
      const leaf = pki.leaf(['IP:127.0.0.1']);
      const secure = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => res.end(`secure ${req.url}\n`));
      const S = await listenOn(secure);
      const settings = `${cwd.path}/tls.json`;
      writeTree(cwd.path, { 'tls.json': JSON.stringify({ network: { tlsTerminate: { extraCaCertPaths: [pki.caPath] } } }) });
      const { child, urls, printed } = startSrtProxy(['--settings', settings, '--allow-domain', `127.0.0.1:${S}`]);
      const u = await urls;
      const ca = /TLS CA:\s+(\S+)/.exec(await printed(/TLS CA:/))?.[1];
      expect(ca).toMatch(/\/ca\.pem$/);
      const r = await curl(['-v', '-x', u.http, '--cacert', ca!, `https://127.0.0.1:${S}/t`]);
      expect(r.stdout).toBe('secure /t');
      expect(r.stderr).toMatch(/issuer: O=srt; CN=srt ephemeral CA/);
      child.kill('SIGTERM');
      expect((await child).exitCode).toBe(0);
      expect(existsSync(ca!)).toBe(false);
      await closeServer(secure);
    } finally {
      pkiDir.cleanup();
    }
  });

  it('rejects a bad port with exit 125', async () => {
    const r = await execa(process.execPath, [SRT_BIN, 'proxy', '--http-port', '99999'], {
      cwd: cwd.path,
      env: { PATH: process.env.PATH, HOME: home.path },
      extendEnv: false,
      reject: false,
    });
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^srt: .*must be a port number/);
  });
});
