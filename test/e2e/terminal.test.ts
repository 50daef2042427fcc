// The command's own terminal (SPEC §4 Terminal): srt driven from a real pseudo-terminal
// (fixtures/pty-host.py), with keystrokes typed into it and its screen output read back.
// Job control is exercised from a real interactive bash around srt, as a user would.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processesWith, REPO, SRT_BIN, tempDir } from './helpers.js';

const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
const HOST = join(REPO, 'test', 'e2e', 'fixtures', 'pty-host.py');
const SRT = `${process.execPath} ${SRT_BIN}`;
const WAIT_MS = 20_000;

const tmp = tempDir('srt-terminal-');
const sessions: Pty[] = [];
afterAll(() => {
  for (const s of sessions) s.kill();
  tmp.cleanup();
});

let n = 0;
function scratch(): { home: string; cwd: string } {
  const base = join(tmp.path, String(n++));
  const home = join(base, 'home');
  const cwd = join(base, 'cwd');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd);
  return { home, cwd };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A program running on a fresh pseudo-terminal: type into it, read its screen output. */
class Pty {
  private text = '';
  private readonly child: ChildProcess;
  readonly exit: Promise<number>;

  constructor(cmd: string[], opts: { cwd: string; home: string; env?: Record<string, string>; rows?: number; cols?: number }) {
    this.child = spawn(PYTHON, [HOST, String(opts.rows ?? 24), String(opts.cols ?? 80), ...cmd], {
      cwd: opts.cwd,
      env: { PATH: process.env.PATH, HOME: opts.home, LANG: 'C.UTF-8', TERM: 'xterm', PS1: 'OUTER$ ', ...opts.env },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child.stdout!.on('data', (b: Buffer) => { this.text += b.toString('latin1'); });
    this.exit = new Promise((res) => this.child.on('exit', (code) => res(code ?? -1)));
    sessions.push(this);
  }

  /** Everything shown so far; `mark()` is a position to search after. */
  get output(): string { return this.text; }
  mark(): number { return this.text.length; }

  type(keys: string): void {
    this.child.stdin!.write(`w ${Buffer.from(keys, 'latin1').toString('hex')}\n`);
  }

  resize(rows: number, cols: number): void {
    this.child.stdin!.write(`r ${rows} ${cols}\n`);
  }

  /** Wait (bounded) until the output after `from` matches; returns that output. */
  async waitFor(pattern: RegExp | string, from = 0): Promise<string> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const seen = this.text.slice(from);
      if (typeof pattern === 'string' ? seen.includes(pattern) : pattern.test(seen)) return seen;
      if (Date.now() > deadline || this.child.exitCode !== null) {
        throw new Error(`no ${String(pattern)} on the terminal; it shows:\n${JSON.stringify(seen)}`);
      }
      await sleep(20);
    }
  }

