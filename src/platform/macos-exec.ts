// Running one command under sandbox-exec (macOS): the preflight that the profile compiles and
// applies, the command in its own session with its process group signalled and reaped, a
// watchdog for when srt dies (macOS has no die-with-parent), and `log stream` following the
// unified log for this run's tagged denials.

import { execFileSync, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, constants as fsConstants, existsSync, fstatSync, openSync, readdirSync, statSync } from 'node:fs';
import { isatty } from 'node:tty';
import { signalExit } from './run.js';
import type { RunSignals } from './session.js';

const LOG = '/usr/bin/log';
const PS = '/bin/ps';
/** Time the unified log gets to deliver the last denials after the command ends. */
const LOG_GRACE_MS = 300;
const LOG_START_MS = 1500;

export /** The terminal devices srt's stdio are (`/dev/ttys003`), so the command keeps its own terminal only. */
function terminalDevices(): string[] {
  if (process.platform !== 'darwin') return [];
  const rdevs = new Set<number>();
  for (const fd of [0, 1, 2]) {
    try { if (isatty(fd)) rdevs.add(fstatSync(fd).rdev); } catch { /* closed */ }
  }
  if (rdevs.size === 0) return [];
  const out: string[] = [];
  for (const name of readdirSync('/dev')) {
    if (!/^ttys\d+$/.test(name)) continue;
    try { if (rdevs.has(statSync(`/dev/${name}`).rdev)) out.push(`/dev/${name}`); } catch { /* gone */ }
  }
  return out;
}

/** Is srt in its terminal's foreground process group (a `+` in ps's STAT)? */
function inForeground(): boolean {
  try {
    return execFileSync(PS, ['-o', 'stat=', '-p', String(process.pid)], { encoding: 'utf8', timeout: 5000 }).includes('+');
  } catch {
    return true; // cannot tell: behave as a program run in the foreground does
  }
}

/**
 * The command's stdio: a terminal on stdout or stderr goes in write-only (a new open of the same
 * device) — the descriptor the shell gave is usually readable too, and the command, in its own
 * session, is never stopped by SIGTTIN from reading keystrokes through it. Not a barrier: the
 * profile lets the command open the terminal again; only a pty relay (Linux) keeps it out.
 */
function plainStdio(): { stdio: StdioOptions; opened: number[] } {
  const opened: number[] = [];
  const devices = terminalDevices();
  const out = [1, 2].map((fd) => {
    if (!isatty(fd)) return 'inherit' as const;
    const rdev = fstatSync(fd).rdev;
    const device = devices.find((d) => statSync(d).rdev === rdev) ?? (process.platform === 'linux' ? `/proc/self/fd/${fd}` : undefined);
    try {
      if (!device) throw new Error('no device');
      const w = openSync(device, fsConstants.O_WRONLY | fsConstants.O_NOCTTY);
      opened.push(w);
      return w;
    } catch {
      return 'ignore' as const; // cannot be made write-only: no terminal rather than a readable one
    }
  });
  return { stdio: ['inherit', out[0]!, out[1]!], opened };
}

export interface Denial { process: string; op: string; target: string }

/** `Sandbox: cat(4242) deny(1) file-read-data /Users/a/.ssh/id_rsa srt-…` → its parts. */
export function parseDenial(message: string, tag: string): Denial | null {
  const m = /Sandbox: (.+?)\(\d+\) deny\(\d+\) (\S+)(?: (.*))?$/.exec(message.trim());
  if (!m) return null;
  let target = (m[3] ?? '').trim();
  if (target.endsWith(tag)) target = target.slice(0, -tag.length).trim();
  return { process: m[1]!, op: m[2]!, target };
}

/** One run's processes beside the command (log stream, watchdog) and the denials it logged. */
export class SeatbeltRun {
  readonly denials = new Map<string, Denial>();
  /** Helper processes of the run (log stream, watchdog): stopped by cleanup whatever happens. */
  private readonly helpers = new Set<ChildProcess>();

  constructor(private readonly tag: string, private readonly log: ((line: string) => void) | undefined) {}

