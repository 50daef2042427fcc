// Spawn bubblewrap with the caller's stdio (a TTY stays a TTY), forward SIGINT/SIGTERM/SIGHUP
// to the command, and turn bwrap's JSON status into the command's exit status.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';

export const STATUS_FD = 3;
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

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
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function procField(pid: number, file: 'comm' | 'pgid'): string | null {
  try {
    if (file === 'comm') return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2] ?? null;
  } catch {
    return null;
  }
}

/**
 * The processes a terminal's Ctrl-C would reach: the command and its descendants in the
 * command's process group, found from the host. The sandbox's own init processes (bwrap's, or
 * the seccomp helper's two) and relays are skipped so the command gets each signal once.
 */
export function foregroundProcesses(sandboxPid: number, viaHelper: boolean): number[] {
  let commands = childrenOf(sandboxPid);
  if (viaHelper) {
    // sandbox pid 1 = helper; its helper child is the nested namespace's init, whose child is the command.
    commands = commands.filter((p) => procField(p, 'comm') === 'srt-seccomp').flatMap(childrenOf);
  }
  const out: number[] = [];
  for (const cmd of commands) {
    const pgid = procField(cmd, 'pgid');
    const stack = [cmd];
    while (stack.length > 0 && out.length < 10_000) {
      const p = stack.pop()!;
      if (procField(p, 'pgid') === pgid) out.push(p);
      stack.push(...childrenOf(p));
    }
  }
  return out;
}

export function launch(opts: LaunchOptions): Promise<LaunchResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(opts.bwrap, opts.args, {
      env: opts.env,
      cwd: opts.cwd,
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    });
    let statusText = '';
    let sandboxPid: number | null = null;
    let received: NodeJS.Signals | undefined;
    const pending: NodeJS.Signals[] = [];
    let exited = false;

    const deliver = (sig: NodeJS.Signals) => {
      if (sandboxPid === null) { pending.push(sig); return; }
      // Like a terminal's Ctrl-C, every process of the command's group gets the signal once. The
      // group is shared with the sandbox's init processes, so no kill(-pgid): processes forked
      // while signalling (a shell starting its next command) are caught by a few more passes.
      const done = new Set<number>();
      let passes = 0;
      const pass = () => {
        for (const pid of foregroundProcesses(sandboxPid!, opts.viaHelper)) {
          if (done.has(pid)) continue;
          done.add(pid);
          try { process.kill(pid, sig); } catch { /* already gone */ }
        }
        if (++passes < 40 && !exited) setTimeout(pass, 25).unref();
      };
      pass();
    };
    const onSignal = (sig: NodeJS.Signals) => { received ??= sig; deliver(sig); };
    for (const s of FORWARDED) process.on(s, onSignal);
    const detach = () => { for (const s of FORWARDED) process.off(s, onSignal); };

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

    child.on('error', (err) => { detach(); reject(err); });
    child.on('close', (code, sig) => {
      exited = true;
      detach();
      const m = /"exit-code":\s*(\d+)/.exec(statusText);
      if (m) return resolve({ started: true, status: Number(m[1]), signal: received });
      if (sig) return resolve({ started: true, status: 128 + (signalNumber(sig) ?? 0), signal: received });
      resolve({ started: false, status: code ?? 125, signal: received });
    });
  });
}

function signalNumber(sig: NodeJS.Signals): number | undefined {
  return (constants.signals as Record<string, number>)[sig];
}
