// `source: { command: [...] }` (SPEC §7): a masked variable's real value comes from a command's
// stdout, run outside the sandbox before the command starts — `gh auth token`, `pass openai`.
// Fails closed: a command that is missing, exits non-zero, prints nothing or takes longer than
// the timeout stops the run with the command's own stderr in the message.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export const SOURCE_TIMEOUT_MS = 10_000;
/** A secret is small; output past this is a mistake (a command printing a whole file). */
const MAX_OUTPUT = 1 << 20;

export class SourceCommandError extends Error {}

/**
 * Every descendant of `pid`, from /proc (Linux; elsewhere none are found). The command stays in
 * srt's session (see below), so it has no process group of its own to kill; a child it started
 * (`pass` runs gpg) could otherwise hold its stdout open and outlive the timeout.
 */
function descendants(pid: number): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  for (let queue = [pid]; queue.length > 0;) {
    for (const c of children.get(queue.pop()!) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

/** `source command \`gh auth token\``, for messages. */
export function describeSource(argv: readonly string[]): string {
  return `source command \`${argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ')}\``;
}

/**
 * Run `argv` (no shell) and resolve to its trimmed stdout; rejects with SourceCommandError.
 * `program`: the file argv[0] names, already found where no sandbox may write
 * (platform/writable.ts): nothing here looks it up on PATH.
 */
export function runSourceCommand(argv: readonly string[], opts: { program: string; cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? SOURCE_TIMEOUT_MS;
  const what = describeSource(argv);
  return new Promise((resolve, reject) => {
    // Same session as srt, so a command that asks on /dev/tty (a password manager) still can.
    const child = spawn(opts.program, argv.slice(1), { argv0: argv[0]!, cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outLength = 0;
    let errLength = 0;
    let failure: string | undefined;
    const stop = (why: string) => {
      failure ??= why;
      const signal = (pid: number, sig: NodeJS.Signals) => {
        try {
          process.kill(pid, sig);
        } catch {
          // already gone
        }
      };
      // Stop the whole tree before killing any of it: a stopped process forks no more, and its
      // descendants stay its descendants (once it is gone they are re-parented, not found).
      const tree = new Set<number>();
      for (let round = 0, grew = child.pid !== undefined; grew && round < 10; round++) {
        grew = false;
        for (const pid of [child.pid!, ...descendants(child.pid!)]) {
          if (tree.has(pid)) continue;
          tree.add(pid);
          signal(pid, 'SIGSTOP');
          grew = true;
        }
      }
      for (const pid of tree) signal(pid, 'SIGKILL');
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(`did not finish within ${timeoutMs / 1000} s`), timeoutMs);
    child.stdout.on('data', (b: Buffer) => {
      outLength += b.length;
      if (outLength > MAX_OUTPUT) stop(`printed more than ${MAX_OUTPUT} bytes`);
      else out.push(b);
    });
    child.stderr.on('data', (b: Buffer) => {
      if (errLength < 4096) err.push(b);
      errLength += b.length;
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new SourceCommandError(`${what} could not be started: ${e.code === 'ENOENT' ? 'command not found' : e.message}`));
    });
    // A stopped command's pipes may still be held by a process srt could not find: stop reading.
    child.on('exit', () => {
      if (failure === undefined) return;
      child.stdout.destroy();
      child.stderr.destroy();
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString('utf8').trim().split('\n').slice(0, 5).join(' / ').slice(0, 500);
      const tail = stderr ? `: ${stderr}` : '';
      if (failure) return reject(new SourceCommandError(`${what} ${failure}${tail}`));
      if (code !== 0) return reject(new SourceCommandError(`${what} failed (${signal ? `killed by ${signal}` : `exit ${code}`})${tail}`));
      const value = Buffer.concat(out).toString('utf8').trim();
      if (value === '') return reject(new SourceCommandError(`${what} printed nothing${tail}`));
      resolve(value);
    });
  });
}
