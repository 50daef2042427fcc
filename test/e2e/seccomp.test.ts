// The real bubblewrap + the real srt-init + the generated filter, launched directly
// (the way src/sandbox.ts launches them), with real clients inside. SPEC §4, invariant 6.
import { execa, type Options } from 'execa';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createConnection, createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bwrapIsolationArgs } from '../../src/profiles/bwrap-launch.js';
import { hostListenArgv, initArgv, type InitArgs, type RelayListen } from '../../src/profiles/init-args.js';
import { bwrapMountArgs, type MountOp } from '../../src/profiles/mounts.js';
import { buildSeccompFilter } from '../../src/profiles/seccomp.js';
import { INIT_HELPER_PATH, hostSeccompArch } from '../../src/platform/init-helper.js';
import { processesWith, REPO, tempDir } from './helpers.js';

const arch = hostSeccompArch();
// No silent skip: without bwrap these tests fail (scripts/setup.sh installs it).
const BWRAP = ['/usr/bin/bwrap', '/bin/bwrap'].find((p) => existsSync(p)) ?? 'bwrap';
const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
const RELAY_PORT = 3128;

const tmp = tempDir('srt-init-e2e-');
const runDir = join(tmp.path, 'run');
const socketPath = join(runDir, 'http.sock');
const filters = {
  strict: join(tmp.path, 'strict.bpf'),
  unix: join(tmp.path, 'unix.bpf'),
  ns: join(tmp.path, 'ns.bpf'),
  bad: join(tmp.path, 'bad.bpf'),
};
let server: Server | undefined;

beforeAll(async () => {
  if (!arch) return; // no filter for this architecture: the describe below is skipped too
  if (!existsSync(INIT_HELPER_PATH)) await execa('bash', [join(REPO, 'scripts', 'build-init.sh')]);
  writeFileSync(filters.strict, buildSeccompFilter({ arch, allowUnixSockets: false, allowNamespaces: false }));
  writeFileSync(filters.unix, buildSeccompFilter({ arch, allowUnixSockets: true, allowNamespaces: false }));
  writeFileSync(filters.ns, buildSeccompFilter({ arch, allowUnixSockets: false, allowNamespaces: true }));
  writeFileSync(filters.bad, Buffer.alloc(12));
  mkdirSync(runDir);
  // Stands in for srt's proxy: an HTTP responder on a Unix socket outside the sandbox.
  server = createServer((req, res) => res.end(`unix responder: ${req.method} ${req.url}\n`));
  await new Promise<void>((resolve) => server!.listen(socketPath, resolve));
});

afterAll(async () => {
  if (server) await new Promise((resolve) => server!.close(resolve));
  tmp.cleanup();
});

interface RunOptions {
  filter?: keyof typeof filters;
  /** The proxy's relay (RELAY_PORT to the Unix responder). */
  relay?: boolean;
  /** Other relays (instead). */
  relays?: RelayListen[];
  env?: Record<string, string>;
  /** srt-init keeps CAP_NET_BIND_SERVICE too (a relay below port 1024). */
  lowPort?: boolean;
  /** Capabilities srt gives srt-init that this run leaves out. */
  withoutCaps?: string[];
  /** srt-init's options as given (what srt never writes: its parser must refuse them), with --max-procs. */
  helperArgs?: string[];
  extraBwrap?: string[];
}

/** bwrap's options as srt writes them (profiles/bwrap-launch.ts, mounts.ts), on a read-only host
 *  with the run directory writable. */
function bwrapArgs(opts: RunOptions): string[] {
  const isolation = bwrapIsolationArgs({ lowPort: opts.lowPort ?? false })
    .filter(([option, cap]) => !(option === '--cap-add' && opts.withoutCaps?.includes(cap!)));
  const ops: MountOp[] = [
    { kind: 'bind', dest: '/', source: '/', ro: true }, { kind: 'dev', dest: '/dev' }, { kind: 'proc', dest: '/proc' },
    { kind: 'bind', dest: runDir, source: runDir, ro: false },
  ];
  return [...isolation.flat(), ...bwrapMountArgs(ops).flat(), ...(opts.extraBwrap ?? [])];
}

