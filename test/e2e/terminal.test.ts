// The command's own terminal (SPEC §4 Terminal): srt driven from a real pseudo-terminal
// (fixtures/pty-host.py), with keystrokes typed into it and its screen output read back.
// Job control is exercised from a real interactive bash around srt, as a user would.
//
// Every wait is for an event (text on the screen, a process state in /proc, the terminal's
// mode), bounded by WAIT_MS. The only timed waits are the short windows that check that
// something does NOT happen (a frozen counter stays put).
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processesWith, REPO, SRT_BIN, tempDir, scratchDirs } from './helpers.js';

const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
const HOST = join(REPO, 'test', 'e2e', 'fixtures', 'pty-host.py');
const SRT = `${process.execPath} ${SRT_BIN}`;
/** The bound of every wait; generous, so a loaded machine is slow but never fails a test. */
const WAIT_MS = 40_000;
/** For tests with many steps: each step is bounded by WAIT_MS, this only stops a runaway test. */
const LONG = 240_000;
/** The window in which a frozen sandbox must not move. */
const STILL_MS = 400;
const ICANON = 0o2; // termios c_lflag bit (Linux)

const tmp = tempDir('srt-terminal-');
const sessions: Pty[] = [];
afterAll(() => {
  for (const s of sessions) s.kill();
  tmp.cleanup();
});

const scratch = scratchDirs(() => tmp.path);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let markers = 0;
/** A number no other process on the machine has in its command line. */
const marker = () => `7${process.pid}${markers++}${Date.now() % 10000}`;

/** A program running on a fresh pseudo-terminal: type into it, read its screen output. */
class Pty {
  private text = '';
  private readonly child: ChildProcess;
  private readonly waiters = new Set<() => void>();
  private replies: string[] = [];
  private exited = false;
  readonly exit: Promise<number>;

  constructor(cmd: string[], opts: { cwd: string; home: string; env?: Record<string, string>; rows?: number; cols?: number }) {
    this.child = spawn(PYTHON, [HOST, String(opts.rows ?? 24), String(opts.cols ?? 80), ...cmd], {
      cwd: opts.cwd,
      env: { PATH: process.env.PATH, HOME: opts.home, LANG: 'C.UTF-8', TERM: 'xterm', PS1: 'OUTER$ ', ...opts.env },
      stdio: ['pipe', 'pipe', 'inherit', 'pipe'],
    });
    const wake = () => { for (const w of [...this.waiters]) w(); };
    this.child.stdout!.on('data', (b: Buffer) => { this.text += b.toString('latin1'); wake(); });
    (this.child.stdio[3] as NodeJS.ReadableStream).on('data', (b: Buffer) => {
      this.replies.push(...b.toString().split('\n').filter(Boolean));
      wake();
    });
    this.exit = new Promise((res) => this.child.on('exit', (code) => { this.exited = true; wake(); res(code ?? -1); }));
    sessions.push(this);
  }

  /** Everything shown so far; `mark()` is a position to search after. */
  get output(): string { return this.text; }
  mark(): number { return this.text.length; }
  /** The host's pid: every process of the run is below it. */
  get pid(): number { return this.child.pid!; }

  type(keys: string): void {
    this.child.stdin!.write(`w ${Buffer.from(keys, 'latin1').toString('hex')}\n`);
  }

  resize(rows: number, cols: number): void {
    this.child.stdin!.write(`r ${rows} ${cols}\n`);
  }

  /** Resolves once `ready()` is true, rechecked on every event of the host; bounded. */
  private wait<T>(ready: () => T | undefined, what: () => string): Promise<T> {
    return new Promise((resolve, reject) => {
      const done = () => { clearTimeout(timer); this.waiters.delete(check); };
      const check = () => {
        const v = ready();
        if (v !== undefined) { done(); resolve(v); } else if (this.exited) { done(); reject(new Error(`the terminal host exited: ${what()}`)); }
      };
      const timer = setTimeout(() => { done(); reject(new Error(`timed out: ${what()}`)); }, WAIT_MS);
      this.waiters.add(check);
      check();
    });
  }

  /** Wait until the output after `from` matches; returns that output. */
  waitFor(pattern: RegExp | string, from = 0): Promise<string> {
    return this.wait(() => {
      const seen = this.text.slice(from);
      return (typeof pattern === 'string' ? seen.includes(pattern) : pattern.test(seen)) ? seen : undefined;
    }, () => `no ${String(pattern)} on the terminal; it shows:\n${JSON.stringify(this.text.slice(from))}`);
  }

  /** The terminal's local modes (c_lflag). */
  async lflag(): Promise<number> {
    const before = this.replies.length;
    this.child.stdin!.write('m\n');
    return Number(await this.wait(() => this.replies[before], () => 'no answer to a mode query'));
  }

  /** Wait until a program (srt) switched the terminal to raw mode: typed keys are no longer
   *  cooked by the terminal (a ^D would be an end of file, not a byte for the command). */
  async raw(): Promise<void> {
    await until(async () => ((await this.lflag()) & ICANON) === 0, () => `raw mode; the terminal shows:\n${JSON.stringify(this.text)}`);
  }

  async cooked(): Promise<void> {
    await until(async () => ((await this.lflag()) & ICANON) !== 0, () => 'the terminal back in cooked mode');
  }

  async exitCode(): Promise<number> {
    return await this.wait(() => (this.exited ? this.child.exitCode ?? -1 : undefined), () => `still running; it shows:\n${JSON.stringify(this.text)}`);
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/** Poll `cond` until it holds; bounded. */
async function until(cond: () => boolean | Promise<boolean>, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(20);
  }
}

// ---- processes, from /proc

interface Proc { pid: number; ppid: number; state: string; pgrp: number; tpgid: number; nspid: number[]; argv: string[] }

function proc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const nspid = /^NSpid:\s*(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]?.split(/\s+/).map(Number) ?? [pid];
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    return { pid, state: f[0]!, ppid: Number(f[1]), pgrp: Number(f[2]), tpgid: Number(f[5]), nspid, argv };
  } catch {
    return undefined; // gone
  }
}

function allProcs(): Proc[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map((d) => proc(Number(d))).filter((p): p is Proc => p !== undefined);
}

