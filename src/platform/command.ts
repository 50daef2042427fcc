// The command a run starts, checked as execvp would look for it before anything is set up.

import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { CommandSpec } from './backend.js';
import { findOnPath } from './deps.js';

/** The argv a command spec runs: a string goes to bash -c (sh -c where there is no bash). */
export function commandArgv(cmd: CommandSpec): string[] {
  if ('argv' in cmd) return cmd.argv;
  return [findOnPath('bash') ? 'bash' : 'sh', '-c', cmd.shell];
}

/** Like execvp: 127 when not found, 126 when not executable; null when it can be started. */
export function checkCommand(cmd: string, pathEnv: string, cwd: string): { status: number; message: string } | null {
  const candidates = cmd.includes('/')
    ? [isAbsolute(cmd) ? cmd : resolve(cwd, cmd)]
    : pathEnv.split(':').filter(Boolean).map((d) => join(resolve(cwd, d), cmd));
  let sawNonExec = false;
  // A path that names a directory (`srt -- /tmp`) says so, as a shell does.
  if (cmd.includes('/')) {
    try {
      if (statSync(candidates[0]!).isDirectory()) return { status: 126, message: 'is a directory' };
    } catch { /* missing or unreachable: judged below */ }
  }
  // Like a shell's PATH search: unreadable PATH entries count as "not there".
  for (const c of candidates) {
    try {
      if (statSync(c).isDirectory()) { sawNonExec = true; continue; }
    } catch {
      continue;
    }
    try {
      accessSync(c, fsConstants.X_OK);
      return null;
    } catch {
      sawNonExec = true;
    }
  }
  return sawNonExec ? { status: 126, message: 'permission denied (not executable)' } : { status: 127, message: 'command not found' };
}
