// Spawn bubblewrap with the caller's stdio (or, when any of it is a terminal, the command's own
// pty relayed by terminal.ts), forward SIGINT/SIGTERM/SIGHUP/SIGQUIT to the command, and turn
// bwrap's JSON status into the command's exit status.

import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { isatty } from 'node:tty';
import type { RunSignals } from './session.js';
import type { Terminal } from './terminal.js';

export const STATUS_FD = 3;

export interface LaunchResult {
  /** false: bwrap failed before the command started (bwrap printed why). */
  started: boolean;
  /** The command's status per SPEC §1 when started. */
  status: number;
  /** A signal srt itself received and forwarded (for the caller's own exit). */
  signal?: NodeJS.Signals;
}

export interface LaunchOptions {
  /** The run's signals: forwarded to the command once it runs; one that came before it started
   *  means it never does. */
  signals: RunSignals;
  bwrap: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The sandbox's first process is srt-init (else bwrap's own init). */
  viaHelper: boolean;
  /** The command runs on its own pty, relayed to the user's terminal (the helper has `--pty`). */
  terminal?: Terminal;
  /** A descriptor of ours handed to bwrap as its descriptor `at` (the protected-path supervisor's report). */
  report?: { fd: number; at: number };
  /** Contents bwrap reads from these descriptors (`--ro-bind-data`): pipes, no file anywhere. */
  data?: { fd: number; bytes: Buffer }[];
  /** srt-init's `--go-fd`: `start` runs once bwrap is spawned, while it and srt-init set the
   *  sandbox up; srt-init starts the command on its true, and on false (or a signal first, or
   *  srt's death: the pipe's end of file) ends without running anything. */
  go?: { fd: number; start: () => Promise<boolean> };
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Where a forwarded signal goes. srt-init (the sandbox's first process) passes it on
 * to the command's whole process group, as a terminal's Ctrl-C would. Without the helper,
 * bwrap's init does not forward signals, so they go to its children directly.
 */
function signalTargets(sandboxPid: number, viaHelper: boolean): number[] {
  return viaHelper ? [sandboxPid] : childrenOf(sandboxPid);
}

/**
 * stdio for a run without a pty: passed through unchanged, except that a terminal never goes in.
 * That happens only without srt-init (which makes the pty): then a terminal on stdio is
 * relayed through a pipe srt copies (relayPipes), and the command sees no terminal. Any
 * descriptor of the terminal, even a write-only one, would let the command read keystrokes (a
 * reopen through /proc/self/fd) and leave the terminal exclusive or in raw mode (ioctls).
 */
function plainStdio(): StdioOptions {
  return [...[0, 1, 2].map((fd) => (isatty(fd) ? 'pipe' : 'inherit')), 'pipe'] as StdioOptions;
}

function relayPipes(child: ChildProcess): () => void {
  const { stdin, stdout, stderr } = child;
  stdout?.on('data', (chunk: Buffer) => process.stdout.write(chunk));
  stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  if (!stdin) return () => {};
  stdin.on('error', () => {}); // the command closed its stdin
  process.stdin.pipe(stdin);
  return () => {
    process.stdin.unpipe(stdin);
    process.stdin.pause();
  };
}

/** `stdio` with `extra` descriptors at their numbers (the ones between stay closed). */
function withDescriptors(stdio: StdioOptions, extra: Array<{ at: number; value: number | 'pipe' }>): StdioOptions {
  const out = [...(stdio as unknown[])];
  for (const { at, value } of extra) {
    while (out.length < at) out.push('ignore');
    out[at] = value;
  }
  return out as StdioOptions;
}

export async function launch(opts: LaunchOptions): Promise<LaunchResult> {
  const { terminal } = opts;
  const early = opts.signals.received[0];
  if (early) {
    terminal?.close();
    return { started: false, status: signalExit(early), signal: early };
  }
  let received: NodeJS.Signals | undefined;
  const pending: NodeJS.Signals[] = [];
  let deliver = (sig: NodeJS.Signals) => { pending.push(sig); };
  let withholdGo = () => {};
  const signalled = new AbortController();
  const detach = opts.signals.listen((sig) => {
    received ??= sig;
    withholdGo();
    deliver(sig);
    terminal?.end();
    signalled.abort();
  });
  try {
    // Waits while srt is in the background; a signal meanwhile ends srt before anything started.
    if (terminal && !(await terminal.prepare(signalled.signal))) {
      detach();
      terminal.close();
      return { started: false, status: signalExit(received!), signal: received };
    }
  } catch (err) {
    detach();
    terminal?.close();
    throw err;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(opts.bwrap, opts.args, {
      env: opts.env,
      cwd: opts.cwd,
      stdio: withDescriptors(terminal ? terminal.spawnStdio() : plainStdio(), [
        ...(opts.report ? [{ at: opts.report.at, value: opts.report.fd }] : []),
        ...(opts.data ?? []).map((d) => ({ at: d.fd, value: 'pipe' as const })),
        ...(opts.go ? [{ at: opts.go.fd, value: 'pipe' as const }] : []),
      ]),
    });
    // srt-init's go: sent (always, without a go descriptor), withheld, or not decided yet.
    let go: 'sent' | 'withheld' | undefined = opts.go ? undefined : 'sent';
    if (opts.go) {
      const pipe = child.stdio[opts.go.fd] as import('node:stream').Writable;
      pipe.on('error', () => { /* srt-init is gone: bwrap's status says how it ended */ });
      withholdGo = () => {
        if (go) return;
        go = 'withheld';
        pipe.destroy();
      };
      // A signal delivered while the proxy started (or while srt was stopped) reaches the
      // listeners only when the loop next polls for I/O: the go waits for that poll.
      void opts.go.start().then(afterNextPoll).then((listens) => {
        if (!listens || received !== undefined) return withholdGo();
        if (go) return;
        go = 'sent';
        pipe.end(Buffer.of(1));
      });
    }
    for (const d of opts.data ?? []) {
      const pipe = child.stdio[d.fd] as import('node:stream').Writable;
      pipe.on('error', () => { /* bwrap failed before reading it: its own error says why */ });
      pipe.end(d.bytes);
    }
    terminal?.attach(child);
    const unpipe = terminal ? () => {} : relayPipes(child);
    let statusText = '';
    let sandboxPid: number | null = null;

    deliver = (sig: NodeJS.Signals) => {
      if (sandboxPid === null) { pending.push(sig); return; }
      for (const pid of signalTargets(sandboxPid, opts.viaHelper)) {
        try { process.kill(pid, sig); } catch { /* already gone */ }
      }
    };
    const finish = () => { detach(); unpipe(); terminal?.close(); };

    const status = child.stdio[STATUS_FD] as import('node:stream').Readable;
    status.setEncoding('utf8');
    status.on('data', (chunk: string) => {
      statusText += chunk;
      const m = /"child-pid":\s*(\d+)/.exec(statusText);
      if (m && sandboxPid === null) {
        sandboxPid = Number(m[1]);
        for (const sig of pending.splice(0)) deliver(sig);
      }
    });

    child.on('error', (err) => { finish(); reject(err); });
    child.on('close', (code, sig) => {
      finish();
      // The go withheld for a signal: nothing ran, and srt ends as that signal would.
      if (go !== 'sent' && received !== undefined) return resolve({ started: false, status: signalExit(received), signal: received });
      const m = /"exit-code":\s*(\d+)/.exec(statusText);
      if (m) return resolve({ started: true, status: Number(m[1]), signal: received });
      if (sig) return resolve({ started: true, status: signalExit(sig), signal: received });
      resolve({ started: false, status: code ?? 125, signal: received });
    });
  });
}

/** `value`, once the event loop has polled for I/O again (libuv reads delivered signals there;
 *  an immediate set in the check phase runs in the next turn's, after its poll). */
function afterNextPoll<T>(value: T): Promise<T> {
  return new Promise((resolve) => setImmediate(() => setImmediate(() => resolve(value))));
}

/** The exit status for death by `sig` (SPEC §1: 128+N). */
export function signalExit(sig: NodeJS.Signals): number {
  return 128 + constants.signals[sig];
}