/** srt-init's argv as srt writes it (initArgv), or the raw `helperArgs`, then the command. */
function sandboxArgv(cmd: string[], opts: RunOptions): string[] {
  const init = opts.helperArgs ? [INIT_HELPER_PATH, '--max-procs', '1000', ...opts.helperArgs, '--'] : initArgv({
    helperPath: INIT_HELPER_PATH, exposes: [], maxProcs: 1000, filter: filters[opts.filter ?? 'strict'],
    relays: opts.relays ?? (opts.relay ? [{ address: '127.0.0.1', port: RELAY_PORT, socketPath }] : []),
    // As srt does: a nested sandbox needs mount(2), which Landlock refuses.
    landlock: opts.filter === 'ns' ? 'off' : { writable: [], socketFiles: false },
  });
  return [...bwrapArgs(opts), '--', ...init, ...cmd];
}

const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', HOME: tmp.path };

interface Run { exitCode?: number; stdout: string; stderr: string }

async function sandbox(cmd: string[], opts: RunOptions = {}): Promise<Run> {
  const r = await execa(BWRAP!, sandboxArgv(cmd, opts), {
    reject: false, stdin: 'ignore', timeout: 20_000, extendEnv: false, env: { ...ENV, ...opts.env },
  });
  return { exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) };
}

const sh = (script: string, opts?: RunOptions): Promise<Run> => sandbox(['/bin/sh', '-c', script], opts);

// Prints the errno (0 = success) of each probe, one per line.
const PY_PROBES = `
import ctypes, errno, fcntl, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def sock(family, kind=socket.SOCK_STREAM):
    try:
        socket.socket(family, kind).close(); return 0
    except OSError as e: return e.errno
def connect_unix(path):
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(path); return 0
    except OSError as e: return e.errno
def syscall(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
def tiocsti():
    fd = os.open('/dev/null', os.O_RDWR)
    try:
        fcntl.ioctl(fd, 0x5412, b'x'); return 0
    except OSError as e: return e.errno
def pair():
    try:
        a, b = socket.socketpair(); a.sendall(b'ok'); return 0 if b.recv(2) == b'ok' else -1
    except OSError as e: return e.errno
nr = dict(x86_64=dict(io_uring_setup=425, clone3=435, mount=165), aarch64=dict(io_uring_setup=425, clone3=435, mount=40))[os.uname().machine]
params = ctypes.create_string_buffer(120)
print('unix', sock(socket.AF_UNIX))
print('unix_dgram', sock(socket.AF_UNIX, socket.SOCK_DGRAM))
print('inet', sock(socket.AF_INET))
print('inet6', sock(socket.AF_INET6))
print('connect_host_socket', connect_unix(sys.argv[1]))
print('socketpair', pair())
print('io_uring_setup', syscall(nr['io_uring_setup'], 4, ctypes.addressof(params)))
print('clone3', syscall(nr['clone3'], 0, 0))
print('mount', syscall(nr['mount'], 0, 0, 0, 0, 0))
print('tiocsti', tiocsti())
`;

function probes(stdout: string): Record<string, number> {
  return Object.fromEntries(stdout.trim().split('\n').map((l) => {
    const [k, v] = l.split(' ');
    return [k, Number(v)];
  }));
}

