// Per-user kernel limits (init/limits.c): the sandbox runs as the caller's uid, so it could
// hold every inotify instance of that user (128 by default) and the user's editors, file watchers
// and desktop outside would fail with EMFILE while it runs. The sandbox gets half of each limit
// srt can bound, and processes at most a quarter of the host's PID space; the tests take all they
// can inside and check what the host still gets.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keyValues, SRT_BIN, srt, stopStragglers, tempDir, track } from './helpers.js';

const tmp = tempDir('srt-limits-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup();
});
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'proj');
mkdirSync(home);
mkdirSync(cwd);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sysctl = (name: string) => Number(readFileSync(`/proc/sys/${name.replaceAll('.', '/')}`, 'utf8').trim());

/** Python that takes inotify instances until the kernel refuses, prints how many, holds them until `go` exists. */
const hog = (ready: string, go: string) => [
  'import ctypes, os, time',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'fds = []',
  'while len(fds) < 100000:',
  '    fd = libc.inotify_init1(0)',
  '    if fd < 0: break',
  '    fds.append(fd)',
  'print(f"inotify={len(fds)}", f"errno={ctypes.get_errno()}", sep="\\n", flush=True)',
  `open(${JSON.stringify(ready)}, "w").close()`,
  `for _ in range(600):`,
  `    if os.path.exists(${JSON.stringify(go)}): break`,
  '    time.sleep(0.05)',
].join('\n');