/** The srt process (node running bin/srt) whose command line holds `mark`. */
function srtProcess(mark: string): Proc | undefined {
  return allProcs().find((p) => p.argv[1] === SRT_BIN && p.argv.some((a) => a.includes(mark)));
}

async function srtRunning(mark: string): Promise<Proc> {
  let found: Proc | undefined;
  await until(() => (found = srtProcess(mark)) !== undefined, `srt running ${mark}`);
  return found!;
}

/** Every process below `root` (not `root` itself). */
function descendants(root: number, all = allProcs()): Proc[] {
  const below = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) if (!below.has(p.pid) && below.has(p.ppid)) { below.add(p.pid); grew = true; }
  }
  return all.filter((p) => p.pid !== root && below.has(p.pid));
}

/** The command's processes under srt `srtPid`: its nested PID namespace, init left out. */
function commandProcesses(srtPid: number): Proc[] {
  const all = allProcs();
  const depth = all.find((p) => p.pid === srtPid)?.nspid.length ?? 1;
  return descendants(srtPid, all).filter((p) => p.nspid.length === depth + 2 && p.nspid.at(-1) !== 1);
}

const isStopped = (p: Proc) => p.state === 'T' || p.state === 't';

/** Wait until every process of the command is stopped (the freeze is complete). */
async function frozen(srtPid: number): Promise<void> {
  await until(() => {
    const ps = commandProcesses(srtPid);
    // A zombie (a child that ended just before its stopped parent could reap it) runs no more;
    // nor does a shell that vforked a child the freeze stopped before its exec: the parent waits
    // in the kernel (state D) until that child execs or ends, which it cannot while stopped.
    const waitsOnStoppedChild = (p: Proc) => p.state === 'D' && ps.some((c) => c.ppid === p.pid && isStopped(c));
    return ps.some(isStopped) && ps.every((p) => isStopped(p) || p.state === 'Z' || waitsOnStoppedChild(p));
  }, () => `the sandbox frozen: ${JSON.stringify(commandProcesses(srtPid).map((p) => `${p.pid} ${p.state} ${p.argv.join(' ')}`))}`);
}

/** The process running `argv[0] … mark …`, once it runs. */
async function running(mark: string, name?: string): Promise<Proc> {
  let found: Proc | undefined;
  await until(() => (found = allProcs().find((p) => p.argv.some((a) => a.includes(mark)) && p.argv[1] !== SRT_BIN && (!name || p.argv[0] === name))) !== undefined, `${name ?? 'a process'} with ${mark}`);
  return found!;
}

/** Blocking system calls a program waiting for its next key is in: read, poll, select (x86_64, aarch64). */
const INPUT_WAITS = process.arch === 'arm64' ? ['63', '72', '73'] : ['0', '7', '23', '270', '271'];

/**
 * Wait until the program `name` on `s` (a readline prompt: bash, python3; less) is blocked
 * waiting for input. A Ctrl-C that lands while readline is between its signal check and its read() is handled
 * by readline but not by the shell, which then redraws its prompt only after the next key (a race
 * of bash's own, on any terminal): the test types Ctrl-C only once the program waits.
 */
async function waitingForKey(s: Pty, name: string): Promise<void> {
  await until(() => descendants(s.pid).some((p) => {
    if (!p.argv[0]?.endsWith(name) || p.state !== 'S') return false;
    try {
      return INPUT_WAITS.includes(readFileSync(`/proc/${p.pid}/syscall`, 'utf8').split(' ')[0]!);
    } catch {
      return true; // cannot be looked at (no ptrace access): asleep is as close as it gets
    }
  }), `${name} waiting for a key`);
}

/** Wait until the process with `mark` is the foreground job of its terminal. */
async function inForeground(mark: string, name?: string): Promise<void> {
  const p = await running(mark, name);
  await until(() => { const q = proc(p.pid); return q !== undefined && q.pgrp === q.tpgid; }, `${mark} in the foreground of its terminal`);
}

function lines(file: string): number {
  return existsSync(file) ? readFileSync(file, 'utf8').length : 0;
}

/** Wait until the counter in `file` moves past what it shows now. */
async function moves(file: string): Promise<void> {
  const at = lines(file);
  await until(() => lines(file) > at, `${file} to move`);
}

/** A counter: a shell loop appending to FILE, its command line marked. */
const ticker = (file: string, mark: string) => `sh -c ": ${mark}; while :; do echo t >> ${file}; sleep 0.02; done"`;

// ---- the outer shell

/** An interactive bash on the terminal, as the user's shell around srt. */
async function outerShell(dir: { home: string; cwd: string }): Promise<Pty> {
  const sh = new Pty(['bash', '--norc', '--noprofile', '-i'], dir);
  await sh.waitFor('OUTER$ ');
  return sh;
}

/** Run `line` at the outer shell and wait for its next prompt; returns what it printed. */
async function atPrompt(sh: Pty, line: string): Promise<string> {
  const from = sh.mark();
  sh.type(`${line}\r`);
  return await sh.waitFor(/\r\n(.*)OUTER\$ $/s, from);
}

/** Wait until the outer shell's `jobs` lists srt in `state` (Stopped, Running). */
async function job(sh: Pty, state: string): Promise<void> {
  const re = new RegExp(`${state}.*srt -- `);
  await until(async () => re.test(await atPrompt(sh, 'jobs')), () => `srt ${state}; the terminal shows:\n${JSON.stringify(sh.output)}`);
}

/** A python script written to the scratch directory, run as `python3 NAME`. */
function script(dir: { cwd: string }, name: string, body: string): string {
  writeFileSync(join(dir.cwd, name), body);
  return `${PYTHON} ${name}`;
}

// Prints the window size of its stdout terminal at start, on every SIGWINCH ("winch") and when a
// poll sees it change without one ("poll"); ends (0) when the file `stop` exists. SIGWINCH is
// blocked and waited for (no handler interrupting a print). A terminal's own SIGWINCH comes with
// the new size; on an output-only pty the helper sends it just after, so a poll may see it first.
const WINDOW_PY = `
import os, signal, time
def size():
    c, r = os.get_terminal_size(1)
    return f"{c}x{r}"
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
last = size()
print("start size=" + last, flush=True)
deadline = time.monotonic() + 60
while not os.path.exists("stop") and time.monotonic() < deadline:
    if signal.sigtimedwait([signal.SIGWINCH], 0.02) is not None:
        last = size()
        print("winch size=" + last, flush=True)
    elif size() != last:
        last = size()
        print("poll size=" + last, flush=True)
`;

