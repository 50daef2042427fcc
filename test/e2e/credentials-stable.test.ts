// Stable sentinels (SPEC §7): the same real value gets the same sentinel in every run of this
// user, derived with a per-user key (~/.srt/keys/sentinel.key) that no sandbox can read — by
// default, with the home as the current directory, with the home in allowWrite, and with
// filesystem.disabled. A sentinel a tool saved in one run is injected in the next. Another user
// (another home, another key) gets other sentinels.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base62, crc32 } from '../../src/credentials/sentinels.js';
import { keyValues, srt, tempDir } from './helpers.js';
import { testPki } from './proxy-fixtures.js';

const tmp = tempDir('srt-cred-stable-');
const entropy = 'Hs8wP2rT9yQ4mV8xL1nB6cH3jD5sK1';
const GH = `ghp_${entropy}${base62(crc32(entropy), 6)}`;
const seen: string[] = [];
const sockets = new Set<Socket>();
let server: Server;
let port = 0;
let caPath: string;

beforeAll(async () => {
  const pki = testPki(tmp.path);
  caPath = pki.caPath;
  const leaf = pki.leaf(['IP:127.0.0.2']);
  server = createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
    seen.push(String(req.headers.authorization ?? ''));
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
  tmp.cleanup();
});

function world(name: string) {
  const home = join(tmp.path, name, 'home');
  const cwd = join(tmp.path, name, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  return { home, cwd };
}

async function run(w: { home: string; cwd: string }, script: string, extra: Record<string, unknown> = {}, cwd = w.cwd) {
  const settings = join(w.home, '..', 'settings.json');
  writeFileSync(settings, JSON.stringify({
    network: { allowedDomains: [`127.0.0.2:${port}`], tlsTerminate: { extraCaCertPaths: [caPath] } },
    credentials: { envVars: [{ name: 'GH_TOKEN', mode: 'mask', injectHosts: ['127.0.0.2'] }] },
    ...extra,
  }));
  const r = await srt(['--settings', settings, '-c', script], { home: w.home, cwd, env: { GH_TOKEN: GH }, timeout: 60_000 });
  expect(r.exitCode, r.stderr).toBe(0);
  expect(r.stdout + r.stderr).not.toContain(GH);
  return { ...r, kv: keyValues(r.stdout) };
}

describe('stable sentinels', () => {
  it('two runs show the same sentinel, and a sentinel saved in one run is injected in the next; another user gets another', async () => {
    const a = world('a');
    const first = await run(a, 'echo "gh=$GH_TOKEN"; printf "%s" "$GH_TOKEN" > saved-token');
    const second = await run(a, 'echo "gh=$GH_TOKEN"');
    expect(first.kv.gh).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(first.kv.gh).not.toBe(GH);
    expect(second.kv.gh).toBe(first.kv.gh);
    // The token a tool saved last run (a credential helper, .git/config) works now: the upstream gets the real one.
    seen.length = 0;
    const used = await run(a, `echo "code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: token $(cat saved-token)" https://127.0.0.2:${port}/)"`);
    expect(used.kv.code).toBe('200');
    expect(seen).toEqual([`token ${GH}`]);
    // The key is the user's own, private.
    const key = join(a.home, '.srt', 'keys', 'sentinel.key');
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(readFileSync(key)).toHaveLength(32);
    const b = world('b');
    expect((await run(b, 'echo "gh=$GH_TOKEN"')).kv.gh).not.toBe(first.kv.gh);
  });

  it('the key is unreadable inside: by default, with the home as the current directory, in allowWrite, and with filesystem.disabled', async () => {
    const w = world('hidden');
    await run(w, 'true');
    const key = join(w.home, '.srt', 'keys', 'sentinel.key');
    const before = readFileSync(key);
    const probe = [
      `if cat ${key} >/dev/null 2>&1; then echo read=yes; else echo read=no; fi`,
      `echo "listed=$(ls -A ${join(w.home, '.srt', 'keys')} 2>/dev/null | tr '\\n' ' ')"`,
      `if cp /dev/null ${key} 2>/dev/null; then echo write=yes; else echo write=no; fi`,
    ].join('\n');
    for (const [what, extra, cwd] of [
      ['default', {}, w.cwd],
      ['cwd is the home', {}, w.home],
      ['allowWrite the home', { filesystem: { allowWrite: ['~'] } }, w.cwd],
      ['filesystem.disabled', { filesystem: { disabled: true } }, w.cwd],
    ] as const) {
      const r = await run(w, probe, extra, cwd);
      expect(r.kv, what).toMatchObject({ read: 'no', listed: '', write: 'no' });
    }
    // The control: outside, the key is there and unchanged.
    expect(readFileSync(key)).toEqual(before);
  });
});