describe('the sandbox takes at most half of a per-user limit', () => {
  it('inotify instances: the host keeps its own while the sandbox holds all it can get', async () => {
    const max = sysctl('fs.inotify.max_user_instances');
    const ready = join(cwd, 'ready');
    const go = join(cwd, 'go');
    writeFileSync(join(tmp.path, 'hog.py'), hog(ready, go));
    const child = track(spawn(process.execPath, [SRT_BIN, '--', 'python3', join(tmp.path, 'hog.py')],
      { cwd, env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
    child.stderr!.on('data', (b: Buffer) => { out += b.toString(); });
    const exited = new Promise((r) => child.on('exit', r));
    for (let i = 0; i < 300 && !existsSync(ready); i++) await sleep(50);
    // The user's own program outside, meanwhile: a watcher or two, like an editor's.
    const host = spawnSync('python3', ['-c', 'import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(sum(libc.inotify_init1(0) >= 0 for _ in range(8)))'], { encoding: 'utf8' });
    writeFileSync(go, '');
    await exited;
    const inside = keyValues(out);
    expect(Number(inside.inotify), out).toBeGreaterThan(0);
    expect(Number(inside.inotify), out).toBeLessThanOrEqual(Math.floor(max / 2));
    expect(inside.errno).toBe('24'); // EMFILE: the sandbox's share ran out
    expect(host.stdout.trim(), host.stderr).toBe('8');
  });

  it('the user-namespace limits are set from the host\'s and cannot be raised inside', async () => {
    const r = await srt(['--', 'sh', '-c', 'for f in max_inotify_instances max_inotify_watches; do echo "$f=$(cat /proc/sys/user/$f)"; done; echo 100000 > /proc/sys/user/max_inotify_instances && echo raised=yes'], { home, cwd });
    const got = keyValues(r.stdout);
    expect(got).toEqual({
      max_inotify_instances: String(Math.floor(sysctl('fs.inotify.max_user_instances') / 2)),
      max_inotify_watches: String(Math.floor(sysctl('fs.inotify.max_user_watches') / 2)),
    });
  });

  it('queued signals, POSIX message queue bytes and processes: the sandbox gets half of the caller\'s limits, soft and hard; processes at most a quarter of the host\'s PID space', async () => {
    const code = [
      'import resource',
      'for name in ("RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NPROC"):',
      '    print("%s=%d:%d" % ((name,) + resource.getrlimit(getattr(resource, name))))',
    ].join('\n');
    const host = keyValues(spawnSync('python3', ['-c', code], { encoding: 'utf8' }).stdout);
    const r = await srt(['--', 'python3', '-c', code], { home, cwd });
    const inside = keyValues(r.stdout);
    const half = (v: string) => {
      const soft = Number(v.split(':')[0]);
      return soft < 0 ? v : `${Math.max(1, Math.floor(soft / 2))}:${Math.max(1, Math.floor(soft / 2))}`; // -1: unlimited stays
    };
    for (const name of ['RLIMIT_SIGPENDING', 'RLIMIT_MSGQUEUE']) expect(inside[name], `${name} ${r.stderr}`).toBe(half(host[name]!));
    // The host's values, read here: inside the sandbox's PID namespace pid_max may read the
    // namespace's own (4194304), which would bound nothing.
    const space = Math.max(1, Math.floor(Math.min(sysctl('kernel.pid_max'), sysctl('kernel.threads-max')) / 4));
    const soft = Number(host.RLIMIT_NPROC!.split(':')[0]);
    const nproc = soft < 0 ? space : Math.min(space, Math.max(1, Math.floor(soft / 2)));
    expect(inside.RLIMIT_NPROC, r.stderr).toBe(`${nproc}:${nproc}`);
  });

  it('processes: at the caller\'s hard limit (unlimited where it is) the bound is still at most a quarter of the host\'s PID space', async () => {
    const space = Math.max(1, Math.floor(Math.min(sysctl('kernel.pid_max'), sysctl('kernel.threads-max')) / 4));
    // The caller's soft limit raised to its hard one: unlimited where that is (root often), which
    // half of would bound nothing.
    const hard = spawnSync('bash', ['-c', 'ulimit -H -u'], { encoding: 'utf8' }).stdout.trim();
    const r = spawnSync('bash', ['-c', `ulimit -u ${hard} && exec "$@"`, 'bash', process.execPath, SRT_BIN, '--', 'sh', '-c', 'grep "^Max processes" /proc/self/limits; echo pid_max=$(cat /proc/sys/kernel/pid_max)'],
      { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, timeout: 60_000 });
    const half = hard === 'unlimited' ? Infinity : Math.max(1, Math.floor(Number(hard) / 2));
    const want = Math.min(space, half);
    expect(r.stdout, r.stderr).toMatch(new RegExp(`^Max processes +${want} +${want} +processes`, 'm'));
  });

  // The kernel does not apply RLIMIT_NPROC to uid 0 (docs/linux-sandbox.md says what bounds a
  // root caller): the count is checked for everyone else.
  it.skipIf(process.getuid?.() === 0)('processes: RLIMIT_NPROC inside is half of the caller\'s, counted for the sandbox alone, and cannot be raised', async () => {
    // Room above what this user runs already, so the sandbox's own count is what stops it.
    const uid = process.getuid!();
    let tasks = 0;
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        if (new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(status)) tasks += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
      } catch { /* gone */ }
    }
    const limit = 2 * tasks + 400;
    const code = [
      'import os, resource, time',
      'print("nproc=%d:%d" % resource.getrlimit(resource.RLIMIT_NPROC))',
      'try: resource.setrlimit(resource.RLIMIT_NPROC, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)); print("raised=yes")',
      'except (ValueError, OSError): print("raised=no")',
      'n = 0',
      `while n < ${limit}:`,
      '    try: pid = os.fork()',
      '    except OSError: break',
      '    if pid == 0: time.sleep(2); os._exit(0)',
      '    n += 1',
      'print(f"forked={n}")',
    ].join('\n');
    const r = spawnSync('bash', ['-c', `ulimit -u ${limit} && exec "$@"`, 'bash', process.execPath, SRT_BIN, '--', 'python3', '-c', code],
      { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, timeout: 60_000 });
    const got = keyValues(r.stdout);
    const half = Math.floor(limit / 2);
    expect(got.nproc, r.stderr).toBe(`${half}:${half}`);
    expect(got.raised).toBe('no');
    // bwrap, the helper, init and the shell count too.
    expect(Number(got.forked)).toBeLessThan(half);
    expect(Number(got.forked)).toBeGreaterThan(half - 20);
  });
});
