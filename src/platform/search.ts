// ripgrep-backed discovery: protected paths below cwd and wrap-time expansion of read globs.
// Both are bounded in time; a search that runs out of time is an error (fail closed).

import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { globToRegExp, isGlob } from '../glob.js';
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

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
const MAX_GLOB_ENTRIES = 2_000_000;

/**
 * Existing paths matching an absolute glob, as landings: files, directories (an empty one too)
 * and symlinks (a link whose name matches is covered where it leads). Walked directory by
 * directory with names kept as bytes: a name that is not valid UTF-8 cannot be handed to
 * bubblewrap, so the directories holding such a name that could match are returned apart
 * (`undecodable`): a deny rule covers them whole, an allow rule never opens them. Bounded in
 * time and entries (fail closed).
 */
export function expandGlob(glob: string): { matches: Landing[]; undecodable: Landing[] } {
  const segs = glob.split('/').filter(Boolean);
  const first = segs.findIndex(isGlob);
  const base = '/' + segs.slice(0, first < 0 ? segs.length : first).join('/');
  const patterns = segs.map((s) => (s === '**' ? null : globToRegExp(s)));
  const deadline = Date.now() + SEARCH_TIMEOUT_MS;
  const matched = new Set<string>();
  const undecodable = new Set<string>();
  const seen = new Set<string>();
  let entries = 0;

  const visit = (dir: string, i: number): void => {
    const key = `${i}\0${dir}`;
    if (seen.has(key) || matched.has(dir)) return;
    seen.add(key);
    if (Date.now() > deadline || entries > MAX_GLOB_ENTRIES) {
      throw new SearchError(`expanding ${glob} did not finish within ${SEARCH_TIMEOUT_MS / 1000}s; use a narrower glob`);
    }
    let list;
    try {
      list = readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
    } catch {
      return; // unreadable to srt, so to the command (same user, no capabilities) too
    }
    entries += list.length;
    const last = i === segs.length - 1;
    const pattern = patterns[i];
    if (pattern === null && !last) visit(dir, i + 1); // `**` matching no directory
    for (const entry of list) {
      let name: string;
      try {
        name = STRICT_UTF8.decode(entry.name);
      } catch {
        // It could match here, or (a directory) lead to a match below.
        const could = pattern === null || pattern.test(entry.name.toString('utf8'));
        if (could && (last || entry.isDirectory())) undecodable.add(dir);
        continue;
      }
      const path = join(dir, name);
      const isDir = entry.isDirectory(); // a symlink is not descended into, but may match
      if (pattern === null) {
        if (last) matched.add(path);
        else if (isDir) visit(path, i);
      } else if (pattern.test(name)) {
        if (last) matched.add(path);
        else if (isDir) visit(path, i + 1);
      }
    }
  };
  if (first >= 0) {
    try {
      if (statSync(base).isDirectory()) visit(base, first);
    } catch { /* no base: nothing matches */ }
  }
  // The shallowest match wins: a matched directory hides everything below it.
  const all = [...matched].sort();
  const shallow = all.filter((p) => !all.some((q) => q !== p && p.startsWith(q + '/')));
  return { matches: shallow.map(resolveLanding), undecodable: [...undecodable].map(resolveLanding) };
}
