// Refused loopback connections you can act on (issue 28, SPEC §6 local services): a client inside
// the sandbox that connects straight to a loopback port nothing listens on there (no forwarded
// port, no server of its own) gets ECONNREFUSED, and srt says so when the command ends with the
// entry that would forward the port — which, added, makes the same command reach the host's
// server. Real clients (curl, node, python3) against a server this test starts on the host.
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyValues, scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-loopback-');
const fresh = scratchDirs(() => tmp.path);
const srtLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('srt: '));

let server: http.Server;
let port: number;
beforeAll(async () => {
  server = http.createServer((_q, res) => res.end('served'));
  port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)));
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  tmp.cleanup();
});

// Each client connects directly (no proxy) to 127.0.0.1:PORT and prints NAME=yes when it got the
// server's answer.
const clients = (p: number) => [
  `if curl -sf --noproxy '*' http://127.0.0.1:${p}/ | grep -q served; then echo curl=yes; else echo curl=no; fi`,
  `node -e 'const s=require("net").connect(${p},"127.0.0.1",()=>s.write("GET / HTTP/1.0\\r\\n\\r\\n"));let b="";s.on("data",(d)=>b+=d);s.on("close",()=>console.log("node="+(b.includes("served")?"yes":"no")));s.on("error",()=>{})'`,
  `python3 -c 'import socket
try:
    s = socket.create_connection(("127.0.0.1", ${p}), timeout=20); s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n"); b = b""
    while True:
        d = s.recv(4096)
        if not d: break
        b += d
    print("python=" + ("yes" if b"served" in b else "no"))
except OSError:
    print("python=no")'`,
].join('; ');

const hint = (p: number) => `to allow, run with --allow-domain localhost:${p}, or add "localhost:${p}" to network.allowedDomains in ~/.srt/settings.json`;

describe('connections to a loopback port that is not forwarded', () => {
  it('are counted per port with the entry that forwards it; with that entry the same clients reach the server', async () => {
    const { home, cwd } = fresh();
    const r = await srt(['-c', clients(port)], { home, cwd });
    expect(keyValues(r.stdout)).toEqual({ curl: 'no', node: 'no', python: 'no' });
    expect(srtLines(r.stderr)).toEqual([`srt: no forwarded port ${port} (3 connections refused): ${hint(port)}`]);

    // Control: the entry the hint names forwards the port, and nothing is reported.
    const again = await srt(['--allow-domain', `localhost:${port}`, '-c', clients(port)], { home, cwd });
    expect(keyValues(again.stdout)).toEqual({ curl: 'yes', node: 'yes', python: 'yes' });
    expect(srtLines(again.stderr)).toEqual([]);
  });

  it('--log has a connect record per address and port; --suggest offers the entry, and with it the command succeeds', async () => {
    const { home, cwd, base } = fresh();
    const log = join(base, 'log.jsonl');
    // ::1 too: `localhost` stands for both, one line for the port.
    const cmd = `${clients(port)}; node -e 'require("net").connect(${port},"::1").on("error",()=>{})'`;
    const r = await srt(['--log', log, '--suggest', '-c', cmd], { home, cwd });
    expect(srtLines(r.stderr)[0]).toBe(`srt: no forwarded port ${port} (4 connections refused): ${hint(port)}`);
    const records = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.kind === 'connect').map(({ time: _t, ...e }) => e);
    expect(records).toEqual([
      { kind: 'connect', verdict: 'refused', target: `127.0.0.1:${port}`, count: 3, rule: 'not-forwarded', allow: `localhost:${port}` },
      { kind: 'connect', verdict: 'refused', target: `[::1]:${port}`, count: 1, rule: 'not-forwarded', allow: `localhost:${port}` },
    ]);
    const at = r.stderr.indexOf('srt: --suggest: this would have allowed what was refused');
    expect(at).toBeGreaterThan(-1);
    const json = r.stderr.slice(r.stderr.indexOf('{', at));
    expect(JSON.parse(json)).toEqual({ network: { allowedDomains: [`localhost:${port}`] } });
    const file = join(base, 'suggested.json');
    writeFileSync(file, json);
    const again = await srt(['--settings', file, '-c', clients(port)], { home, cwd });
    expect(keyValues(again.stdout)).toEqual({ curl: 'yes', node: 'yes', python: 'yes' });
    expect(srtLines(again.stderr)).toEqual([]);
  });

  it('a literal loopback address other than 127.0.0.1 is named with its own entry', async () => {
    const { home, cwd } = fresh();
    const r = await srt(['-c', `curl -s --noproxy '*' http://127.0.0.2:${port}/; true`], { home, cwd });
    expect(srtLines(r.stderr)).toEqual([
      `srt: no forwarded port 127.0.0.2:${port} (1 connection refused): to allow, run with --allow-domain 127.0.0.2:${port}, or add "127.0.0.2:${port}" to network.allowedDomains in ~/.srt/settings.json`,
    ]);
  });

  it('a destination the proxy refused gets the same entry in its hint', async () => {
    const { home, cwd } = fresh();
    const r = await srt(['-c', `curl -s --noproxy '' -x http://127.0.0.1:3128 http://localhost:${port}/; true`], { home, cwd });
    expect(srtLines(r.stderr)).toEqual([
      `srt: blocked localhost:${port} — not in network.allowedDomains`,
      `srt: to allow localhost:${port}: run with --allow-domain localhost:${port}, or add "localhost:${port}" to network.allowedDomains in ~/.srt/settings.json`,
    ]);
  });
});