describe('an interactive command on its own terminal', () => {
  it('bash -i: Ctrl-C at the prompt leaves bash running; `sleep & jobs; fg` then Ctrl-C ends only sleep; Ctrl-Z stops a job inside; TIOCSTI stays refused', async () => {
    const dir = scratch();
    const m1 = marker();
    const m2 = marker();
    const s = new Pty([process.execPath, SRT_BIN, '--', 'bash', '--norc', '--noprofile', '-i'], { ...dir, env: { PS1: 'INNER$ ' } });
    await s.waitFor('INNER$ ');
    await waitingForKey(s, 'bash');
    let from = s.mark();
    s.type('\x03');
    await s.waitFor('INNER$ ', from);
    from = s.mark();
    s.type('echo alive-$((6*7)) $(tty)\r');
    await s.waitFor('alive-42 /dev/pts/0', from);

    from = s.mark();
    s.type(`sleep ${m1} & jobs\r`);
    await s.waitFor(new RegExp(`\\[1\\]\\+\\s+Running\\s+sleep ${m1}`), from);
    await s.waitFor('INNER$ ', from);
    from = s.mark();
    s.type('fg\r');
    await inForeground(m1, 'sleep'); // bash hands the terminal to sleep's group after printing its name
    s.type('\x03');
    await s.waitFor('INNER$ ', from);
    from = s.mark();
    s.type('echo status=$? jobs=$(jobs | wc -l)\r');
    await s.waitFor('status=130 jobs=0', from);

    from = s.mark();
    s.type(`sleep ${m2}\r`);
    await inForeground(m2, 'sleep');
    s.type('\x1a');
    await s.waitFor(new RegExp(`Stopped\\s+sleep ${m2}`), from);
    from = s.mark();
    s.type(`kill %1; ${PYTHON} -c "import fcntl; fcntl.ioctl(0, 0x5412, b'x')" 2>&1 | tail -1\r`);
    await s.waitFor('PermissionError: [Errno 1] Operation not permitted', from);
    s.type('exit 7\r');
    expect(await s.exitCode()).toBe(7);
  }, LONG);

  it('a python3 REPL survives Ctrl-C', async () => {
    const dir = scratch();
    const s = new Pty([process.execPath, SRT_BIN, '--', PYTHON, '-q'], dir);
    await s.waitFor('>>> ');
    await waitingForKey(s, 'python3');
    const from = s.mark();
    s.type('\x03');
    await s.waitFor(/KeyboardInterrupt\r\n>>> $/, from);
    s.type('print(6 * 7)\r');
    await s.waitFor('42\r\n>>> ', from);
    s.type('exit()\r');
    expect(await s.exitCode()).toBe(0);
  }, LONG);

  it('window size: the pty starts at the outer size and follows a resize (SIGWINCH reaches the command)', async () => {
    const dir = scratch();
    const s = new Pty([process.execPath, SRT_BIN, '--', ...script(dir, 'window.py', WINDOW_PY).split(' ')], { ...dir, rows: 24, cols: 80 });
    await s.waitFor('start size=80x24');
    const from = s.mark();
    s.resize(37, 101);
    await s.waitFor('winch size=101x37', from);
    writeFileSync(join(dir.cwd, 'stop'), '');
    expect(await s.exitCode()).toBe(0);
  }, LONG);

  it('a full-screen program (less) draws, and redraws for a new window size', async () => {
    const dir = scratch();
    writeFileSync(join(dir.cwd, 'lines.txt'), Array.from({ length: 200 }, (_, i) => `line-${String(i + 1).padStart(3, '0')}`).join('\n') + '\n');
    const s = new Pty([process.execPath, SRT_BIN, '--', 'less', 'lines.txt'], { ...dir, rows: 24, cols: 80 });
    await s.waitFor('line-023');
    expect(s.output).not.toContain('line-024'); // one screen: 23 lines and the prompt line
    // Resized once less waits for keys: a SIGWINCH while it is still drawing may wait for a key.
    await waitingForKey(s, 'less');
    const from = s.mark();
    s.resize(41, 80);
    await s.waitFor('line-040', from); // redrawn for 41 rows
    s.type('q');
    expect(await s.exitCode()).toBe(0);
  }, LONG);
});