describe.skipIf(!arch)('srt-init in bubblewrap', () => {
  it('python: no AF_UNIX socket, no host socket, no io_uring/mount/TIOCSTI, clone3 ENOSYS; inet and socketpair work', async () => {
    const r = await sandbox([PYTHON, '-c', PY_PROBES, socketPath], { relay: true });
    expect(r.stderr).toBe('');
    expect(probes(r.stdout)).toEqual({
      unix: 1, unix_dgram: 1, inet: 0, inet6: 0, connect_host_socket: 1, socketpair: 0,
      io_uring_setup: 1, clone3: 38, mount: 1, tiocsti: 1,
    });
    expect(r.exitCode).toBe(0);
  });

  it('python: with the socket rule removed an AF_UNIX socket can be created (and the host socket reached)', async () => {
    const r = await sandbox([PYTHON, '-c', PY_PROBES, socketPath], { filter: 'unix' });
    const p = probes(r.stdout);
    expect(p.unix).toBe(0);
    expect(p.connect_host_socket).toBe(0);
    expect(p.io_uring_setup).toBe(1);
    expect(p.clone3).toBe(38);
  });

  it.skipIf(arch !== 'x86_64')('kills a process that makes an x32 syscall (SIGSYS → 159)', async () => {
    const r = await sandbox([PYTHON, '-c', 'import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39); print("survived")']);
    expect(r.stdout).toBe('');
    expect(r.exitCode).toBe(128 + 31);
  });

  it('node: cannot connect to or listen on a Unix socket; child processes (socketpair stdio) still work', async () => {
    const code = `
      const net = require('net'), cp = require('child_process');
      const out = { child: cp.execFileSync('/bin/echo', ['hi']).toString().trim() };
      const c = net.connect(process.argv[1]);
      c.on('connect', () => { out.connect = 'connected'; done(); });
      c.on('error', (e) => { out.connect = e.code; done(); });
      function done() {
        const s = net.createServer().listen(process.argv[1] + '.new');
        s.on('error', (e) => { out.listen = e.code; console.log(JSON.stringify(out)); });
        s.on('listening', () => { out.listen = 'listening'; console.log(JSON.stringify(out)); s.close(); });
      }`;
    const r = await sandbox(['node', '-e', code, socketPath]);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ child: 'hi', connect: 'EPERM', listen: 'EPERM' });
  });

  it('refuses new user and mount namespaces: unshare -r, unshare -m, unshare -U, nested bwrap', async () => {
    const r = await sh(
      'for c in "unshare -r true" "unshare -m true" "unshare -U true" "unshare -p -f true" "unshare -n true" ' +
      '"bwrap --ro-bind / / /bin/true" "bwrap --unshare-user --ro-bind / / /bin/true"; do ' +
      '$c 2>/dev/null; echo "$c => $?"; done');
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(7);
    for (const line of lines) expect(line).not.toMatch(/=> 0$/);
    const direct = await sandbox(['unshare', '-r', 'true']);
    expect(direct.stderr).toMatch(/Operation not permitted/);
  });

  it('with the namespace rules removed, a nested user+mount namespace works', async () => {
    const r = await sh('unshare -U -m true && echo ok', { filter: 'ns' });
    expect(r.stdout.trim()).toBe('ok');
  });

  // Landlock under the mounts: a read-only bind does not stop opening a FIFO for writing.
  it('Landlock: writes only beneath --writable, /dev sinks, ptys, /proc and its own stdio; a read-only FIFO refuses writers', async () => {
    const fifo = join(tmp.path, 'ro.fifo');
    execFileSync('mkfifo', [fifo]);
    const stdoutFile = join(tmp.path, 'stdout.txt'); // outside the writable set, opened by the caller
    // O_NONBLOCK with no reader: ENXIO (6) once the open gets past Landlock, EACCES (13) if refused.
    const fifoProbe = `${PYTHON} -c 'import os
try: os.open("${fifo}", os.O_WRONLY | os.O_NONBLOCK); print("fifo 0")
except OSError as e: print("fifo", e.errno)'`;
    const script = [
      fifoProbe,
      `cd ${runDir} && rm -rf lw && mkdir lw && cd lw && echo a > f && mkdir d && mv f d/ && ln -s d/f s && mkfifo p && rm p && echo ok-writable`,
      'echo x > /dev/null && echo ok-null',
      'echo 100 > /proc/self/oom_score_adj && echo ok-proc',
      'echo x > /dev/shm/x && rm /dev/shm/x && echo ok-shm',
      `script -qec 'echo ok-pty' /dev/null`,
      'echo reopened >> /dev/stdout && echo ok-stdout', // reopens a host file outside the writable set
      `echo x > ${join(tmp.path, 'outside')}; echo "outside $?"`,
    ].join('\n');
    const run = async (landlock: InitArgs['landlock']) => {
      // A plain file descriptor: execa's own stdio would be a socket, which cannot be reopened.
      const fd = openSync(stdoutFile, 'w');
      try {
        const init = initArgv({ helperPath: INIT_HELPER_PATH, relays: [], exposes: [], landlock, maxProcs: 1000, filter: filters.strict });
        const r = await execa(BWRAP!, [...bwrapArgs({}), '--', ...init, '/bin/sh', '-c', script], {
          reject: false, stdin: 'ignore', stdout: fd, timeout: 20_000, extendEnv: false, env: ENV,
        } as Options); // execa takes a descriptor number at run time; its types do not say so
        return { ...r, out: readFileSync(stdoutFile, 'utf8') };
      } finally {
        closeSync(fd);
      }
    };
    const r = await run({ writable: [runDir], socketFiles: false });
    expect(r.exitCode, r.stderr as string).toBe(0);
    expect(r.out).toContain('fifo 13');
    for (const ok of ['writable', 'null', 'proc', 'shm', 'pty', 'stdout']) expect(r.out).toContain(`ok-${ok}`);
    expect(r.out).toMatch(/^outside [1-9]/m);
    // The mounts alone let the FIFO be opened for writing: that is what Landlock is for.
    const off = await run('off');
    expect(off.out).toContain('fifo 6');
  });

  it('hides the relay and the outer helper: a fresh /proc shows only init (pid 1) and the command', async () => {
    const r = await sh(
      'for p in /proc/[0-9]*; do echo "${p#/proc/} $(cat $p/comm 2>/dev/null)"; done; ps -e -o comm= | sort | tr "\\n" " "',
      { relay: true });
    const [procLines, psLine] = [r.stdout.trim().split('\n').slice(0, -1), r.stdout.trim().split('\n').at(-1)!];
    const procs = procLines.map((l) => l.split(' ') as [string, string]);
    expect(procs.find(([pid]) => pid === '1')?.[1]).toBe('srt-init');
    expect(procs.filter(([, comm]) => comm === 'srt-init')).toHaveLength(1);
    expect(r.stdout).not.toMatch(/bwrap/);
    expect(psLine).not.toMatch(/bwrap/);
    expect(psLine).toContain('ps');
  });

  it('init cannot be read, ptraced, killed or stopped from inside; the command has no capabilities', async () => {
    const r = await sh([
      'cat /proc/1/environ >/dev/null 2>&1; echo "environ $?"',
      'readlink /proc/1/fd/2 >/dev/null 2>&1; echo "fd $?"',
      'ls /proc/1/root/ >/dev/null 2>&1; echo "root $?"',
      `${PYTHON} -c "import ctypes; l = ctypes.CDLL(None, use_errno=True); print('ptrace', l.ptrace(16, 1, 0, 0), ctypes.get_errno())"`,
      'kill -KILL 1; kill -STOP 1; sleep 0.1; grep -q "^State:.*[RS]" /proc/1/status; echo "init-running $?"',
      'grep -E "^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status',
      'grep -E "^(CapEff|CapBnd):" /proc/1/status | sed "s/^/init/"',
      'echo 1 2>/dev/null > /proc/sys/vm/drop_caches; echo "proc-sys $?"',
      'grep -E " /proc/(sys|irq|bus) " /proc/self/mountinfo | cut -d" " -f5,6 | cut -c1-20',
    ].join('\n'), { relay: true });
    const out = r.stdout;
    expect(out).toContain('environ 1');
    expect(out).toContain('fd 1');
    expect(out).toContain('root 2');
    expect(out).toContain('ptrace -1 1');
    expect(out).toContain('init-running 0');
    for (const cap of ['CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'initCapEff', 'initCapBnd']) {
      expect(out).toMatch(new RegExp(`^${cap}:\\s+0000000000000000$`, 'm'));
    }
    expect(out).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(out).toMatch(/^Seccomp:\s+2$/m);
    expect(out).not.toContain('proc-sys 0');
    expect(out).toMatch(/^\/proc\/sys ro,/m);
  });

  it('curl through the relay reaches the Unix-socket responder with the filter on', async () => {
    const r = await sandbox(['curl', '-sS', '--max-time', '10', '-x', `http://127.0.0.1:${RELAY_PORT}`, 'http://x/through-relay'], { relay: true });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('unix responder: GET http://x/through-relay');
    expect(r.exitCode).toBe(0);
  });

  it('passes exit codes through: 0, 7, 128+N on signal; 126 not executable; 127 not found', async () => {
    const notExecutable = join(tmp.path, 'not-executable');
    writeFileSync(notExecutable, 'echo should not run\n', { mode: 0o644 });
    const [ok, seven, term, killed, noexec, missing] = await Promise.all([
      sh('exit 0'), sh('exit 7'), sh('kill -TERM $$'), sh('kill -KILL $$'),
      sandbox([notExecutable]), sandbox(['srt-no-such-command']),
    ]);
    expect(ok.exitCode).toBe(0);
    expect(seven.exitCode).toBe(7);
    expect(term.exitCode).toBe(143);
    expect(killed.exitCode).toBe(137);
    expect([noexec.exitCode, noexec.stderr]).toEqual([126, `srt: ${notExecutable}: permission denied`]);
    expect([missing.exitCode, missing.stderr]).toEqual([127, 'srt: srt-no-such-command: command not found']);
  });

  it('SIGTERM and SIGHUP sent to the outer helper reach the command', async () => {
    for (const [signal, code] of [['SIGTERM', 42], ['SIGHUP', 43]] as const) {
      const script = `trap "echo got-${signal}; exit ${code}" ${signal.slice(3)}; echo ready; i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exit 99`;
      // --info-fd reports the sandbox's PID 1 (the outer helper) as seen from here.
      const child = execa(BWRAP!, ['--info-fd', '3', ...sandboxArgv(['/bin/sh', '-c', script], { relay: true })], {
        reject: false, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], timeout: 20_000, extendEnv: false, env: ENV,
      });
      let info = '';
      let out = '';
      await new Promise<void>((resolve) => {
        const check = (): void => { if (/"child-pid"/.test(info) && out.includes('ready')) resolve(); };
        child.stdio[3]!.on('data', (d: Buffer) => { info += d.toString(); check(); });
        child.stdout!.on('data', (d: Buffer) => { out += d.toString(); check(); });
        void child.then(() => resolve()); // exited early: the assertions below report it
      });
      const helperPid = Number(/"child-pid":\s*(\d+)/.exec(info)?.[1]);
      expect(helperPid).toBeGreaterThan(1);
      process.kill(helperPid, signal);
      const r = await child;
      expect(r.stdout).toContain(`got-${signal}`);
      expect(r.exitCode).toBe(code);
    }
  });

  describe('its own failures exit 125 with an srt: message and run nothing', () => {
    it('missing or malformed filter, bad relay spec, missing command', async () => {
      const marker = join(tmp.path, 'ran');
      const cmd = ['/bin/sh', '-c', `touch ${marker}`];
      const cases: [string[], RegExp][] = [
        [['--filter', join(tmp.path, 'absent.bpf')], /^srt: srt-init: cannot open filter/],
        [['--filter', filters.bad], /^srt: srt-init: .* is not a seccomp filter/],
        [['--relay', 'x:/tmp/a', '--filter', filters.strict], /^srt: srt-init: --relay x:\/tmp\/a: want ADDR:PORT:SOCKETPATH/],
        [['--relay', '3128:/tmp/a', '--filter', filters.strict], /want ADDR:PORT:SOCKETPATH/],
        [['--relay', '127.0.0.1:70000:/tmp/a', '--filter', filters.strict], /want ADDR:PORT:SOCKETPATH/],
        [['--relay', '127.0.0.1:3128:tmp/a', '--filter', filters.strict], /want ADDR:PORT:SOCKETPATH/],
        [['--relay', '[::1:3128:/tmp/a', '--filter', filters.strict], /want ADDR:PORT:SOCKETPATH/],
        [['--relay', `127.0.0.1:3128:/${'a'.repeat(120)}`, '--filter', filters.strict], /socket path longer than 107 bytes/],
        [['--expose', 'x', '--filter', filters.strict], /^srt: srt-init: --expose x: want FD:PORT/],
        [['--expose', '9:3000', '--filter', filters.strict], /^srt: srt-init: --expose 9:3000: descriptor 9 is not a listening socket/],
        [['--filter', filters.strict, '--bogus'], /^srt: srt-init: usage/],
        [['--writable', 'rel', '--filter', filters.strict], /^srt: srt-init: --writable rel: not absolute/],
        [['--writable', join(tmp.path, 'absent'), '--filter', filters.strict], /^srt: srt-init: writable path .*absent: No such file or directory/],
        [['--writable', runDir, '--no-landlock', '--filter', filters.strict], /--writable and --no-landlock exclude each other/],
      ];
      for (const [args, message] of cases) {
        const r = await sandbox(cmd, { helperArgs: args });
        expect(r.exitCode, args.join(' ')).toBe(125);
        expect(r.stderr).toMatch(message);
      }
      const noCmd = await execa(BWRAP!, sandboxArgv([], {}), { reject: false, env: ENV, extendEnv: false });
      expect([noCmd.exitCode, noCmd.stderr]).toEqual([125, expect.stringMatching(/^srt: srt-init: usage: /)]);
      expect(existsSync(marker)).toBe(false);
    });

    it('a relay that cannot listen (below 1024 without the capability), a listener given twice, capabilities it cannot drop', async () => {
      const marker = join(tmp.path, 'ran2');
      const cmd = ['/bin/sh', '-c', `touch ${marker}`];
      const privileged = await sandbox(cmd, { relays: [{ address: '127.0.0.1', port: 80, socketPath }] });
      expect([privileged.exitCode, privileged.stderr]).toEqual([125,
        'srt: cannot listen on 127.0.0.1:80 inside the sandbox: ports below 1024 need bwrap --cap-add CAP_NET_BIND_SERVICE']);
      const twice = await sandbox(cmd, { relays: [{ address: '127.0.0.1', port: 4000, socketPath }, { address: '127.0.0.1', port: 4000, socketPath }] });
      expect([twice.exitCode, twice.stderr]).toEqual([125, 'srt: srt-init: --relay: 127.0.0.1:4000 given twice']);
      const noSetpcap = await sandbox(cmd, { withoutCaps: ['CAP_SETPCAP'] });
      expect(noSetpcap.exitCode).toBe(125);
      expect(noSetpcap.stderr).toMatch(/^srt: srt-init: cannot clear the capability bounding set: start it with bwrap --cap-add CAP_SETPCAP/);
      expect(existsSync(marker)).toBe(false);
    });
  });
});

