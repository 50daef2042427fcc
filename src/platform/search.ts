// ripgrep-backed discovery: protected paths below cwd and wrap-time expansion of read globs.
// Both are bounded in time; a search that runs out of time is an error (fail closed).

import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { globBase, globToRegExp } from '../glob.js';
import type { Landing } from '../profiles/bwrap.js';
import { protectedSearchArgs, type GitFile } from '../profiles/protected.js';
import { findSystemTool } from './deps.js';
import { resolveLanding } from './landing.js';

const SEARCH_TIMEOUT_MS = 10_000;
const MAX_OUTPUT = 64 * 1024 * 1024;

export class SearchError extends Error {}

interface RgResult { files: string[]; timedOut: boolean }

function rg(args: string[], cwd: string): Promise<RgResult> {
  const bin = findSystemTool('rg');
  if (!bin) return Promise.reject(new SearchError('ripgrep (rg) is not installed; srt needs it to find protected paths (apt-get install ripgrep)'));
  return new Promise((resolvePromise, reject) => {
    execFile(bin, args, { cwd, timeout: SEARCH_TIMEOUT_MS, maxBuffer: MAX_OUTPUT, killSignal: 'SIGKILL' }, (err, stdout) => {
      const files = stdout.split('\n').filter(Boolean);
      if (!err) return resolvePromise({ files, timedOut: false });
      const e = err as Omit<NodeJS.ErrnoException, 'code'> & { killed?: boolean; code?: number | string };
      if (e.killed) return resolvePromise({ files, timedOut: true });
      // rg exits 1 when nothing matched and 2 on partial errors (unreadable dirs): keep what it found.
      if (e.code === 1 || e.code === 2) return resolvePromise({ files, timedOut: false });
      reject(new SearchError(`ripgrep failed: ${e.message}`));
    });
  });
}

/** Parse a `.git` file (`gitdir: X`) and its git dir's `commondir`. */
export function readGitFile(file: string): GitFile | null {
  try {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(file, 'utf8'));
    if (!m) return null;
    const gitDir = resolve(dirname(file), m[1]!);
    let commonDir = gitDir;
    try {
      commonDir = resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim());
    } catch { /* a submodule: no commondir */ }
    let worktreeDirs: string[] = [];
    if (commonDir !== gitDir) {
      try {
        worktreeDirs = readdirSync(join(commonDir, 'worktrees'), { withFileTypes: true })
          .filter((e) => e.isDirectory()).map((e) => join(commonDir, 'worktrees', e.name));
      } catch { /* none */ }
    }
    return { file, gitDir, commonDir, worktreeDirs };
  } catch {
    return null;
  }
}

export interface ProtectedScan { found: string[]; gitFiles: GitFile[] }

export async function scanProtected(cwd: string, depth: number): Promise<ProtectedScan> {
  const { files, timedOut } = await rg(protectedSearchArgs(depth), cwd);
  // Fail closed: an incomplete search would leave protected paths writable.
  if (timedOut) {
    throw new SearchError(`the protected-path search below ${cwd} did not finish within ${SEARCH_TIMEOUT_MS / 1000}s; run srt from a smaller directory or lower mandatoryDenySearchDepth in your user settings`);
  }
  const found = files.map((f) => f.replace(/^\.\//, ''));
  const gitFiles: GitFile[] = [];
  const candidates = new Set([join(cwd, '.git'), ...found.filter((f) => f === '.git' || f.endsWith('/.git')).map((f) => join(cwd, f))]);
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue;
    } catch { continue; }
    const g = readGitFile(file);
    if (g) gitFiles.push(g);
  }
  return { found, gitFiles };
}

/**
 * Existing paths matching an absolute glob, as landings. rg lists files only, so a directory
 * matches through a file inside it (an empty directory matching a glob is not found).
 */
export async function expandGlob(glob: string): Promise<Landing[]> {
  const base = globBase(glob);
  try {
    if (!statSync(base).isDirectory()) return [];
  } catch {
    return [];
  }
  // ripgrep's globs also know `{a,b}` and `\` escapes, which srt's do not: escape them so rg
  // lists a superset and globToRegExp alone decides what matches.
  const rel = relative(base, glob).replace(/[{}\\]/g, '\\$&');
  const { files, timedOut } = await rg(['--files', '--hidden', '--no-ignore', '--no-config', '--no-messages', '--no-follow',
    '-g', `/${rel}`, '-g', `/${rel}/**`], base);
  // Fail closed: a partly expanded deny glob would leave some matches uncovered.
  if (timedOut) throw new SearchError(`expanding ${glob} did not finish within ${SEARCH_TIMEOUT_MS / 1000}s; use a narrower glob`);
  const re = globToRegExp(glob);
  const seen = new Set<string>();
  const matches: Landing[] = [];
  for (const f of files) {
    const abs = join(base, f);
    // The shallowest prefix that matches is the entry (a directory hides everything below it).
    let hit: string | null = null;
    for (let p = abs; p.length > base.length; p = dirname(p)) if (re.test(p)) hit = p;
    if (hit && !seen.has(hit)) {
      seen.add(hit);
      matches.push(resolveLanding(hit));
    }
  }
  return matches;
}
