// Red-team escapes (SPEC §10 invariants 1, 2, 3, 6, 8, 9): each test tries one way out of the
// real sandbox, as root and as an unprivileged user. The first group are holes found in review:
// they fail until fixed. The second group are escapes that are refused today (regressions).
// Only loopback is ever used; every process and file a test creates is removed.
import { execa } from 'execa';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { INIT_HELPER_PATH } from '../../src/platform/init-helper.js';
import { attempt, NO_SUPERVISOR, processesWith, results, scratchDirs, srt, SRT_BIN, startBackground, stopStragglers, tempDir, writeTree } from './helpers.js';

const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
const BWRAP = ['/usr/bin/bwrap', '/bin/bwrap'].find((p) => existsSync(p)) ?? 'bwrap';

const tmp = tempDir('srt-esc-');
afterAll(async () => {
  await stopStragglers();
  tmp.cleanup(); // also what a failed test left unwritable
});
const scratch = scratchDirs(() => tmp.path);

const py = (code: string) => `${PYTHON} -c '${code.replace(/'/g, `'\\''`)}'`;



async function waitExit(child: ChildProcess, exit: Promise<number | null>): Promise<number | null | 'timeout'> {
  const code = await Promise.race([exit, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 10_000))]);
  if (code === 'timeout') child.kill('SIGKILL');
  return code;
}

describe('holes found in review (fail until fixed)', () => {
  // Invariant 3. The network namespace does not cover vsock: on a VM (Firecracker, QEMU, WSL2)
  // AF_VSOCK reaches the hypervisor's services and can listen for it, bypassing the proxy.
  // Fix: the seccomp filter allows socket() only for AF_INET/AF_INET6/AF_NETLINK (+AF_UNIX when allowed).
  it('no AF_VSOCK socket can be created inside', async () => {
    const { home, cwd } = scratch();
    const r = await srt(['--', 'sh', '-c', attempt('vsock', py('import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)'))], { home, cwd });
    expect(results(r.stdout)).toEqual({ vsock: 'no' });
  });

  // Invariant 6 (and SPEC §4: "a Unix socket could reach host daemons"). socket(AF_UNIX) is
  // refused, but socketpair(AF_UNIX, SOCK_DGRAM) is not, and a datagram socket can be re-connected
  // or sendto() any path: journald, /dev/log, NOTIFY_SOCKET, any host daemon's datagram socket.
  // bind() on it also creates new socket files. Fix: socketpair only for SOCK_STREAM/SOCK_SEQPACKET.
  it('a socketpair datagram socket cannot reach a host Unix socket nor bind a new one', async () => {
    const { base, home, cwd } = scratch();
    const sock = join(base, 'host-dgram.sock');
    // Host side: a datagram socket on a path, plus one in the abstract namespace (the sandbox's
    // network namespace must isolate that one); reports what arrived once its stdin closes.
    const abstract = `srt-esc-${process.pid}-${Date.now()}`;
    const host = execa(PYTHON, ['-c', [
      'import socket, sys',
      `a = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); a.bind(${JSON.stringify(sock)}); a.setblocking(False)`,
      `b = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); b.bind("\\0${abstract}"); b.setblocking(False)`,
      'print("ready", flush=True); sys.stdin.read()',
      'def got(s):',
      '    try: return s.recv(100).decode()',
      '    except BlockingIOError: return "nothing"',
      'print("path", got(a)); print("abstract", got(b))',
    ].join('\n')], { stdin: 'pipe', reject: false, timeout: 30_000 });
    try {
      await new Promise<void>((res) => host.stdout!.on('data', (b: Buffer) => { if (b.toString().includes('ready')) res(); }));
      const script = [
        attempt('sendto', py(`import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b"escaped", ${JSON.stringify(sock)})`)),
        attempt('connect', py(`import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.connect(${JSON.stringify(sock)}); a.send(b"escaped")`)),
        attempt('abstract', py(`import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b"escaped", "\\0${abstract}")`)),
        attempt('bind', py('import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.bind("new.sock")')),
        attempt('streamPair', py('import socket; a, b = socket.socketpair(); a.sendall(b"ok"); assert b.recv(2) == b"ok"')),
      ].join('\n');
      const r = await srt(['--', 'sh', '-c', script], { home, cwd });
      host.stdin!.end();
      const h = await host;
      expect(String(h.stdout)).toContain('path nothing');
      expect(String(h.stdout)).toContain('abstract nothing');
      expect(results(r.stdout)).toEqual({ sendto: 'no', connect: 'no', abstract: 'no', bind: 'no', streamPair: 'yes' });
      expect(existsSync(join(cwd, 'new.sock'))).toBe(false);
    } finally {
      host.kill('SIGKILL');
      await host;
    }
  });

  // Invariant 1 (protected paths exist to stop code running on the host later). git reads
  // `$GIT_DIR/commondir` in any git dir: writing `.git/commondir` points config and hooks at a
  // directory the command wrote (core.fsmonitor runs on the next `git status` outside).
  // The same holds for a linked worktree's `.git/worktrees/<name>/commondir`.
  // srt protects an existing `commondir`/`gitdir` and the whole `worktrees/` dir; a missing
  // `.git/commondir` cannot be created (the supervisor refuses it; test/e2e/protect.test.ts has
  // the run without it).
  it('a .git/commondir cannot be created, so git outside never reads config or hooks the command wrote', async () => {
    const { base, home, cwd } = scratch();
    const git = (dir: string, ...args: string[]) => execFileSync('git', ['-c', 'init.defaultBranch=main', '-c', 'user.email=e@x', '-c', 'user.name=n', ...args], { cwd: dir, stdio: 'ignore', env: { ...process.env, HOME: home } });
    git(cwd, 'init', '-q');
    git(cwd, 'commit', '-q', '--allow-empty', '-m', 'init');
    git(cwd, 'worktree', 'add', '-q', join(base, 'wt'));
    const pwned = join(base, 'PWNED');
    const script = [
      'mkdir -p evil/hooks evil/refs evil/objects && cp .git/HEAD evil/',
      `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "touch ${pwned}; false"\\n' > evil/config`,
      attempt('commondir', 'echo ../evil > .git/commondir'),
      attempt('wtCommondir', `echo ${cwd}/evil > .git/worktrees/wt/commondir`),
      attempt('wtGitdir', 'echo /tmp/elsewhere/.git > .git/worktrees/wt/gitdir'),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd });
    expect(results(r.stdout)).toEqual({ commondir: 'no', wtCommondir: 'no', wtGitdir: 'no' });
    expect(existsSync(join(cwd, '.git', 'commondir'))).toBe(false);
    expect(r.stderr).toMatch(/srt: refused writing \.git\/commondir \(protected\)/);
    // What the user would run next, outside the sandbox.
    await execa('git', ['status'], { cwd, reject: false, env: { HOME: home } });
    await execa('git', ['status'], { cwd: join(base, 'wt'), reject: false, env: { HOME: home } });
    expect(existsSync(pwned)).toBe(false);
  });

  // Invariant 1. When removing the run dir fails (the command left a chmod-000 directory in
  // TMPDIR; only possible for a non-root caller), the fallback `removeTree` fixes permissions with
  // statSync + chmodSync, which follow symlinks: a symlink planted in TMPDIR makes srt chmod 0700
  // any directory tree the user owns, outside the sandbox. Symlink loops (`a -> ..`, `b -> ..`)
  // make the same walk exponential: srt hangs after the command ended and never cleans up.
  // Fix: lstat, never follow symlinks, no recursion through links (or chmod via fd + O_NOFOLLOW).
  it('cleaning TMPDIR never follows a symlink the command planted there', async () => {
    const { base, home, cwd } = scratch();
    const victim = join(base, 'victim');
    mkdirSync(join(victim, 'sub'), { recursive: true });
    chmodSync(victim, 0o755);
    chmodSync(join(victim, 'sub'), 0o755);
    const r = await srt(['--', 'sh', '-c',
      `echo "$TMPDIR"; mkdir "$TMPDIR/locked" && ln -s ${victim} "$TMPDIR/locked/link" && chmod 000 "$TMPDIR/locked"`], { home, cwd });
    expect(r.exitCode).toBe(0);
    const runDir = dirname(String(r.stdout).trim());
    expect(statSync(victim).mode & 0o777).toBe(0o755);
    expect(statSync(join(victim, 'sub')).mode & 0o777).toBe(0o755);
    expect(existsSync(runDir)).toBe(false);
  });

  // Invariant 2 (and 1). bwrap's new session (setsid) keeps the caller's session keyring, so the
  // command can read (and update, unlink) keys the user's session holds: Kerberos KEYRING
  // caches, ecryptfs/fscrypt keys, tokens stored with keyctl. Fix: refuse keyctl/add_key/
  // request_key in the seccomp filter (as container runtimes do), or join a fresh session keyring.
  it('the caller\'s session keyring is neither readable nor writable inside', async () => {
    const { home, cwd } = scratch();
    const code = [
      'import ctypes, os, subprocess, sys',
      'libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long',
      'ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]',
      'def keyctl(*a): return libc.syscall(ctypes.c_long(KEYCTL), *[ctypes.c_long(x) if isinstance(x, int) else x for x in a])',
      'if sys.argv[1] == "host":',
      '    keyctl(1, None)  # KEYCTL_JOIN_SESSION_KEYRING: a fresh anonymous session for this test only',
      '    kid = libc.syscall(ctypes.c_long(ADD_KEY), b"user", b"srt-esc", b"KEYRING-SECRET", ctypes.c_long(14), ctypes.c_long(-3))',
      '    assert kid > 0',
      '    r = subprocess.run(sys.argv[2:] + [str(kid)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)',
      '    sys.stdout.write(r.stdout.decode())',
      '    buf = ctypes.create_string_buffer(64); n = keyctl(11, kid, buf, 64)',
      '    print("host-after", buf.raw[:max(n, 0)].decode())',
      '    keyctl(21, kid)  # KEYCTL_INVALIDATE',
      'else:',
      '    kid = int(sys.argv[2]); buf = ctypes.create_string_buffer(64)',
      '    n = keyctl(11, kid, buf, 64)  # KEYCTL_READ',
      '    print("read", "yes" if n > 0 and b"SECRET" in buf.raw else "no")',
      '    print("update", "yes" if keyctl(2, kid, b"CHANGED", 7) == 0 else "no")  # KEYCTL_UPDATE',
    ].join('\n');
    const script = join(dirname(cwd), 'keys.py');
    writeFileSync(script, code);
    const r = await execa(PYTHON, [script, 'host', process.execPath, SRT_BIN, '--', PYTHON, script, 'inside'],
      { cwd, reject: false, timeout: 30_000, env: { HOME: home, PATH: process.env.PATH } });
    expect(String(r.stdout)).toContain('read no');
    expect(String(r.stdout)).toContain('update no');
    expect(String(r.stdout)).toContain('host-after KEYRING-SECRET');
  });

  // Invariant 1 (and the intent of 6). A read-only bind does not stop opening a FIFO for
  // writing: any named pipe in a readable directory is a channel to the host process reading
  // it (e.g. /run/initctl, editor/player control FIFOs). Fix: Landlock (the kernel has it here)
  // denying LANDLOCK_ACCESS_FS_WRITE_FILE outside the writable set, which covers FIFOs.
  it('a host FIFO outside the writable set cannot be written', async () => {
    const { base, home, cwd } = scratch();
    const fifo = join(base, 'host.fifo');
    execFileSync('mkfifo', [fifo]);
    // O_RDWR on the host side keeps the FIFO open so the sandbox's open never blocks.
    const reader = execa(PYTHON, ['-c', [
      'import os, sys, select',
      `fd = os.open(${JSON.stringify(fifo)}, os.O_RDWR | os.O_NONBLOCK)`,
      'print("ready", flush=True); sys.stdin.read()',
      'r, _, _ = select.select([fd], [], [], 0)',
      'print("got", os.read(fd, 100).decode().strip() if r else "nothing")',
    ].join('\n')], { stdin: 'pipe', reject: false, timeout: 30_000 });
    try {
      await new Promise<void>((res) => reader.stdout!.on('data', (b: Buffer) => { if (b.toString().includes('ready')) res(); }));
      const r = await srt(['--', 'sh', '-c', attempt('fifo', `echo escaped > ${fifo}`)], { home, cwd });
      reader.stdin!.end();
      const h = await reader;
      expect(results(r.stdout)).toEqual({ fifo: 'no' });
      expect(String(h.stdout)).toContain('got nothing');
    } finally {
      reader.kill('SIGKILL');
      await reader;
    }
  });

  // The FIFO fix (Landlock in the helper) must not cost ordinary work inside the writable set.
  it('with Landlock on: cwd, TMPDIR, renames across directories, FIFOs, socket files (allowAllUnixSockets), /dev/null, a pty', async () => {
    const { base, home, cwd } = scratch();
    const settings = join(base, 'unix.json');
    writeFileSync(settings, JSON.stringify({ network: { allowAllUnixSockets: true } }));
    const r = await srt(['--settings', settings, '-c', [
      attempt('cwd', 'mkdir -p a b && echo x > a/f && mv a/f b/g && ln b/g h && ln -s b/g s && rm -r a'),
      attempt('tmp', 'echo x > "$TMPDIR/t" && mkdir "$TMPDIR/d" && mv "$TMPDIR/t" "$TMPDIR/d/" && rm -r "$TMPDIR/d"'),
      attempt('fifo', 'mkfifo p && rm p'),
      attempt('sock', py('import socket; s = socket.socket(socket.AF_UNIX); s.bind("k.sock"); s.listen(); print(s.getsockname())')),
      attempt('null', 'echo x > /dev/null && : > /dev/null'),
      attempt('pty', 'script -qec true /dev/null'),
    ].join('\n')], { home, cwd });
    expect(results(r.stdout), String(r.stderr)).toEqual({ cwd: 'yes', tmp: 'yes', fifo: 'yes', sock: 'yes', null: 'yes', pty: 'yes' });
    expect(statSync(join(cwd, 'k.sock')).isSocket()).toBe(true);
  });

  // Invariant 9. Ctrl-\ sends SIGQUIT to the terminal's foreground group: srt (the command is in
  // its own session, so it does not get it). Node dies without running exit handlers, leaving
  // every placeholder in cwd, the state file and the run dir. Fix: handle SIGQUIT (and the other
  // default-fatal signals) like SIGTERM.
  it('SIGQUIT to srt ends the command and leaves nothing behind', async () => {
    const { home, cwd } = scratch();
    const marker = `7${process.pid}${Date.now() % 100000}`;
    // Without the supervisor, so that there are placeholders to clean up.
    const { child, out, exit } = await startBackground(['--', 'sh', '-c', `echo $TMPDIR; echo ready; exec sleep ${marker}`], home, cwd, NO_SUPERVISOR);
    const runDir = dirname(out().split('\n')[0]!);
    expect(readdirSync(cwd).length).toBeGreaterThan(0); // the placeholders of this run
    child.kill('SIGQUIT');
    await waitExit(child, exit);
    // bwrap's --die-with-parent ends the sandbox when srt is gone; the kernel may take a moment.
    await vi.waitFor(() => expect(processesWith(marker)).toEqual([]), { timeout: 30_000, interval: 50 });
    expect(readdirSync(cwd)).toEqual([]);
    expect(existsSync(runDir)).toBe(false);
    expect(readdirSync(join(home, '.srt/state')).filter((n) => n.endsWith('.json'))).toEqual([]);
  });
});

