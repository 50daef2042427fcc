// Long opaque tunnels handed from the proxy to `srt-init --splice` (src/proxy/splicer.ts,
// init/splice.c): every byte arrives in order both ways across the hand-over, a half-close passes
// through, a failed spawn leaves the tunnel in node, the splicer ends with the proxy (the run's
// end) and with srt when it is SIGKILLed, and in a real run a client inside gets the same bytes.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { INIT_HELPER_PATH } from '../../src/paths.js';
import type { Stage } from '../../src/proxy/pipeline.js';
import { startProxy, type ProxyHandle } from '../../src/proxy/server.js';
import { Transform } from 'node:stream';
import { srt, SRT_BIN, tempDir, track, stopStragglers } from './helpers.js';
import { closeServer, listenOn, network } from './proxy-fixtures.js';

const MB = 1024 * 1024;
const tmp = tempDir('srt-splice-');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Echo of a digest: reads the client's bytes to their end, then sends `digest\n` and `reply`. */
function digestServer(reply: Buffer, servers: Server[]): Promise<number> {
  const server = createServer({ allowHalfOpen: true }, (s) => {
    const h = createHash('sha256');
    s.on('data', (c: Buffer) => h.update(c));
    s.on('end', () => {
      s.write(`${h.digest('hex')}\n`);
      s.end(reply);
    });
    s.on('error', () => s.destroy());
  });
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

/** A CONNECT tunnel through the proxy's HTTP port to 127.0.0.1:port; resolves after the 200. */
function tunnel(proxyPort: number, port: number): Promise<{ socket: Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, '127.0.0.1', () => socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
    let got = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      got = Buffer.concat([got, c]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.pause();
      if (!got.subarray(0, 12).toString().startsWith('HTTP/1.1 200')) return reject(new Error(got.toString()));
      resolve({ socket, rest: got.subarray(end + 4) });
    };
    socket.on('data', onData);
    socket.on('error', reject);
  });
}

/** Send `up` then (unless `fin` is false) a FIN; everything the other side sends until its FIN. */
async function roundTrip(proxyPort: number, port: number, up: Buffer, fin = true): Promise<Buffer> {
  const { socket, rest } = await tunnel(proxyPort, port);
  const chunks = [rest];
  const done = new Promise<Buffer>((resolve, reject) => {
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('error', reject);
  });
  socket.resume();
  // In pieces, so the hand-over happens while bytes are in flight both ways.
  for (let i = 0; i < up.length; i += 256 * 1024) socket.write(up.subarray(i, i + 256 * 1024));
  if (fin) socket.end();
  const out = await done;
  socket.destroy();
  return out;
}

const handedPid = (lines: string[]) => {
  const m = lines.map((l) => /handed to srt-init --splice \(pid (\d+)\)/.exec(l)).find(Boolean);
  return m ? Number(m[1]) : undefined;
};