// Red-team finding #1 (a write-only descriptor of the user's terminal, reopened read-write through
// /proc/self/fd/1 or left TIOCEXCL) is what the next tests hold shut; finding #9 (a setsid process
// not frozen on Ctrl-Z) is held by the freeze tests under job control (the Ctrl-Z, kill -STOP and
// output-only ones freeze a setsid ticker).
describe('the user\'s terminal stays outside', () => {
  it.each([
    ['stdin, stdout and stderr the terminal', ''],
    ['stdin not a terminal (< /dev/null)', ' < /dev/null'],
    ['stdin a pipe, stderr only the terminal', ' > /dev/null'],
  ])('no process of the sandbox (bwrap, helper, relay, init, the command) holds a descriptor of the user\'s terminal: %s', async (_, redirect) => {
    const dir = scratch();
    const m = marker();
    const pipeIn = redirect.includes('>') ? 'echo x | ' : '';
    const s = new Pty(['sh', '-c', `stat -L -c 'outer=%d:%i' /proc/self/fd/2; ${pipeIn}${SRT} -- sh -c 'echo inside-ready >&2; exec sleep ${m}'${redirect}; echo rc=$?`], dir);
    const outer = /outer=(\d+:\d+)/.exec(await s.waitFor(/outer=\d+:\d+/))![1];
    await s.waitFor('inside-ready');
    const srtPid = (await srtRunning(m)).pid;
    await running(m, 'sleep');
    const sandbox = descendants(srtPid);
    expect(sandbox.length).toBeGreaterThanOrEqual(5); // bwrap, outer helper, relay, init, sleep
    const held: string[] = [];
    for (const { pid } of sandbox) {
      let fds: string[] = [];
      try { fds = readdirSync(`/proc/${pid}/fd`); } catch { continue; }
      for (const fd of fds) {
        try {
          const st = statSync(`/proc/${pid}/fd/${fd}`);
          if (`${st.dev}:${st.ino}` === outer) held.push(`${pid}/fd/${fd}`);
        } catch { /* closed meanwhile */ }
      }
    }
    expect(held).toEqual([]);
    process.kill(srtPid, 'SIGTERM');
    await s.waitFor('rc=143');
    await s.exitCode();
  }, LONG);

  it('stdin not a terminal: the command can neither read, reopen nor control the user\'s terminal; what is typed stays with the shell; modes, exclusivity and reopening are as before', async () => {
    const dir = scratch();
    // Each attempt prints NAME=ok or NAME=ERRNO. Then, once the test has typed a line at the user's
    // terminal (and seen it echoed: it waits in the terminal's input queue), every descriptor the
    // command could get is read without blocking.
    const attack = script(dir, 'attack.py', `
import errno, fcntl, os, termios, time
fds = {}
def attempt(name, f):
    try:
        f()
        print(name + "=ok", flush=True)
    except OSError as e:
        print(name + "=" + errno.errorcode[e.errno], flush=True)
def reopen(name, path, flags):
    fds[name] = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY)
def read1():
    os.set_blocking(1, False)
    os.read(1, 1)
attempt("read1", read1)
attempt("reopen1", lambda: reopen("reopen1", "/proc/self/fd/1", os.O_RDONLY))
attempt("reopen2", lambda: reopen("reopen2", "/proc/self/fd/2", os.O_RDWR))
attempt("devtty", lambda: reopen("devtty", "/dev/tty", os.O_RDWR))
# The command owns its own pty's node: it may open it up again, and still finds nothing to read.
attempt("chmod", lambda: os.fchmod(1, 0o600))
attempt("reopen-after-chmod", lambda: reopen("after-chmod", "/proc/self/fd/1", os.O_RDONLY))
attempt("excl1", lambda: fcntl.ioctl(1, termios.TIOCEXCL))
attempt("excl2", lambda: fcntl.ioctl(2, termios.TIOCEXCL))
raw = termios.tcgetattr(1)
raw[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)
attempt("tcsetattr", lambda: termios.tcsetattr(1, termios.TCSANOW, raw))
attempt("tcflush", lambda: termios.tcflush(1, termios.TCIFLUSH))
attempt("tiocsti", lambda: fcntl.ioctl(1, termios.TIOCSTI, b"x"))
print("ready", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists("typed") and time.monotonic() < deadline:
    time.sleep(0.02)
got = b""
for fd in [0, 1, 2] + list(fds.values()):
    try:
        os.set_blocking(fd, False)
        got += os.read(fd, 4096)
    except OSError:
        pass
print("got=" + repr(got), flush=True)
`);
    const excl = `${PYTHON} -c 'import fcntl, struct; print("excl=" + str(struct.unpack("i", fcntl.ioctl(0, 0x80045440, b"0000"))[0]))'`;
    const reopen = `${PYTHON} -c 'import os; os.close(os.open(os.ttyname(0), os.O_RDWR)); print("reopened")'`;
    const sh = await outerShell(dir);
    let from = sh.mark();
    sh.type(`stty -g > before; ${SRT} -- ${attack} < /dev/null; echo rc=$?; stty -g > after; cmp -s before after && echo same-modes; ${excl}; ${reopen}\r`);
    const shown = await sh.waitFor('ready', from);
    expect(shown).toContain('read1=EBADF'); // its descriptors on the pty are write-only
    expect(shown).toContain('reopen1=EACCES'); // the command's own pty, which no one types into
    expect(shown).toContain('reopen2=EACCES');
    expect(shown).toContain('devtty=ENXIO'); // no controlling terminal, as without a pty
    expect(shown).toContain('tiocsti=EPERM');
    expect(shown).toContain('reopen-after-chmod=ok');
    sh.type('echo typed-at-$((6*7))\r');
    await sh.waitFor('echo typed-at-$((6*7))\r\n', from); // echoed: it waits in the input queue
    writeFileSync(join(dir.cwd, 'typed'), '');
    const out = await sh.waitFor(/reopened\r\n.*OUTER\$ /s, from);
    expect(out).toContain("got=b''");
    expect(out).toContain('rc=0');
    expect(out).toContain('same-modes');
    expect(out).toContain('excl=0');
    // The line typed during the run was left for the shell, which ran it after srt.
    await sh.waitFor('\rtyped-at-42\r\n', from);
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('stdin not a terminal: output reaches the terminal byte for byte as if written directly (its own output processing, once); stdout and stderr are terminals; exit statuses unchanged', async () => {
    const dir = scratch();
    const bytes = String.raw`a\nb\r\nc\td\033[1mB\033[0m\n`;
    const sh = await outerShell(dir);
    for (const mode of ['opost', '-opost']) {
      // The markers are computed, so the echo of the typed line does not contain them.
      const out = await atPrompt(sh, `stty ${mode}; printf '${bytes}'; echo =$((1))srt=; ${SRT} -- printf '${bytes}' < /dev/null; echo =$((2))end=; stty opost`);
      const direct = out.slice(0, out.indexOf('=1srt='));
      const viaSrt = out.slice(out.indexOf('=1srt=') + 6, out.indexOf('=2end='));
      const sep = mode === 'opost' ? '\r\n' : '\n';
      expect(direct.endsWith(`a${sep}b\r${sep}c\td\x1b[1mB\x1b[0m${sep}`), JSON.stringify(out)).toBe(true);
      expect(viaSrt, mode).toBe(`${sep}a${sep}b\r${sep}c\td\x1b[1mB\x1b[0m${sep}`);
    }
    const out = await atPrompt(sh, `${SRT} -- sh -c 'test -t 0 || echo stdin-not-a-tty; test -t 1 && test -t 2 && echo stdout-stderr-ttys; echo ctty=$(ps -o tty= -p $$); exit 3' < /dev/null; echo rc=$?`);
    expect(out).toContain('stdin-not-a-tty');
    expect(out).toContain('stdout-stderr-ttys');
    expect(out).toContain('ctty=?'); // no controlling terminal inside
    expect(out).toContain('rc=3');
    expect(await atPrompt(sh, `${SRT} -- sh -c 'kill -TERM $$' < /dev/null; echo rc=$?`)).toContain('rc=143');
    expect(await atPrompt(sh, `echo piped-$((6*7)) | ${SRT} -- cat; echo rc=$?`)).toMatch(/piped-42\r\nrc=0\r\n/);
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('stdin not a terminal: the window size follows, in the foreground (SIGWINCH) and in the background', async () => {
    const dir = scratch();
    const run = script(dir, 'window.py', WINDOW_PY);
    const sh = await outerShell(dir);
    let from = sh.mark();
    sh.type(`${SRT} -- ${run} < /dev/null; echo rc=$?\r`);
    await sh.waitFor('start size=80x24', from);
    sh.resize(37, 101);
    await sh.waitFor('winch size=101x37', from);
    writeFileSync(join(dir.cwd, 'stop'), '');
    await sh.waitFor(/rc=0\r\n.*OUTER\$ $/s, from);

    from = sh.mark();
    sh.type(`rm stop; ${SRT} -- ${run} < /dev/null &\r`);
    await sh.waitFor('start size=101x37', from);
    sh.resize(30, 90);
    await sh.waitFor(/(winch|poll) size=90x30/, from);
    writeFileSync(join(dir.cwd, 'stop'), '');
    expect(await atPrompt(sh, 'wait; echo rc=$?')).toContain('rc=0');
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('stdin not a terminal: `cat f | srt -- less` shows the first screen and ends (it gets no keys: srt does not read the terminal)', async () => {
    const dir = scratch();
    writeFileSync(join(dir.cwd, 'lines.txt'), Array.from({ length: 200 }, (_, i) => `line-${String(i + 1).padStart(3, '0')}`).join('\n') + '\n');
    const sh = await outerShell(dir);
    const out = await atPrompt(sh, `cat lines.txt | ${SRT} -- less; echo rc=$?`);
    expect(out).toContain('line-023');
    expect(out).toMatch(/rc=[1-9]/);
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('a second terminal (stderr on another one) is relayed through a pipe: the command holds neither', async () => {
    const dir = scratch();
    const other = new Pty(['sh', '-c', 'tty; exec sleep 1000'], dir);
    const path = /(\/dev\/pts\/\d+)/.exec(await other.waitFor(/\/dev\/pts\/\d+\r\n/))![1];
    const sh = await outerShell(dir);
    const out = await atPrompt(sh, `${SRT} -- sh -c 'test -t 1 && echo stdout-a-tty; test -t 2 || echo stderr-not-a-tty; echo on-the-other-terminal >&2' < /dev/null 2>${path}; echo rc=$?`);
    expect(out).toContain('stdout-a-tty');
    expect(out).toContain('stderr-not-a-tty');
    expect(out).toContain('rc=0');
    await other.waitFor('on-the-other-terminal');
    other.kill();
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('stdin a terminal, stdout a file: the command reads the pty and writes the file directly', async () => {
    const dir = scratch();
    const s = new Pty(['sh', '-c', `${SRT} -- sh -c 'tty; test -t 1 || echo stdout-not-a-tty' > out.txt; echo rc=$?`], dir);
    await s.waitFor('rc=0');
    expect(readFileSync(join(dir.cwd, 'out.txt'), 'utf8')).toBe('/dev/pts/0\nstdout-not-a-tty\n');
    await s.exitCode();
    // stdout and stderr both redirected: what is typed is still echoed on the user's terminal.
    const m = marker();
    const both = new Pty(['sh', '-c', `${SRT} -- sh -c ': ${m}; read x; echo got=$x' > both.txt 2>&1; echo rc=$?`], dir);
    await running(m, 'sh');
    await both.raw();
    both.type('typed-in\r');
    const out = await both.waitFor('rc=0');
    expect(out).toContain('typed-in');
    expect(readFileSync(join(dir.cwd, 'both.txt'), 'utf8')).toBe('got=typed-in\n');
    await both.exitCode();
  }, LONG);
});

describe('job control with the user\'s shell', () => {
  it('Ctrl-Z on a non-interactive command stops srt and the whole sandbox (a setsid process too): the outer shell reads what is typed next, nothing is stolen; fg resumes; the terminal modes are unchanged', async () => {
    const dir = scratch();
    const m = marker();
    const ticks = join(dir.cwd, 'ticks');
    const sh = await outerShell(dir);
    await atPrompt(sh, 'stty -g > before');
    let from = sh.mark();
    sh.type(`${SRT} -- sh -c ': ${m}; setsid ${ticker('ticks', m)} & cat > stolen'\r`);
    const srtPid = (await srtRunning(m)).pid;
    await until(() => existsSync(join(dir.cwd, 'stolen')), 'cat to start');
    await moves(ticks);
    await sh.raw();
    sh.type('\x1a'); // stops cat's group; srt gives the terminal back and stops, the rest is frozen
    await sh.waitFor(/Stopped\s+.*srt -- sh -c/, from);
    await sh.waitFor('OUTER$ ', from);
    await frozen(srtPid);
    const at = lines(ticks);
    const typed = await atPrompt(sh, 'echo typed-at-$((6*7)); jobs');
    expect(typed).toContain('typed-at-42');
    expect(typed).toMatch(/Stopped\s+.*srt -- sh -c/);
    await sleep(STILL_MS);
    expect(lines(ticks)).toBe(at);
    expect(readFileSync(join(dir.cwd, 'stolen'), 'utf8')).toBe('');

    from = sh.mark();
    sh.type('fg\r');
    await sh.waitFor(/fg\r\n.*srt -- sh -c .*cat > stolen'\r\n/s, from);
    await sh.raw();
    await moves(ticks);
    sh.type('after-fg\r');
    await sh.waitFor('after-fg\r\n', from);
    sh.type('\x04');
    // cat ended; the ticker (another session) ends with the sandbox when sh exits.
    await sh.waitFor('OUTER$ ', from);
    expect(readFileSync(join(dir.cwd, 'stolen'), 'utf8')).toBe('after-fg\n');
    const modes = await atPrompt(sh, 'echo rc=$?; stty -g > after; cmp before after && echo same-modes');
    expect(modes).toContain('rc=0');
    expect(modes).toContain('same-modes');
    await until(() => processesWith(m).length === 0, 'nothing left of the sandbox');
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('started with & it waits stopped, reading nothing, until fg; after Ctrl-Z, bg stops it again', async () => {
    const dir = scratch();
    const sh = await outerShell(dir);
    let from = sh.mark();
    sh.type(`${SRT} -- sh -c 'echo started > marker; cat > stolen' &\r`);
    await sh.waitFor('OUTER$ ', from);
    await job(sh, 'Stopped');
    expect(existsSync(join(dir.cwd, 'marker'))).toBe(false); // the sandbox never started
    expect(await atPrompt(sh, 'echo read-by-outer-$((2*3))')).toContain('read-by-outer-6');

    from = sh.mark();
    sh.type('fg\r');
    await until(() => existsSync(join(dir.cwd, 'stolen')), 'the command to start after fg');
    await sh.raw();
    sh.type('one\r');
    // Read by cat before Ctrl-Z, which flushes what the pty still holds (no NOFLSH).
    await until(() => readFileSync(join(dir.cwd, 'stolen'), 'utf8') === 'one\n', 'cat to write the first line');
    sh.type('\x1a'); // stops cat: srt gives the terminal back
    await sh.waitFor(/Stopped\s+.*srt -- sh -c/, from);
    await sh.waitFor('OUTER$ ', from);
    // `bg`: srt would be in the background, so it stops again (the sandbox stays frozen).
    await atPrompt(sh, 'bg');
    await job(sh, 'Stopped');
    expect(await atPrompt(sh, 'echo still-outer-$((3*3))')).toContain('still-outer-9');

    from = sh.mark();
    sh.type('fg\r');
    await sh.waitFor(/srt -- sh -c 'echo started > marker; cat > stolen'\r\n/s, from);
    await sh.raw();
    sh.type('two\r');
    await sh.waitFor('two\r\n', from);
    sh.type('\x04');
    await sh.waitFor('OUTER$ ', from);
    expect(readFileSync(join(dir.cwd, 'stolen'), 'utf8')).toBe('one\ntwo\n');
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('kill -STOP of srt (which it cannot catch) freezes the whole sandbox, a setsid process too; fg resumes it', async () => {
    const dir = scratch();
    const m = marker();
    const sh = await outerShell(dir);
    let from = sh.mark();
    sh.type(`${SRT} -- sh -c ': ${m}; setsid ${ticker('detached', m)} & i=0; while :; do i=$((i+1)); echo $i > counter; sleep 0.02; done'\r`);
    const srtPid = (await srtRunning(m)).pid;
    await moves(join(dir.cwd, 'detached'));
    await until(() => existsSync(join(dir.cwd, 'counter')), 'the counter');
    const counter = () => readFileSync(join(dir.cwd, 'counter'), 'utf8').trim();
    process.kill(srtPid, 'SIGSTOP');
    await sh.waitFor(/Stopped\s+.*srt -- sh -c/, from);
    await sh.waitFor('OUTER$ ', from); // a line typed before the prompt is echoed ahead of it
    await frozen(srtPid); // srt's helper notices within 200 ms
    const [c, d] = [counter(), lines(join(dir.cwd, 'detached'))];
    await sleep(STILL_MS);
    expect([counter(), lines(join(dir.cwd, 'detached'))]).toEqual([c, d]);
    sh.type('fg\r');
    await moves(join(dir.cwd, 'detached'));
    await until(() => counter() !== c, 'the counter to move again');
    await sh.raw();
    from = sh.mark();
    sh.type('\x03');
    await sh.waitFor('OUTER$ ', from);
    expect(await atPrompt(sh, 'echo rc=$?')).toContain('rc=130');
    await until(() => processesWith(m).length === 0, 'nothing left of the sandbox');
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('the freeze stops a parent before its child: a parent slow to stop (SCHED_IDLE behind a CPU hog) waiting for its child never sees the child stop', async () => {
    // The parent waits for its child's stops and continues (waitpid WUNTRACED|WCONTINUED) on CPU 0,
    // the child sleeps in a loop on CPU 1. During each freeze a CPU hog outside holds CPU 0, so the
    // parent (SCHED_IDLE: it never preempts) runs only well after the child could have stopped:
    // had the child been stopped before the parent was seen stopped, the parent's wait would
    // collect that stop first. After each thaw the parent reports the child's continue.
    if (availableParallelism() < 2) return;
    const dir = scratch();
    const m = marker();
    const run = script(dir, 'parent.py', `
import os, time
child = os.fork()
if child == 0:
    os.sched_setaffinity(0, {1})
    while True:
        time.sleep(0.01)
os.sched_setaffinity(0, {0})
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
print("waiting", flush=True)
while True:
    pid, status = os.waitpid(child, os.WUNTRACED | os.WCONTINUED)
    with open("seen", "a") as f:
        f.write("stop\\n" if os.WIFSTOPPED(status) else "cont\\n" if os.WIFCONTINUED(status) else "other\\n")
`);
    const s = new Pty([process.execPath, SRT_BIN, '--', 'sh', '-c', `: ${m}; exec ${run}`], dir);
    await s.waitFor('waiting');
    const srtPid = (await srtRunning(m)).pid;
    const seen = () => (existsSync(join(dir.cwd, 'seen')) ? readFileSync(join(dir.cwd, 'seen'), 'utf8') : '');
    for (let i = 1; i <= 3; i++) {
      const hog = spawn(PYTHON, ['-c', 'import os\nos.sched_setaffinity(0, {0})\nprint("hogging", flush=True)\nwhile True: pass'], { stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        await once(hog.stdout!, 'data');
        process.kill(srtPid, 'SIGSTOP');
        await frozen(srtPid);
      } finally {
        hog.kill('SIGKILL');
      }
      process.kill(srtPid, 'SIGCONT');
      await until(() => seen().split('\n').filter(Boolean).length >= i, 'the parent to see its child continue');
      expect(seen()).toBe('cont\n'.repeat(i));
    }
    process.kill(srtPid, 'SIGTERM');
    await s.exitCode();
  }, LONG);

  it('a thaw continues only what the freeze stopped: an inner job the user stopped stays stopped; an inner shell never sees its foreground job stop', async () => {
    const dir = scratch();
    const [mSrt, mStopped, mBg, mFg] = [marker(), marker(), marker(), marker()];
    const s = new Pty([process.execPath, SRT_BIN, '--', 'sh', '-c', `: ${mSrt}; exec bash --norc --noprofile -i`], { ...dir, env: { PS1: 'INNER$ ' } });
    await s.waitFor('INNER$ ');
    const srtPid = (await srtRunning(mSrt)).pid;
    let from = s.mark();
    s.type(`sleep ${mStopped} & ${ticker('bg', mBg)} &\r`);
    await s.waitFor('INNER$ ', from);
    const stopped = await running(mStopped, 'sleep');
    from = s.mark();
    s.type('kill -STOP %1\r');
    await s.waitFor('INNER$ ', from);
    await until(() => isStopped(proc(stopped.pid)!), 'the job the user stopped');
    await moves(join(dir.cwd, 'bg'));
    from = s.mark();
    s.type('jobs\r'); // bash reports the stop now, not later
    await s.waitFor(new RegExp(`Stopped\\s+sleep ${mStopped}[^]*INNER\\$ $`), from);
    from = s.mark();
    s.type(`${ticker('fg', mFg)}\r`);
    await inForeground(mFg, 'sh');
    await moves(join(dir.cwd, 'fg'));
    for (let i = 0; i < 5; i++) {
      process.kill(srtPid, 'SIGSTOP');
      await frozen(srtPid);
      process.kill(srtPid, 'SIGCONT'); // srt is still the terminal's foreground: it thaws the sandbox
      await moves(join(dir.cwd, 'bg'));
      await moves(join(dir.cwd, 'fg'));
      expect(isStopped(proc(stopped.pid)!)).toBe(true);
    }
    await inForeground(mFg, 'sh');
    expect(s.output.slice(from)).not.toContain('Stopped');
    s.type('\x03');
    await s.waitFor('INNER$ ', from);
    from = s.mark();
    s.type('jobs\r');
    await s.waitFor(new RegExp(`Stopped.*sleep ${mStopped}.*\\r\\n.*Running.*${mBg}`, 's'), from);
    // bash may not have seen the killed jobs end yet (then `exit` refuses: "There are stopped
    // jobs"): `jobs` until it has reported and dropped them.
    s.type('kill -9 %1 %2; while jobs %1 >/dev/null 2>&1 || jobs %2 >/dev/null 2>&1; do sleep 0.02; done; exit 0\r');
    expect(await s.exitCode()).toBe(0);
  }, LONG);

  it('`kill %1` of a stopped srt ends it: the signal reaches the command, which is continued to act on it (143), and nothing is left', async () => {
    const dir = scratch();
    const m = marker();
    const sh = await outerShell(dir);
    await atPrompt(sh, 'stty -g > before');
    let from = sh.mark();
    sh.type(`${SRT} -- sleep ${m}\r`);
    const srtPid = (await srtRunning(m)).pid;
    await running(m, 'sleep');
    await sh.raw();
    sh.type('\x1a');
    await sh.waitFor(/Stopped\s+.*srt -- sleep/, from);
    await sh.waitFor('OUTER$ ', from); // a line typed before the prompt is echoed ahead of it
    await frozen(srtPid);
    from = sh.mark();
    // bash's `wait` refuses a job it still thinks stopped: wait until it saw it continue (bounded
    // by the wait for the prompt). bash sends SIGTERM and SIGCONT at once; srt, continued in the
    // background, must act on the SIGTERM whichever listener Node runs first.
    const out = await atPrompt(sh, 'kill %1; while jobs %1 2>/dev/null | grep -q Stopped; do sleep 0.02; done; wait %1 2>/dev/null; echo rc=$?; stty -g > after; cmp before after && echo same-modes');
    // Its status from `wait`, or (when `jobs` already saw the job end) from bash's report.
    expect(out).toMatch(/rc=143|Exit 143/);
    expect(out).toContain('same-modes');
    await until(() => processesWith(m).length === 0, 'nothing left of the sandbox');
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);

  it('stdin not a terminal: Ctrl-Z stops srt and freezes the whole sandbox; bg runs it in the background; fg and Ctrl-C end it (130); started with & it runs at once; the modes are never touched', async () => {
    const dir = scratch();
    const m = marker();
    const sh = await outerShell(dir);
    await atPrompt(sh, 'stty -g > before');
    let from = sh.mark();
    sh.type(`${SRT} -- sh -c ': ${m}; setsid ${ticker('detached', m)} & while :; do echo t >> own; sleep 0.02; done' < /dev/null\r`);
    const srtPid = (await srtRunning(m)).pid;
    await moves(join(dir.cwd, 'detached'));
    await moves(join(dir.cwd, 'own'));
    sh.type('\x1a'); // the terminal's own SIGTSTP, to srt
    await sh.waitFor(/Stopped\s+.*srt -- sh -c/, from);
    await sh.waitFor('OUTER$ ', from); // a line typed before the prompt is echoed ahead of it
    await frozen(srtPid);
    const at = [lines(join(dir.cwd, 'detached')), lines(join(dir.cwd, 'own'))];
    await sleep(STILL_MS);
    expect([lines(join(dir.cwd, 'detached')), lines(join(dir.cwd, 'own'))]).toEqual(at);

    await atPrompt(sh, 'bg');
    await moves(join(dir.cwd, 'detached'));
    await moves(join(dir.cwd, 'own'));
    await job(sh, 'Running');
    from = sh.mark();
    sh.type('fg\r');
    await sh.waitFor(/fg\r\n.*srt -- sh -c.*\r\n/s, from);
    await moves(join(dir.cwd, 'own'));
    sh.type('\x03');
    await sh.waitFor('OUTER$ ', from);
    expect(await atPrompt(sh, 'echo rc=$?; stty -g > after; cmp before after && echo same-modes')).toMatch(/rc=130\r\n(.*\r\n)?same-modes/);
    await until(() => processesWith(m).length === 0, 'nothing left of the sandbox');

    from = sh.mark();
    sh.type(`${SRT} -- sh -c 'echo from-the-background-$((6*7))' < /dev/null &\r`);
    await sh.waitFor('from-the-background-42', from);
    expect(await atPrompt(sh, 'wait; echo rc=$?; stty -g > after; cmp before after && echo same-modes')).toMatch(/rc=0\r\nsame-modes/);
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);
});

describe('the outer terminal after srt', () => {
  it('stty -g is identical after a normal exit, Ctrl-C, a command killed by a signal, srt killed by SIGTERM, a command that left its pty raw, and failed starts (125)', async () => {
    const dir = scratch();
    writeFileSync(join(dir.cwd, 'bad.json'), '{ "filesystem": { "allowWrite": 5 } }');
    const fake = join(dir.cwd, 'fake-bwrap');
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
    const sh = await outerShell(dir);
    const runs: [string, string][] = [
      [`${SRT} -- true`, 'rc=0'],
      [`${SRT} -- sh -c 'kill -TERM $$'`, 'rc=143'],
      [`${SRT} -- sh -c 'stty raw -echo -isig; exit 4'`, 'rc=4'],
      [`${SRT} -- sh -c '${PYTHON} -c "import tty; tty.setraw(1)"; exit 5' < /dev/null`, 'rc=5'],
      [`${SRT} --settings bad.json -- true`, 'rc=125'],
      // A bwrap that fails after srt switched the terminal to raw mode.
      [`bwrap --dev-bind / / --ro-bind ${fake} /usr/bin/bwrap -- ${SRT} -- true`, 'rc=125'],
    ];
    for (const [cmd, rc] of runs) {
      const out = await atPrompt(sh, `stty -g > before; ${cmd}; echo rc=$?; stty -g > after; cmp -s before after && echo same-modes`);
      expect(out, cmd).toContain(rc);
      expect(out, cmd).toContain('same-modes');
    }
    // Ctrl-C typed at a non-interactive command.
    const m1 = marker();
    let from = sh.mark();
    sh.type(`stty -g > before; ${SRT} -- sleep ${m1}; echo rc=$?; stty -g > after; cmp -s before after && echo same-modes\r`);
    await running(m1, 'sleep');
    await sh.raw();
    sh.type('\x03');
    let out = await sh.waitFor(/same-modes\r\n.*OUTER\$ $/s, from);
    expect(out).toContain('rc=130');
    // SIGTERM from outside.
    const m2 = marker();
    from = sh.mark();
    sh.type(`stty -g > before; ${SRT} -- sleep ${m2}; echo rc=$?; stty -g > after; cmp -s before after && echo same-modes\r`);
    const srtPid = (await srtRunning(m2)).pid;
    await running(m2, 'sleep');
    await sh.raw();
    process.kill(srtPid, 'SIGTERM');
    out = await sh.waitFor(/same-modes\r\n.*OUTER\$ $/s, from);
    expect(out).toContain('rc=143');
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);
});

describe("srt's own lines after the command", () => {
  // A refused request gives srt an end-of-run line (the tripwire's goes the same way).
  const refused = 'curl -s -o /dev/null --max-time 20 http://blocked.test/';
  const blocked = 'srt: blocked blocked.test:80';
  const ran = async (script: string, dir = scratch()) => {
    const s = new Pty([process.execPath, SRT_BIN, '--', 'sh', '-c', script], dir);
    expect(await s.exitCode()).toBe(0);
    return s.output;
  };

  it('on a terminal they follow a reset of attributes and a shown cursor, on a new line when the command left the cursor mid-line', async () => {
    // Concealed text and a hidden cursor, mid-line: reset, cursor shown, then a newline.
    expect(await ran(`printf 'partial\\033[8m\\033[?25l'; ${refused}`)).toMatch(/partial\x1b\[8m\x1b\[\?25l\x1b\[0m\x1b\[\?25h\r\nsrt: blocked blocked\.test:80/);
    // At a line's start (escape sequences after the newline move nothing): no extra line.
    expect(await ran(`printf 'done\\n\\033[?25l'; ${refused}`)).toMatch(/done\r\n\x1b\[\?25l\x1b\[0m\x1b\[\?25hsrt: blocked blocked\.test:80/);
    // Output on stderr counts as well; a carriage return leaves the line's text behind.
    expect(await ran(`printf 'progress 50%%\\r' >&2; ${refused}`)).toMatch(/progress 50%\r\x1b\[0m\x1b\[\?25h\r\nsrt: blocked/);
  }, LONG);

  it('nothing extra when srt prints nothing, or when its stderr is not a terminal', async () => {
    const quiet = await ran(`printf 'x\\033[8m'`);
    expect(quiet).toContain('x\x1b[8m');
    expect(quiet).not.toContain('\x1b[0m');
    const dir = scratch();
    const err = join(dir.cwd, 'err.txt');
    const s = new Pty(['sh', '-c', `${SRT} -- sh -c "printf 'partial\\033[8m'; ${refused}" 2>${err}`], dir);
    expect(await s.exitCode()).toBe(0);
    expect(s.output).toContain('partial\x1b[8m');
    expect(s.output).not.toContain('\x1b[0m');
    expect(readFileSync(err, 'utf8')).toMatch(new RegExp(`^${blocked.replace(/[.]/g, '\\.')}`));
  }, LONG);
});

describe('without srt-init', () => {
  it('(a copy of srt without it, allowed by allowAllUnixSockets) the terminal is relayed through pipes: the command gets no descriptor of it', async () => {
    const dir = scratch();
    const copy = join(tmp.path, 'no-helper');
    if (!existsSync(copy)) {
      mkdirSync(copy);
      for (const part of ['package.json', 'bin', 'dist']) cpSync(join(REPO, part), join(copy, part), { recursive: true });
      symlinkSync(join(REPO, 'node_modules'), join(copy, 'node_modules'));
    }
    writeFileSync(join(dir.home, 'settings.json'), '{ "network": { "allowAllUnixSockets": true } }');
    const sh = await outerShell(dir);
    const from = sh.mark();
    sh.type(`${process.execPath} ${join(copy, 'bin', 'srt')} --settings ${join(dir.home, 'settings.json')} -- sh -c 'for fd in 0 1 2; do test -t $fd && echo tty-$fd; done; read x; echo got=$x'; echo rc=$?\r`);
    await sh.waitFor('gets no terminal', from);
    sh.type('typed-line\r');
    const out = await sh.waitFor(/rc=\d+/, from);
    expect(out).not.toMatch(/tty-\d/);
    expect(out).toContain('got=typed-line');
    expect(out).toContain('rc=0');
    sh.type('exit\r');
    await sh.exitCode();
  }, LONG);
});