/** The relay process of the sandbox whose helper was given `marker` (bwrap's PID namespace: pid 2, forked first). */
function relayPid(marker: string): number | undefined {
  for (const line of processesWith(marker)) {
    const pid = Number(line.split(':')[0]);
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const nspid = /^NSpid:\s+(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/) ?? [];
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(INIT_HELPER_PATH) && nspid.length === 2 && nspid[1] !== '1') return pid;
    } catch { /* gone */ }
  }
  return undefined;
}

function statusField(pid: number, field: string): string | undefined {
  try {
    return new RegExp(`^${field}:\\s+(.*)$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]?.trim();
  } catch {
    return undefined;
  }
}

/** A Unix-socket server in the run directory (bound into every sandbox), closed after the test. */
async function unixServer(name: string, onConnection: (s: Socket) => void, allowHalfOpen = true): Promise<{ path: string; close: () => Promise<void> }> {
  const path = join(runDir, name);
  const srv: TcpServer = createTcpServer({ allowHalfOpen }, (s) => {
    s.on('error', () => s.destroy());
    onConnection(s);
  });
  await new Promise<void>((resolve) => srv.listen(path, resolve));
  return { path, close: () => new Promise((resolve) => srv.close(() => resolve())) };
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe.skipIf(!arch || !BWRAP)('relays (splice in the helper)', () => {
  it('pass a half-close through and keep the other direction open (no timeout), bytes intact', async () => {
    // Reads to EOF, then answers 1.5 s later with what it got: a relay that closed both ways on
    // the first EOF (socat after its 0.5 s) would cut the answer off.
    const srv = await unixServer('half.sock', (s) => {
      const parts: Buffer[] = [];
      s.on('data', (d) => parts.push(d));
      s.on('end', () => setTimeout(() => s.end(`${sha(Buffer.concat(parts))} ${Buffer.concat(parts).length}`), 1500));
    });
    try {
      const py = `
import socket, hashlib
data = bytes(range(256)) * 20000
s = socket.create_connection(('127.0.0.1', 4100))
s.sendall(data); s.shutdown(socket.SHUT_WR)
reply = b''
while True:
    b = s.recv(65536)
    if not b: break
    reply += b
print(reply.decode()); print(hashlib.sha256(data).hexdigest(), len(data))`;
      const r = await sandbox([PYTHON, '-c', py], { relays: [{ address: '127.0.0.1', port: 4100, socketPath: srv.path }] });
      expect(r.exitCode, r.stderr).toBe(0);
      const [reply, local] = r.stdout.trim().split('\n');
      expect(reply).toBe(local);
    } finally {
      await srv.close();
    }
  });

  it('carry 32 MiB both ways at once, over IPv4 and IPv6 listeners, with backpressure', async () => {
    const srv = await unixServer('echo.sock', (s) => s.pipe(s));
    try {
      const py = `
import socket, hashlib, threading, sys
for addr in (('127.0.0.1', 4101), ('::1', 4101)):
    data = bytes((i * 7) % 251 for i in range(1 << 16)) * 512
    s = socket.create_connection(addr)
    got = hashlib.sha256(); n = [0]
    def reader():
        while True:
            b = s.recv(1 << 16)
            if not b: break
            got.update(b); n[0] += len(b)
    t = threading.Thread(target=reader); t.start()
    s.sendall(data); s.shutdown(socket.SHUT_WR); t.join()
    print(addr[0], got.hexdigest() == hashlib.sha256(data).hexdigest(), n[0])`;
      const r = await sandbox([PYTHON, '-c', py], {
        relays: [{ address: '127.0.0.1', port: 4101, socketPath: srv.path }, { address: '::1', port: 4101, socketPath: srv.path }],
      });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.trim().split('\n')).toEqual([`127.0.0.1 True ${32 << 20}`, `::1 True ${32 << 20}`]);
    } finally {
      await srv.close();
    }
  });

  it('bound the connections by the descriptor limit, and a client that hangs up frees everything', async () => {
    let open = 0;
    let peak = 0;
    // Ends its side when the client's does, as srt's proxy does.
    const srv = await unixServer('count.sock', (s) => {
      peak = Math.max(peak, ++open);
      s.on('close', () => open--);
      s.on('data', () => s.write('ok'));
    }, false);
    try {
      // RLIMIT_NOFILE 64: (64 - 16 reserved - 1 listener) / 6 descriptors each = 7 connections.
      const py = `
import select, socket, struct, time, sys
conns = [socket.create_connection(('127.0.0.1', 4102)) for _ in range(20)]
for c in conns: c.sendall(b'x')
def answered(cs):
    # The ones answered within one second (the rest are not even accepted by the relay yet).
    got, deadline = [], time.time() + 1
    while len(got) < len(cs) and time.time() < deadline:
        ready, _, _ = select.select([c for c in cs if c not in got], [], [], max(0, deadline - time.time()))
        for c in ready:
            assert c.recv(2) == b'ok'
            got.append(c)
    return got
first = answered(conns)
for c in first: c.close()
rest = answered([c for c in conns if c not in first])
print(len(first), len(rest)); sys.stdout.flush()
for c in conns:
    if c in first: continue
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0)); c.close()  # RST
# The sandbox's socket table: once the relay has let go, only the listener on 4102 (0x1006) is
# left, and the TIME_WAIT entries of the clients that closed first.
def left():
    rows = [l.split() for l in open('/proc/net/tcp').read().splitlines()[1:]]
    return [r for r in rows if r[3] not in ('0A', '06') and (r[1].endswith(':1006') or r[2].endswith(':1006'))]
for _ in range(100):
    if not left(): break
    time.sleep(0.05)
print('left', len(left()))
print('closed'); sys.stdout.flush()
time.sleep(3)`;
      const marker = join(runDir, 'count.sock');
      const child = execa('prlimit', ['--nofile=64:64', BWRAP!, ...sandboxArgv([PYTHON, '-c', py], { relays: [{ address: '127.0.0.1', port: 4102, socketPath: marker }] })], {
        reject: false, stdin: 'ignore', timeout: 30_000, extendEnv: false, env: ENV,
      });
      let out = '';
      await new Promise<void>((resolve) => {
        child.stdout!.on('data', (d: Buffer) => { out += d.toString(); if (out.includes('closed\n')) resolve(); });
        void child.then(() => resolve());
      });
      // 7 at once; closing them lets 7 of the 13 waiting in the backlog through.
      expect(out.trim().split('\n')).toEqual(['7 7', 'left 0', 'closed']);
      expect(peak).toBeLessThan(14); // the server may see a new one before an old one's close
      // Everything the clients held is gone: the relay keeps stdio, its listener and its epoll.
      // (Its descriptors can be listed by root only: it is not dumpable. The socket table above
      // and the proxy side's count hold for every caller.)
      const relay = relayPid(marker)!;
      expect(relay).toBeGreaterThan(0);
      const fds = () => { try { return readdirSync(`/proc/${relay}/fd`).length; } catch { return undefined; } };
      for (let i = 0; i < 50 && ((fds() ?? 5) !== 5 || open !== 0); i++) await new Promise((r) => setTimeout(r, 50));
      expect(fds() ?? 5).toBe(5);
      if (process.getuid!() !== 0) expect(fds()).toBeUndefined(); // not dumpable: closed to its own user
      expect(open).toBe(0); // and the proxy side of each is closed too
      expect((await child).exitCode).toBe(0);
    } finally {
      await srv.close();
    }
  });

  it('run without capabilities, not dumpable, and survive everything the command can signal', async () => {
    const marker = join(runDir, 'caps.sock');
    const srv = await unixServer('caps.sock', (s) => s.end('relayed'));
    try {
      // As root, port 80 (CAP_NET_BIND_SERVICE to bind, dropped by the relay with everything else
      // at once). Other callers' sandboxes cannot listen below 1024 at all (src/sandbox.ts).
      const root = process.getuid!() === 0;
      const port = root ? 80 : 4103;
      const py = `
import os, signal, socket, subprocess, sys, time
print(socket.create_connection(('127.0.0.1', ${port})).recv(10).decode()); sys.stdout.flush()
# Everything this process may signal (kill(-1) spares only the caller and init).
for sig in (signal.SIGSTOP, signal.SIGKILL):
    try: os.kill(-1, sig)
    except OSError: pass
print(socket.create_connection(('127.0.0.1', ${port})).recv(10).decode()); sys.stdout.flush()
time.sleep(2)`;
      const child = execa(BWRAP!, sandboxArgv([PYTHON, '-c', py], {
        lowPort: root,
        relays: [{ address: '127.0.0.1', port, socketPath: marker }],
      }), { reject: false, stdin: 'ignore', timeout: 20_000, extendEnv: false, env: ENV });
      let out = '';
      await new Promise<void>((resolve) => {
        child.stdout!.on('data', (d: Buffer) => { out += d.toString(); if (out.split('\n').length > 2) resolve(); });
        void child.then(() => resolve());
      });
      const relay = relayPid(marker)!;
      expect(out.trim().split('\n')).toEqual(['relayed', 'relayed']);
      for (const f of ['CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) expect(statusField(relay, f), f).toBe('0000000000000000');
      expect(statusField(relay, 'State')).toMatch(/^[SR]/); // sleeping or running (serving), never stopped
      // Not dumpable: its /proc files belong to root, its memory and descriptors are closed to ptrace.
      const r = await child;
      expect(r.exitCode, r.stderr).toBe(0);
    } finally {
      await srv.close();
    }
  });

  it('expose: --host-listen binds the host port (125 when taken), the relay reaches ::1 when 127.0.0.1 refuses, the port closes after', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createTcpServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    // The server inside listens on ::1 only (as some dev servers do for "localhost").
    const py = `
import http.server, socketserver, socket
class S(http.server.HTTPServer): address_family = socket.AF_INET6
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'from the sandbox')
    def log_message(self, *a): pass