  async exitCode(): Promise<number> {
    return await Promise.race([this.exit, sleep(WAIT_MS).then(() => { throw new Error(`still running; it shows:\n${JSON.stringify(this.text)}`); })]);
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

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
  const out = await sh.waitFor(/\r\n(.*)OUTER\$ $/s, from);
  return out;
}

/** Wait (bounded) until the outer shell's `jobs` lists srt as stopped. */
async function stoppedJob(sh: Pty): Promise<void> {
  for (let i = 0; ; i++) {
    if (/Stopped.*srt -- sh -c/.test(await atPrompt(sh, 'jobs'))) return;
    if (i === 50) throw new Error(`srt never stopped; the terminal shows:\n${JSON.stringify(sh.output)}`);
    await sleep(200);
  }
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('an interactive command on its own terminal', () => {
  it('bash -i: Ctrl-C at the prompt leaves bash running; `sleep 100 & jobs; fg` then Ctrl-C ends only sleep; Ctrl-Z stops a job inside; TIOCSTI stays refused', async () => {
    const dir = scratch();
    const s = new Pty([process.execPath, SRT_BIN, '--', 'bash', '--norc', '--noprofile', '-i'], { ...dir, env: { PS1: 'INNER$ ' } });
    await s.waitFor('INNER$ ');
    let from = s.mark();
    s.type('\x03');
    await s.waitFor('INNER$ ', from);
    from = s.mark();
    s.type('echo alive-$((6*7)) $(tty)\r');
    await s.waitFor('alive-42 /dev/pts/0', from);

    from = s.mark();
    s.type('sleep 100 & jobs\r');
    await s.waitFor(/\[1\]\+\s+Running\s+sleep 100/, from);
    await s.waitFor('INNER$ ', from);
    from = s.mark();
    s.type('fg\r');
    await s.waitFor('sleep 100\r\n', from);
    await sleep(300); // bash hands the terminal to sleep's group right after printing its name
    s.type('\x03');
    await s.waitFor('INNER$ ', from);
    from = s.mark();
    s.type('echo status=$? jobs=$(jobs | wc -l)\r');
    await s.waitFor('status=130 jobs=0', from);

    from = s.mark();
    s.type('sleep 100\r');
    await s.waitFor('sleep 100\r\n', from);
    await sleep(300);
    s.type('\x1a');
    await s.waitFor(/Stopped\s+sleep 100/, from);
    from = s.mark();
    s.type(`kill %1; ${PYTHON} -c "import fcntl; fcntl.ioctl(0, 0x5412, b'x')" 2>&1 | tail -1\r`);
    await s.waitFor('PermissionError: [Errno 1] Operation not permitted', from);
    s.type('exit 7\r');
    expect(await s.exitCode()).toBe(7);
  });

  it('a python3 REPL survives Ctrl-C', async () => {
    const dir = scratch();
    const s = new Pty([process.execPath, SRT_BIN, '--', PYTHON, '-q'], dir);
    await s.waitFor('>>> ');
    const from = s.mark();
    s.type('\x03');
    await s.waitFor('KeyboardInterrupt', from);
    s.type('print(6 * 7)\r');
    await s.waitFor('42\r\n>>> ', from);
    s.type('exit()\r');
    expect(await s.exitCode()).toBe(0);
  });

  it('window size: the pty starts at the outer size and follows a resize (stty size inside)', async () => {
    const dir = scratch();
    const s = new Pty([process.execPath, SRT_BIN, '--', 'bash', '--norc', '--noprofile', '-i'], { ...dir, env: { PS1: 'INNER$ ' }, rows: 24, cols: 80 });
    await s.waitFor('INNER$ ');
    let from = s.mark();
    s.type('stty size\r');
    await s.waitFor(/\r24 80\r\n/, from);
    s.resize(37, 101);
    await sleep(300);
    from = s.mark();
    s.type('stty size\r');
    await s.waitFor(/\r37 101\r\n/, from);
    s.type('exit\r');
    expect(await s.exitCode()).toBe(0);
  });

  it('a full-screen program (less) draws, and redraws for a new window size', async () => {
    const dir = scratch();
    writeFileSync(join(dir.cwd, 'lines.txt'), Array.from({ length: 200 }, (_, i) => `line-${String(i + 1).padStart(3, '0')}`).join('\n') + '\n');
    const s = new Pty([process.execPath, SRT_BIN, '--', 'less', 'lines.txt'], { ...dir, rows: 24, cols: 80 });
    await s.waitFor('line-023');
    expect(s.output).not.toContain('line-024'); // one screen: 23 lines and the prompt line
    const from = s.mark();
    s.resize(41, 80);
    await s.waitFor('line-040', from); // redrawn for 41 rows
    s.type('q');
    expect(await s.exitCode()).toBe(0);
  });
});

describe('the user\'s terminal stays outside', () => {
  it('no process of the sandbox (bwrap, helper, relay, init, the command) holds a descriptor of the user\'s terminal', async () => {
    const dir = scratch();
    const marker = `7${process.pid}${Date.now() % 100000}`;
    const s = new Pty(['sh', '-c', `stat -L -c 'outer=%d:%i' /proc/self/fd/0; ${SRT} -- sh -c 'echo inside-ready; exec sleep ${marker}'`], dir);
    const outer = /outer=(\d+:\d+)/.exec(await s.waitFor(/outer=\d+:\d+/))![1];
    await s.waitFor('inside-ready');
    await until(() => processesWith(marker).some((p) => p.includes(`sleep\0${marker}`)), 'sleep to run');
    const sandbox = processesWith(marker).filter((p) => !p.includes(SRT_BIN) && !p.includes('pty-host.py')).map((p) => Number(p.split(':')[0]));
    expect(sandbox.length).toBeGreaterThanOrEqual(5); // bwrap, outer helper, relay, init, sleep
    const held: string[] = [];
    for (const pid of sandbox) {
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
    s.type('\x03');
    expect(await s.exitCode()).toBe(130);
  });
});

describe('job control with the user\'s shell', () => {
  it('Ctrl-Z on a non-interactive command stops srt: the outer shell reads what is typed next, nothing is stolen; fg resumes; the terminal modes are unchanged', async () => {
    const dir = scratch();
    const sh = await outerShell(dir);
    await atPrompt(sh, 'stty -g > before');
    const started = Date.now();
    let from = sh.mark();
    sh.type(`${SRT} -- sh -c 'sleep 3; cat > stolen'\r`);
    await sleep(800); // the command is inside its sleep
    sh.type('\x1a');
    await sh.waitFor(/Stopped\s+.*srt -- sh -c/, from);
    await sh.waitFor('OUTER$ ', from);
    // Past the end of the sleep: had the command kept running, cat would read the next line.
    await sleep(Math.max(0, 3_500 - (Date.now() - started)));
    const typed = await atPrompt(sh, 'echo typed-at-$((6*7)); jobs');
    expect(typed).toContain('typed-at-42');
    expect(typed).toMatch(/Stopped\s+.*srt -- sh -c/);
    expect(existsSync(join(dir.cwd, 'stolen')) ? readFileSync(join(dir.cwd, 'stolen'), 'utf8') : '').toBe('');

    from = sh.mark();
    sh.type('fg\r');
    await sh.waitFor(/fg\r\n.*srt -- sh -c 'sleep 3; cat > stolen'\r\n/s, from);
    await until(() => existsSync(join(dir.cwd, 'stolen')), 'cat to start');
    sh.type('after-fg\r');
    await sh.waitFor('after-fg\r\n', from);
    sh.type('\x04');
    await sh.waitFor('OUTER$ ', from);
    expect(readFileSync(join(dir.cwd, 'stolen'), 'utf8')).toBe('after-fg\n');
    const modes = await atPrompt(sh, 'echo rc=$?; stty -g > after; cmp before after && echo same-modes');
    expect(modes).toContain('rc=0');
    expect(modes).toContain('same-modes');
    sh.type('exit\r');
    await sh.exitCode();
  });

  it('started with & it waits stopped, reading nothing, until fg; after Ctrl-Z, bg stops it again', async () => {
    const dir = scratch();
    const sh = await outerShell(dir);
    let from = sh.mark();
    sh.type(`${SRT} -- sh -c 'echo started > marker; cat > stolen' &\r`);
    await sh.waitFor('OUTER$ ', from);
    await stoppedJob(sh);
    expect(existsSync(join(dir.cwd, 'marker'))).toBe(false); // the sandbox never started
    expect(await atPrompt(sh, 'echo read-by-outer-$((2*3))')).toContain('read-by-outer-6');

    from = sh.mark();
    sh.type('fg\r');
    await until(() => existsSync(join(dir.cwd, 'stolen')), 'the command to start after fg');
    sh.type('one\r');
    await sh.waitFor('one\r\n', from);
    sh.type('\x1a'); // stops cat: srt gives the terminal back
    await sh.waitFor(/Stopped\s+.*srt -- sh -c/, from);
    await sh.waitFor('OUTER$ ', from);
    // `bg`: srt would be in the background, so it stops again (the sandbox stays frozen).
    await atPrompt(sh, 'bg');
    await stoppedJob(sh);
    expect(await atPrompt(sh, 'echo still-outer-$((3*3))')).toContain('still-outer-9');

    from = sh.mark();
    sh.type('fg\r');
    await sh.waitFor(/srt -- sh -c 'echo started > marker; cat > stolen'\r\n/s, from);
    await sleep(300);
    sh.type('two\r');
    await sh.waitFor('two\r\n', from);
    sh.type('\x04');
    await sh.waitFor('OUTER$ ', from);
    expect(readFileSync(join(dir.cwd, 'stolen'), 'utf8')).toBe('one\ntwo\n');
    sh.type('exit\r');
    await sh.exitCode();
  });

  it('kill -STOP of srt (which it cannot catch) freezes the sandbox too; fg resumes it', async () => {
    const dir = scratch();
    const sh = await outerShell(dir);
    const marker = `srt-stop-${process.pid}-${Date.now()}`;
    let from = sh.mark();
    sh.type(`${SRT} -- sh -c ': ${marker}; i=0; while :; do i=$((i+1)); echo $i > counter; sleep 0.05; done'\r`);
    await until(() => existsSync(join(dir.cwd, 'counter')), 'the counter');
    const srtPid = Number(processesWith(marker).map((p) => p.split(':')[0]).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(SRT_BIN)));
    expect(srtPid).toBeGreaterThan(0);
    const counter = () => readFileSync(join(dir.cwd, 'counter'), 'utf8').trim();
    process.kill(srtPid, 'SIGSTOP');
    await sh.waitFor(/Stopped\s+.*srt -- sh -c/, from);
    await sleep(1_000); // srt's helper notices within 200 ms
    const frozen = counter();
    await sleep(1_000);
    expect(counter()).toBe(frozen);
    sh.type('fg\r');
    await until(() => counter() !== frozen, 'the counter to move again');
    from = sh.mark();
    sh.type('\x03');
    await sh.waitFor('OUTER$ ', from);
    expect(await atPrompt(sh, 'echo rc=$?')).toContain('rc=130');
    sh.type('exit\r');
    await sh.exitCode();
  });
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
    let from = sh.mark();
    sh.type(`stty -g > before; ${SRT} -- sleep 1000; echo rc=$?; stty -g > after; cmp -s before after && echo same-modes\r`);
    await sleep(1_500);
    sh.type('\x03');
    let out = await sh.waitFor(/same-modes\r\n.*OUTER\$ $/s, from);
    expect(out).toContain('rc=130');
    // SIGTERM from outside.
    const marker = `9${process.pid}${Date.now() % 100000}`;
    from = sh.mark();
    sh.type(`stty -g > before; ${SRT} -- sleep ${marker}; echo rc=$?; stty -g > after; cmp -s before after && echo same-modes\r`);
    await until(() => processesWith(marker).some((p) => p.includes(SRT_BIN)), 'srt to run');
    await sleep(500);
    for (const p of processesWith(marker).filter((p) => p.includes(SRT_BIN))) process.kill(Number(p.split(':')[0]), 'SIGTERM');
    out = await sh.waitFor(/same-modes\r\n.*OUTER\$ $/s, from);
    expect(out).toContain('rc=143');
    sh.type('exit\r');
    await sh.exitCode();
  });
});