describe('what is not a refused loopback connection', () => {
  it('a server the command runs itself, the proxy relays, a UDP connect, a Unix socket pair: nothing is reported', async () => {
    const { home, cwd } = fresh();
    const inner = 18000 + (process.pid % 1000);
    const cmd = [
      // A server of the command's own, and clients of it.
      `python3 -c 'import socket,sys
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("127.0.0.1", ${inner})); l.listen(8)
for i in range(3):
    c = socket.create_connection(("127.0.0.1", ${inner})); a, _ = l.accept(); a.close(); c.close()
print("own=yes")'`,
      // srt's own HTTP and SOCKS relays.
      `python3 -c 'import socket; [socket.create_connection(("127.0.0.1", p)).close() for p in (3128, 1080)]; print("relays=yes")'`,
      // UDP connect() to a loopback resolver that is not there: no TCP refusal.
      `python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("127.0.0.53", 53)); print("udp=yes")'`,
      `python3 -c 'import socket; a, b = socket.socketpair(); a.sendall(b"x"); print("pair=" + ("yes" if b.recv(1) == b"x" else "no"))'`,
    ].join('; ');
    const r = await srt(['-c', cmd], { home, cwd });
    expect(keyValues(r.stdout)).toEqual({ own: 'yes', relays: 'yes', udp: 'yes', pair: 'yes' });
    expect(srtLines(r.stderr)).toEqual([]);
  });

  it('a port the command serves itself later (a wait-until-up loop) is not reported; one it never serves is', async () => {
    const { home, cwd } = fresh();
    const own = 19000 + (process.pid % 1000);
    const never = own + 1;
    const cmd = `python3 -c 'import socket
def refused(p):
    try:
        socket.create_connection(("127.0.0.1", p)).close(); return False
    except ConnectionRefusedError:
        return True
early = sum(refused(${own}) for i in range(3)); none = sum(refused(${never}) for i in range(2))
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("127.0.0.1", ${own})); l.listen(8)
print("early=%d" % early); print("never=%d" % none); print("up=" + ("no" if refused(${own}) else "yes"))'`;
    const r = await srt(['-c', cmd], { home, cwd });
    expect(keyValues(r.stdout)).toEqual({ early: '3', never: '2', up: 'yes' });
    expect(srtLines(r.stderr)).toEqual([`srt: no forwarded port ${never} (2 connections refused): ${hint(never)}`]);
  });
});