srv = S(('::1', 3000), H); srv.timeout = 10
print('ready', flush=True)
srv.handle_request()`;
    const exposes = [{ fd: 4, hostAddress: '127.0.0.1', hostPort: port, sandboxPort: 3000 }];
    const init = initArgv({ helperPath: INIT_HELPER_PATH, relays: [], exposes, landlock: { writable: [], socketFiles: false }, maxProcs: 1000, filter: filters.strict });
    const argv = [...hostListenArgv(INIT_HELPER_PATH, exposes).slice(1), BWRAP!, ...bwrapArgs({}), '--', ...init, PYTHON, '-c', py];
    const child = execa(INIT_HELPER_PATH, argv, { reject: false, stdin: 'ignore', timeout: 20_000, extendEnv: false, env: ENV });
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (d: Buffer) => { if (d.toString().includes('ready')) resolve(); });
      void child.then(() => resolve());
    });
    const taken = await execa(INIT_HELPER_PATH, ['--host-listen', `4:127.0.0.1:${port}`, '--', '/bin/true'], { reject: false });
    expect([taken.exitCode, taken.stderr]).toEqual([125, `srt: network.exposePorts: the host's 127.0.0.1:${port} is already in use (another srt run or another program listens there); free it or expose a different port`]);
    const body = await new Promise<string>((resolve, reject) => {
      const s = createConnection(port, '127.0.0.1', () => s.end('GET / HTTP/1.0\r\n\r\n'));
      let b = '';
      s.on('data', (d) => (b += d));
      s.on('end', () => resolve(b));
      s.on('error', reject);
    });
    expect(body).toMatch(/from the sandbox$/);
    expect((await child).exitCode).toBe(0);
    const after = await new Promise<string>((resolve) => {
      const s = createConnection(port, '127.0.0.1', () => { s.destroy(); resolve('connected'); });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(after).toBe('ECONNREFUSED');
  });
});