describe('without a terminal on stdin', () => {
  it('no pty: stdio is passed through as today (stdout stays the terminal), exit codes unchanged', async () => {
    const dir = scratch();
    const s = new Pty(['sh', '-c', `${SRT} -- sh -c 'test -t 0 || echo stdin-not-a-tty; test -t 1 && echo stdout-is-a-tty; echo ctty=$(ps -o tty= -p $$); exit 3' < /dev/null; echo rc=$?`], dir);
    const out = await s.waitFor(/rc=\d+/);
    expect(out).toContain('stdin-not-a-tty');
    expect(out).toContain('stdout-is-a-tty');
    expect(out).toContain('ctty=?'); // no controlling terminal inside (--new-session)
    expect(out).toContain('rc=3');
    await s.exitCode();
  });

  it('a terminal on stdout/stderr reaches the command write-only: keystrokes cannot be read through it', async () => {
    const dir = scratch();
    // Reading fd 1 or 2 (a terminal a shell usually opened read-write) must fail; writing works.
    const py = "import os, sys\nfor fd in (1, 2):\n  try:\n    os.read(fd, 1); print('read', fd)\n  except OSError as e:\n    print('refused', fd, e.errno)\nprint('written')";
    const s = new Pty(['sh', '-c', `${SRT} -- python3 -c "${py.replace(/"/g, '\\"')}" < /dev/null; echo rc=$?`], dir);
    await sleep(500);
    s.type('secret-keystrokes\r');
    const out = await s.waitFor(/rc=\d+/);
    expect(out).toContain('refused 1 9'); // EBADF: not open for reading
    expect(out).toContain('refused 2 9');
    expect(out).toContain('written');
    expect(out).not.toMatch(/read [12]/);
    await s.exitCode();
  });

  it('stdin a terminal, stdout a file: the command reads the pty and writes the file directly', async () => {
    const dir = scratch();
    const s = new Pty(['sh', '-c', `${SRT} -- sh -c 'tty; test -t 1 || echo stdout-not-a-tty' > out.txt; echo rc=$?`], dir);
    await s.waitFor('rc=0');
    expect(readFileSync(join(dir.cwd, 'out.txt'), 'utf8')).toBe('/dev/pts/0\nstdout-not-a-tty\n');
    await s.exitCode();
    // stdout and stderr both redirected: what is typed is still echoed on the user's terminal.
    const both = new Pty(['sh', '-c', `${SRT} -- sh -c 'read x; echo got=$x' > both.txt 2>&1; echo rc=$?`], dir);
    await sleep(1_000);
    both.type('typed-in\r');
    const out = await both.waitFor('rc=0');
    expect(out).toContain('typed-in');
    expect(readFileSync(join(dir.cwd, 'both.txt'), 'utf8')).toBe('got=typed-in\n');
    await both.exitCode();
  });
});