describe('escapes that are refused (regressions)', () => {
  // Invariants 1 and 2. bwrap closes none of its caller's inheritable fds; a directory fd reopened
  // through /proc/self/fd/N lands on the host's own mount (read-write, denyRead not applied).
  // The helper closes every fd past stderr (found here, fixed in 7e8f0d9).
  it('inherited file descriptors do not reach the command', async () => {
    const { base, home, cwd } = scratch();
    const outside = join(base, 'outside');
    writeTree(base, { 'outside/keep': 'x', 'secret/key': 'SECRET-BY-FD' });
    const settings = join(base, 's.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyRead: [join(base, 'secret')] } }));
    const code = [
      'import os, subprocess, sys',
      `a = os.open(${JSON.stringify(outside)}, os.O_RDONLY | os.O_DIRECTORY); os.dup2(a, 20)`,
      `b = os.open(${JSON.stringify(join(base, 'secret'))}, os.O_RDONLY | os.O_DIRECTORY); os.dup2(b, 21)`,
      'r = subprocess.run(sys.argv[1:], pass_fds=(20, 21), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)',
      'sys.stdout.write(r.stdout.decode())',
    ].join('\n');
    const script = [
      attempt('fdList', 'test -z "$(ls /proc/self/fd | grep -vx "[0-3]")"'),
      attempt('write', 'echo escaped > /proc/self/fd/20/written'),
      attempt('read', 'grep -q SECRET-BY-FD /proc/self/fd/21/key'),
    ].join('\n');
    const r = await execa(PYTHON, ['-c', code, process.execPath, SRT_BIN, '--settings', settings, '--', 'sh', '-c', script],
      { cwd, reject: false, timeout: 30_000, env: { HOME: home, PATH: process.env.PATH } });
    expect(results(r.stdout)).toEqual({ fdList: 'yes', write: 'no', read: 'no' });
    expect(readdirSync(outside)).toEqual(['keep']);
  });

  it('writes: /proc magic links, hard links, devices, cgroups, git global config, worktrees out, protected renames', async () => {
    const { base, home, cwd } = scratch();
    writeTree(base, { 'home/hfile': 'H', 'other/keep': 'x' });
    const other = join(base, 'other');
    const script = [
      attempt('procSelfRoot', `echo x > /proc/self/root${other}/a`),
      attempt('proc1Cwd', 'echo x > /proc/1/cwd/../other/b'),
      attempt('procSysViaRoot', 'echo 1 > /proc/self/root/proc/sys/vm/drop_caches'),
      attempt('procIrq', 'echo 1 > /proc/irq/default_smp_affinity'),
      attempt('hardlinkOut', `ln ${home}/hfile hl && echo x >> hl`),
      attempt('mknod', 'mknod nul c 1 3'),
      attempt('cgroup', 'for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs; do echo $$ > $f && exit 0; done; exit 1'),
      attempt('gitGlobal', 'git config --global user.name evil'),
      attempt('xdgGit', 'mkdir -p "$HOME/.config/git" && echo x > "$HOME/.config/git/config"'),
      attempt('worktreeOut', `git init -q r && cd r && git -c user.email=e@x -c user.name=n commit -q --allow-empty -m m && git worktree add -q ${other}/wt`),
      attempt('cpIntoVscode', 'mkdir -p x/y && cp -r x .vscode/'),
      attempt('lnIntoIdea', 'ln -s /tmp .idea/link'),
      attempt('mvOverBashrc', 'echo e > e && mv -f e .bashrc'),
      attempt('renameOverProfile', `echo e > e2 && ${py('import os; os.rename("e2", ".profile")')}`),
      attempt('srtDirs', `mkdir -p ${home}/.srt/x || touch /etc/srt/x`),
      attempt('devShmPrivate', 'echo x > /dev/shm/srt-esc-probe && test -e /dev/shm/srt-esc-probe'),
    ].join('\n');
    const r = await srt(['--', 'sh', '-c', script], { home, cwd });
    expect(results(r.stdout)).toEqual({
      procSelfRoot: 'no', proc1Cwd: 'no', procSysViaRoot: 'no', procIrq: 'no', hardlinkOut: 'no', mknod: 'no',
      cgroup: 'no', gitGlobal: 'no', xdgGit: 'no', worktreeOut: 'no', cpIntoVscode: 'no', lnIntoIdea: 'no',
      mvOverBashrc: 'no', renameOverProfile: 'no', srtDirs: 'no', devShmPrivate: 'yes',
    });
    expect(readdirSync(other)).toEqual(['keep']);
    expect(readFileSync(join(home, 'hfile'), 'utf8')).toBe('H');
    expect(readdirSync(home).filter((n) => n !== '.srt')).toEqual(['hfile']);
    expect(existsSync('/dev/shm/srt-esc-probe')).toBe(false);
  });

  it('reads: denyRead through `..` from a carve-out, /proc/self/root, a symlink made inside, a hard link attempt', async () => {
    const { base, home, cwd } = scratch();
    writeTree(base, { 'home/secret/key': 'SECRET-1', 'home/secret/pub/p': 'PUBLIC' });
    const secret = join(home, 'secret');
    const settings = join(base, 's.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyRead: [secret], allowRead: [join(secret, 'pub')] } }));
    const script = [
      attempt('carve', `grep -q PUBLIC ${secret}/pub/p`),
      attempt('dotdot', `grep -q SECRET ${secret}/pub/../key`),
      attempt('cdDotdot', `cd ${secret}/pub && cd .. && grep -q SECRET key`),
      attempt('procRoot', `grep -q SECRET /proc/self/root${secret}/key`),
      attempt('symlinkIn', `ln -s ${secret}/key lk && grep -q SECRET lk`),
      attempt('hardlinkIn', `ln ${secret}/key hk && grep -q SECRET hk`),
      attempt('findContent', `grep -rqs SECRET-1 ${home}`),
    ].join('\n');
    const r = await srt(['--settings', settings, '--', 'sh', '-c', script], { home, cwd });
    expect(results(r.stdout)).toEqual({
      carve: 'yes', dotdot: 'no', cdDotdot: 'no', procRoot: 'no', symlinkIn: 'no', hardlinkIn: 'no', findContent: 'no',
    });
  });

  it('network: loopback listeners on the host are unreachable over TCP and UDP; only lo exists; no raw/packet sockets', async () => {
    const { home, cwd } = scratch();
    const tcp = createServer((s) => { s.end('hello'); });
    await new Promise<void>((res) => tcp.listen(0, '127.0.0.1', res));
    const tcpPort = (tcp.address() as { port: number }).port;
    const udp = createSocket('udp4');
    const datagrams: string[] = [];
    udp.on('message', (m) => datagrams.push(m.toString()));
    await new Promise<void>((res) => udp.bind(0, '127.0.0.1', res));
    const udpPort = udp.address().port;
    try {
      const script = [
        attempt('tcp', py(`import socket; s = socket.create_connection(("127.0.0.1", ${tcpPort}), timeout=2); assert s.recv(5) == b"hello"`)),
        attempt('udpSent', py(`import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"escaped", ("127.0.0.1", ${udpPort}))`)),
        attempt('hostPortListed', `grep -qi ":$(printf %04X ${tcpPort}) " /proc/net/tcp`),
        attempt('onlyLo', 'test "$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " ")" = lo'),
        attempt('raw', py('import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)')),
        attempt('packet', py('import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)')),
        attempt('unixSocket', py('import socket; socket.socket(socket.AF_UNIX)')),
        attempt('loopbackInside', py('import socket; l = socket.create_server(("127.0.0.1", 0)); socket.create_connection(l.getsockname(), timeout=2)')),
      ].join('\n');
      const r = await srt(['--', 'sh', '-c', script], { home, cwd });
      await new Promise((res) => setTimeout(res, 200));
      expect(results(r.stdout)).toEqual({
        tcp: 'no', udpSent: 'yes', hostPortListed: 'no', onlyLo: 'yes', raw: 'no', packet: 'no', unixSocket: 'no', loopbackInside: 'yes',
      });
      expect(datagrams).toEqual([]);
    } finally {
      tcp.close();
      udp.close();
    }
  });

  it('a daemon the command leaves behind is gone when srt returns; SIGTERM to srt cleans up everything', async () => {
    const { home, cwd } = scratch();
    const m1 = `8${process.pid}${Date.now() % 100000}`;
    const r = await srt(['--', 'sh', '-c', `setsid sh -c 'sleep ${m1}' </dev/null >/dev/null 2>&1 & (nohup sleep ${m1}1 >/dev/null 2>&1 &); echo "$TMPDIR"`], { home, cwd });
    expect(r.exitCode).toBe(0);
    await new Promise((res) => setTimeout(res, 200));
    expect(processesWith(m1)).toEqual([]);
    expect(existsSync(dirname(String(r.stdout).trim()))).toBe(false);

    const m2 = `6${process.pid}${Date.now() % 100000}`;
    const { child, out, exit } = await startBackground(['--', 'sh', '-c', `echo $TMPDIR; (setsid sleep ${m2} &); echo ready; sleep ${m2}1`], home, cwd);
    const runDir = dirname(out().split('\n')[0]!);
    child.kill('SIGTERM');
    expect(await waitExit(child, exit)).toBe(143);
    await new Promise((res) => setTimeout(res, 200));
    expect(processesWith(m2)).toEqual([]);
    expect(existsSync(runDir)).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
    const state = join(home, '.srt/state');
    expect(existsSync(state) ? readdirSync(state) : []).toEqual([]);
  });

  it('a missing or foreign srt-init stops the run with 125 and nothing runs', async () => {
    const { base, home, cwd } = scratch();
    const marker = join(cwd, 'marker');
    const fake = join(base, 'fake-helper');
    // An executable that would run its command without any filter, were srt to accept it.
    writeFileSync(fake, '#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done; shift; exec "$@"\n');
    chmodSync(fake, 0o755);
    // srt finds its helper at a fixed path: hide it from inside an outer bubblewrap.
    const hidden = (cover: string) => execa(BWRAP!, ['--dev-bind', '/', '/', '--ro-bind', cover, INIT_HELPER_PATH, '--', process.execPath, SRT_BIN, '--', 'touch', marker],
      { cwd, env: { PATH: process.env.PATH, HOME: home }, extendEnv: false, reject: false, stdin: 'ignore', timeout: 30_000 });
    for (const cover of ['/dev/null', fake]) {
      const r = await hidden(cover);
      expect(r.exitCode, cover).toBe(125);
      expect(String(r.stderr), cover).toMatch(/^srt: .*srt-init/m);
      expect(existsSync(marker), cover).toBe(false);
    }
    expect(readdirSync(cwd)).toEqual([]);
  });

  // Globs: rg's extra syntax (`{a,b}`, `\`) must not make a deny glob match nothing, and a glob
  // srt cannot apply is a settings error, not a crash or a silent no-op.
  it('deny-read globs with braces still hide their matches; an invalid glob is a clear error', async () => {
    const { home, cwd } = scratch();
    writeTree(cwd, { 'a{b.txt': 'brace secret\n', 'plain.txt': 'visible\n' });
    const r = await srt(['--deny-read', `${cwd}/*{b.txt`, '-c', 'cat "a{b.txt"; cat plain.txt'], { home, cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe('visible');
    const bad = await srt(['--deny-read', `${cwd}/sec[z-a]*`, '--', 'touch', 'ran'], { home, cwd });
    expect(bad.exitCode).toBe(125);
    expect(bad.stderr).toMatch(/^srt: --deny-read: ".*sec\[z-a\]\*": invalid glob \(.*Range out of order/);
    expect(existsSync(join(cwd, 'ran'))).toBe(false);
  });
});