/** The process is gone (or a zombie nobody reaped yet: it runs no more). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z' || !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--splice');
  } catch {
    return true;
  }
}

async function until(what: string, check: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const servers: Server[] = [];
afterAll(async () => {
  await stopStragglers();
  for (const s of servers) s.close();
  tmp.cleanup();
});

describe('the proxy hands long opaque tunnels to srt-init --splice', { timeout: 120_000 }, () => {
  const start = async (helperPath: string, lines: string[], allow: string[], stages: Stage[] = []): Promise<ProxyHandle> =>
    await startProxy({
      network: network({ allow }),
      stages,
      listen: { http: { host: '127.0.0.1', port: 0 }, socks: { host: '127.0.0.1', port: 0 } },
      log: (l) => lines.push(l),
      splicer: { helperPath, afterBytes: MB },
      testOnlyExemptAddresses: ['127.0.0.1'],
    });

  it('moves every byte in order both ways across the hand-over, and passes a half-close on', async () => {
    const up = randomBytes(6 * MB);
    const down = randomBytes(8 * MB);
    const port = await digestServer(down, servers);
    const lines: string[] = [];
    const proxy = await start(INIT_HELPER_PATH, lines, [`127.0.0.1:${port}`]);
    try {
      const got = await roundTrip(proxy.httpPort!, port, up);
      expect(got.subarray(0, 65).toString()).toBe(`${sha(up)}\n`);
      expect(sha(got.subarray(65))).toBe(sha(down));
      const pid = handedPid(lines);
      expect(pid, lines.join('\n')).toBeDefined();
      await until('the splicer to exit after both FINs', () => gone(pid!));
    } finally {
      await proxy.close();
    }
  });

  it('a tunnel under its size stays in node', async () => {
    const port = await digestServer(randomBytes(100_000), servers);
    const lines: string[] = [];
    const proxy = await start(INIT_HELPER_PATH, lines, [`127.0.0.1:${port}`]);
    try {
      const up = randomBytes(200_000);
      const got = await roundTrip(proxy.httpPort!, port, up);
      expect(got.subarray(0, 65).toString()).toBe(`${sha(up)}\n`);
      expect(handedPid(lines)).toBeUndefined();
    } finally {
      await proxy.close();
    }
  });

  it('a tunnel a stage guards stays in node whatever its size: the guard sees every byte, and a half-close passes through it', async () => {
    const up = randomBytes(4 * MB);
    // The server answers after the client's FIN: the FIN must cross the guard as a half-close.
    const port = await digestServer(randomBytes(4 * MB), servers);
    const lines: string[] = [];
    let seen = 0;
    const guard: Stage = {
      name: 'count',
      guard: () => new Transform({ transform: (c: Buffer, _e, cb) => ((seen += c.length), cb(null, c)) }),
    };
    const proxy = await start(INIT_HELPER_PATH, lines, [`127.0.0.1:${port}`], [guard]);
    try {
      const got = await roundTrip(proxy.httpPort!, port, up);
      expect(got.subarray(0, 65).toString()).toBe(`${sha(up)}\n`);
      expect(got.length).toBe(65 + 4 * MB);
      expect(seen).toBe(up.length);
      expect(handedPid(lines)).toBeUndefined();
    } finally {
      await proxy.close();
    }
  });

  it('when the splicer cannot start, node carries the tunnel on intact', async () => {
    const up = randomBytes(3 * MB);
    const down = randomBytes(3 * MB);
    const port = await digestServer(down, servers);
    const lines: string[] = [];
    const proxy = await start(join(tmp.path, 'no-such-helper'), lines, [`127.0.0.1:${port}`]);
    try {
      const got = await roundTrip(proxy.httpPort!, port, up);
      expect(got.subarray(0, 65).toString()).toBe(`${sha(up)}\n`);
      expect(sha(got.subarray(65))).toBe(sha(down));
      expect(lines.join('\n')).toMatch(/cannot start srt-init --splice; the tunnel stays in srt/);
    } finally {
      await proxy.close();
    }
  });

  for (const how of ['close', 'endCommand'] as const)
    it(`${how === 'close' ? "closing the proxy (the run's end)" : "a kept proxy's endCommand (a library command's end)"} kills a handed-over tunnel: both sides see it close`, async () => {
      let upstreamClosed = false;
      const server = createServer({ allowHalfOpen: true }, (s) => {
        s.on('error', () => s.destroy());
        // A FIN ('end': half-open allowed), or a reset when unread bytes were left ('close').
        s.on('end', () => (upstreamClosed = true)).on('close', () => (upstreamClosed = true));
        s.write(randomBytes(2 * MB)); // then it stays open, idle
      });
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as { port: number }).port;
      const lines: string[] = [];
      const proxy = await start(INIT_HELPER_PATH, lines, [`127.0.0.1:${port}`]);
      try {
        const { socket } = await tunnel(proxy.httpPort!, port);
        let clientClosed = false;
        socket.on('close', () => (clientClosed = true));
        socket.on('error', () => undefined);
        socket.resume();
        await until('the hand-over', () => handedPid(lines) !== undefined);
        const pid = handedPid(lines)!;
        expect(gone(pid)).toBe(false);
        if (how === 'close') {
          await proxy.close();
          expect(gone(pid)).toBe(true);
        } else {
          proxy.endCommand();
          await until('the splicer to exit', () => gone(pid));
        }
        await until('both sides to close', () => upstreamClosed && clientClosed);
      } finally {
        await proxy.close();
      }
    });
});

describe('with srt itself', { timeout: 120_000 }, () => {
  it('a splicer dies with `srt proxy` when srt is SIGKILLed, though both sides stay open', async () => {
    let upstreamClosed = false;
    const server = createServer({ allowHalfOpen: true }, (s) => {
      s.on('error', () => s.destroy());
      // A FIN ('end': half-open allowed), or a reset when unread bytes were left ('close').
      s.on('end', () => (upstreamClosed = true)).on('close', () => (upstreamClosed = true));
      s.write(randomBytes(6 * MB));
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const home = join(tmp.path, 'home-kill');
    mkdirSync(home, { recursive: true });
    const child: ChildProcess = track(spawn(process.execPath, [SRT_BIN, '--debug', 'proxy', '--http-port', '0', '--socks-port', '0', '--allow-domain', `127.0.0.1:${port}`], {
      cwd: home, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, stdio: ['ignore', 'pipe', 'pipe'],
    }));
    let out = '';
    let err = '';
    child.stdout!.on('data', (b: Buffer) => (out += b));
    child.stderr!.on('data', (b: Buffer) => (err += b));
    await until('the proxy to listen', () => /HTTP proxy:\s+http:\/\/127\.0\.0\.1:\d+/.test(out));
    const proxyPort = Number(/HTTP proxy:\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1]);
    const { socket } = await tunnel(proxyPort, port);
    let clientClosed = false;
    socket.on('close', () => (clientClosed = true));
    socket.on('error', () => undefined);
    socket.resume();
    await until('the hand-over', () => handedPid(err.split('\n')) !== undefined);
    const pid = handedPid(err.split('\n'))!;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    await until('the splicer to die with srt', () => gone(pid));
    await until('both sides to close', () => upstreamClosed && clientClosed);
  });

  it('a client inside the sandbox gets every byte through a handed-over CONNECT tunnel, and nothing is left after the run', async () => {
    const body = randomBytes(24 * MB);
    const origin = http.createServer((req, res) => {
      if (req.method === 'PUT') {
        const h = createHash('sha256');
        req.on('data', (c: Buffer) => h.update(c));
        req.on('end', () => res.end(h.digest('hex')));
        return;
      }
      res.end(body);
    });
    const port = await listenOn(origin, '127.0.0.2');
    const home = join(tmp.path, 'home-run');
    const cwd = join(tmp.path, 'work-run');
    mkdirSync(home, { recursive: true });
    mkdirSync(cwd, { recursive: true });
    const settings = join(tmp.path, 'settings.json');
    writeFileSync(settings, JSON.stringify({ network: { allowedDomains: [`127.0.0.2:${port}`] } }));
    const url = `http://127.0.0.2:${port}/`;
    // curl -p: through a CONNECT tunnel even for http://.
    const script = `curl -sSfp ${url} | sha256sum | cut -c1-64; head -c ${16 * MB} /dev/urandom > up; sha256sum up | cut -c1-64; curl -sSfp -T up ${url}; echo`;
    try {
      const r = await srt(['--debug', '--settings', settings, '--', 'sh', '-c', script], { home, cwd, timeout: 120_000 });
      expect(r.exitCode, r.stderr).toBe(0);
      const [downHash, upHash, echoed] = r.stdout.trim().split('\n');
      expect(downHash).toBe(sha(body));
      expect(echoed).toBe(upHash);
      const pids = [...r.stderr.matchAll(/handed to srt-init --splice \(pid (\d+)\)/g)].map((m) => Number(m[1]));
      expect(pids.length, r.stderr).toBe(2);
      for (const pid of pids) expect(gone(pid)).toBe(true);
    } finally {
      await closeServer(origin);
    }
  });
});