  /** Null when the profile compiles and applies (`sandbox-exec … /usr/bin/true`), else why not. */
  preflight(sandboxExec: string, args: string[], cwd: string): Promise<string | null> {
    return new Promise((resolve) => {
      const child = spawn(sandboxExec, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd });
      let err = '';
      child.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('error', (e) => { clearTimeout(timer); resolve(e.message); });
      child.on('close', (code, sig) => {
        clearTimeout(timer);
        resolve(code === 0 ? null : err.trim().split('\n').pop() || (sig ? `killed by ${sig}` : `exit status ${code}`));
      });
    });
  }

  /** Run the command in its own session (no controlling terminal: no TIOCSTI into your shell),
   *  forwarding signals to its process group; nothing of the group outlives the command, nor srt. */
  async launch(sandboxExec: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, signals: RunSignals): Promise<number> {
    const early = signals.received[0];
    if (early) return signalExit(early);
    // With a terminal on stdin the command reads it directly: never while srt is in the background.
    const tty = isatty(0);
    while (tty && !inForeground()) process.kill(process.pid, 'SIGSTOP');
    const { stdio, opened } = plainStdio();
    return new Promise((resolve, reject) => {
      // Listeners first: a signal that arrives while the command starts is delivered once it has.
      let pgid: number | undefined;
      const pending: NodeJS.Signals[] = [];
      const group = (sig: NodeJS.Signals) => {
        if (pgid === undefined) { pending.push(sig); return; }
        try { process.kill(-pgid, sig); } catch { /* gone */ }
      };
      // Job control from outside (the command has no controlling terminal): Ctrl-Z freezes the
      // command and stops srt; when srt continues, so does the command — unless srt is now in the
      // background and the command could read the terminal, then both stay stopped.
      const onStop = () => {
        if (pgid !== undefined) try { process.kill(-pgid, 'SIGSTOP'); } catch { /* gone */ }
        do process.kill(process.pid, 'SIGSTOP'); while (tty && !inForeground());
        if (pgid !== undefined) try { process.kill(-pgid, 'SIGCONT'); } catch { /* gone */ }
      };
      process.on('SIGTSTP', onStop);
      const unlisten = signals.listen(group);
      // Started before the command: srt killed while a watchdog was still being forked would
      // leave the command running.
      const watchdog = this.watch();
      const done = () => {
        process.off('SIGTSTP', onStop);
        unlisten();
        this.stopHelper(watchdog); // first, so it never signals a process group number reused later
        if (pgid !== undefined) try { process.kill(-pgid, 'SIGKILL'); } catch { /* none left */ }
      };
      const child = spawn(sandboxExec, args, { stdio, env, cwd, detached: true });
      for (const fd of opened) closeSync(fd);
      pgid = child.pid;
      if (pgid !== undefined) {
        this.arm(watchdog, pgid);
        for (const sig of pending.splice(0)) group(sig);
      }
      child.on('error', (e) => { done(); reject(e); });
      child.on('exit', (code, sig) => {
        done();
        resolve(sig ? signalExit(sig) : (code ?? 125));
      });
    });
  }

  /**
   * macOS has no die-with-parent: a watchdog in its own session holds the read end of a pipe
   * only srt writes to. Told the command's process group and srt's helpers (arm), it waits for
   * the pipe to close — srt ending in any way, SIGKILL included — and kills them.
   */
  private watch(): ChildProcess {
    const child = spawn('/bin/sh', ['-c', 'read g also; [ -n "$g" ] || exit 0; read _; kill -KILL -"$g" $also 2>/dev/null'], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    child.stdin!.on('error', () => { /* it was stopped first */ });
    (child.stdin as unknown as { unref(): void }).unref();
    child.unref();
    this.helpers.add(child);
    return child;
  }

  private arm(watchdog: ChildProcess, pgid: number): void {
    const also = [...this.helpers].filter((h) => h !== watchdog).map((h) => h.pid).filter((p): p is number => p !== undefined);
    watchdog.stdin!.write(`${[pgid, ...also].join(' ')}\n`);
  }

  private stopHelper(child: ChildProcess | undefined): void {
    if (!child) return;
    this.helpers.delete(child);
    if (child.exitCode === null && child.signalCode === null) try { child.kill('SIGKILL'); } catch { /* gone */ }
  }

  /** Follow the unified log for this run's denials; resolves once `log` listens (or gave up). */
  followLog(): Promise<ChildProcess | undefined> {
    if (!existsSync(LOG)) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const child = spawn(LOG, ['stream', '--style', 'ndjson', '--predicate', `eventMessage CONTAINS "${this.tag}"`], { stdio: ['ignore', 'pipe', 'pipe'] });
      this.helpers.add(child);
      let buffered = '';
      let ready = false;
      const timer = setTimeout(() => { ready = true; resolve(child); }, LOG_START_MS);
      const start = () => { if (!ready) { ready = true; clearTimeout(timer); resolve(child); } };
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        start(); // its first output is the "Filtering the log data…" header
        buffered += d;
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) this.recordLogLine(line);
      });
      child.stderr!.setEncoding('utf8').on('data', (d: string) => {
        this.log?.(`log stream: ${d.trim()}`);
      });
      child.on('error', () => { clearTimeout(timer); resolve(undefined); });
      child.on('exit', () => start());
    });
  }

  private recordLogLine(line: string): void {
    let message: string | undefined;
    try {
      message = (JSON.parse(line) as { eventMessage?: string }).eventMessage;
    } catch { return; }
    const d = message ? parseDenial(message, this.tag) : null;
    if (!d) return;
    this.log?.(`seatbelt: ${message}`);
    // Service lookups and the like are noise to report; files and network are what users act on.
    if (!/^(file-|network-|process-exec)/.test(d.op)) return;
    this.denials.set(`${d.op} ${d.target}`, d);
  }

  /** Give the log the last denials, then stop it. */
  /** Give the log the last denials, then stop it. */
  stopLog(child: ChildProcess): Promise<void> {
    return new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) { this.helpers.delete(child); return resolve(); }
      const timer = setTimeout(() => this.stopHelper(child), LOG_GRACE_MS);
      child.on('exit', () => { clearTimeout(timer); this.helpers.delete(child); resolve(); });
    });
  }

  /** Stop every helper process of the run. */
  cleanup(): void {
    for (const h of [...this.helpers]) this.stopHelper(h);
  }
}
