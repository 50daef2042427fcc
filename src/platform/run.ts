// Spawn bubblewrap with the caller's stdio (or, when stdin is a terminal, the command's own pty
// relayed by terminal.ts), forward SIGINT/SIGTERM/SIGHUP/SIGQUIT to the command, and turn bwrap's
// JSON status into the command's exit status.

import { spawn, type StdioOptions } from 'node:child_process';
import { closeSync, constants as fsConstants, openSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { isatty } from 'node:tty';
import type { Terminal } from './terminal.js';

export const STATUS_FD = 3;
/** Every signal a terminal or a supervisor sends to end srt (Ctrl-C, Ctrl-\, hang-up, kill):
 *  forwarded to the command while it runs; Node would otherwise die on them without cleaning up. */
export const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;

export interface LaunchResult {
  /** false: bwrap failed before the command started (bwrap printed why). */
  started: boolean;
  /** The command's status per SPEC §1 when started. */
  status: number;
  /** A signal srt itself received and forwarded (for the caller's own exit). */
  signal?: NodeJS.Signals;
}

export interface LaunchOptions {
  bwrap: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The sandbox's first process is the seccomp helper (else bwrap's own init). */
  viaHelper: boolean;
  /** The command runs on its own pty, relayed to the user's terminal (the helper has `--pty`). */
  terminal?: Terminal;
  /** A descriptor of ours handed to bwrap as its descriptor `at` (the protected-path supervisor's report). */
  report?: { fd: number; at: number };
  /** Contents bwrap reads from these descriptors (`--ro-bind-data`): pipes, no file anywhere. */
  data?: { fd: number; bytes: Buffer }[];
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Where a forwarded signal goes. The seccomp helper (the sandbox's first process) passes it on
 * to the command's whole process group, as a terminal's Ctrl-C would. Without the helper,
 * bwrap's init does not forward signals, so they go to its children directly.
 */
function signalTargets(sandboxPid: number, viaHelper: boolean): number[] {
  return viaHelper ? [sandboxPid] : childrenOf(sandboxPid);
}

/**
 * stdio for a run without a pty. A terminal on stdout or stderr goes in write-only (a new open
 * of the same device): the descriptor the shell gave is usually open for reading too, and the
 * command — in its own session, so never stopped by SIGTTIN — could read keystrokes meant for
 * the shell through it, even from the background (`srt … < /dev/null &`).
 */
function plainStdio(): { stdio: StdioOptions; opened: number[] } {
  const opened: number[] = [];
  const out = [1, 2].map((fd) => {
    if (!isatty(fd)) return 'inherit' as const;
    try {
      const w = openSync(`/proc/self/fd/${fd}`, fsConstants.O_WRONLY | fsConstants.O_NOCTTY);
      opened.push(w);
      return w;
    } catch {
      return 'ignore' as const; // cannot be made write-only: the command gets no terminal rather than a readable one
    }
  });
  return { stdio: ['inherit', out[0]!, out[1]!, 'pipe'], opened };
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
  let received: NodeJS.Signals | undefined;
  const pending: NodeJS.Signals[] = [];
  let deliver = (sig: NodeJS.Signals) => { pending.push(sig); };
  const signalled = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => { received ??= sig; deliver(sig); signalled.abort(); };
  for (const s of FORWARDED_SIGNALS) process.on(s, onSignal);
  const detach = () => { for (const s of FORWARDED_SIGNALS) process.off(s, onSignal); };
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
    const plain = terminal ? undefined : plainStdio();
    const child = spawn(opts.bwrap, opts.args, {
      env: opts.env,
      cwd: opts.cwd,
      stdio: withDescriptors(terminal ? terminal.spawnStdio() : plain!.stdio, [
        ...(opts.report ? [{ at: opts.report.at, value: opts.report.fd }] : []),
        ...(opts.data ?? []).map((d) => ({ at: d.fd, value: 'pipe' as const })),
      ]),
    });
    for (const d of opts.data ?? []) {
      const pipe = child.stdio[d.fd] as import('node:stream').Writable;
      pipe.on('error', () => { /* bwrap failed before reading it: its own error says why */ });
      pipe.end(d.bytes);
    }
    for (const fd of plain?.opened ?? []) closeSync(fd);
    terminal?.attach(child);
    let statusText = '';
    let sandboxPid: number | null = null;

    deliver = (sig: NodeJS.Signals) => {
      if (sandboxPid === null) { pending.push(sig); return; }
      for (const pid of signalTargets(sandboxPid, opts.viaHelper)) {
        try { process.kill(pid, sig); } catch { /* already gone */ }
      }
    };
    const finish = () => { detach(); terminal?.close(); };

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
      const m = /"exit-code":\s*(\d+)/.exec(statusText);
      if (m) return resolve({ started: true, status: Number(m[1]), signal: received });
      if (sig) return resolve({ started: true, status: signalExit(sig), signal: received });
      resolve({ started: false, status: code ?? 125, signal: received });
    });
  });
}

/** The exit status for death by `sig` (SPEC §1: 128+N). */
export function signalExit(sig: NodeJS.Signals): number {
  return 128 + constants.signals[sig];
}
