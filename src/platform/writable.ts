// What a sandboxed command can change on the host, for the decisions that must not trust what it
// could have put there (SPEC §10, invariant 13): the writable roots of a policy where they land,
// whether a path lies inside one, and whether the command could actually change that path.

import { accessSync, constants, lstatSync, statSync, type Stats } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { Policy } from '../policy.js';
import { isWithin } from '../glob.js';
import { writeRootsOf } from '../profiles/write-roots.js';
import { resolveLanding } from './landing.js';
import { sandboxMay } from './reach.js';
import { readGitFile } from './search.js';

/** The roots a run of `policy` binds read-write (cwd, allowWrite, a linked worktree's git dirs), real paths. */
export function writableRoots(policy: Policy): string[] {
  const g = readGitFile(join(policy.cwd, '.git'));
  const worktree = g && g.commonDir !== g.gitDir ? { commonDir: g.commonDir, gitDir: g.gitDir } : undefined;
  return writeRootsOf(policy, resolveLanding, worktree).roots.map((r) => r.region.base);
}

/** Does `path`, where it lands (symlinks followed), lie inside one of `roots`? */
export function insideWritable(path: string, roots: readonly string[]): boolean {
  const real = resolveLanding(path).real;
  return roots.some((r) => isWithin(real, r) || isWithin(path, r));
}

/**
 * Could the command change `path` (inside `roots`)? It could write the file itself, or replace it
 * (or a directory above it, up to the writable root) through a directory it may write — unless
 * that directory is sticky and the entry is not the caller's. A root-owned checkout under a
 * writable /tmp is out of an unprivileged command's reach: nothing to warn about.
 * `land`: where a directory lands (a sandbox's kept landings; else resolved now).
 */
export function sandboxMayChange(path: string, roots: readonly string[], land: (dir: string) => string = (d) => resolveLanding(d).real): boolean {
  const real = join(land(dirname(path)), basename(path));
  const root = roots.filter((r) => isWithin(real, r)).sort((a, b) => b.length - a.length)[0];
  if (root === undefined) return false;
  const st = (p: string): Stats | undefined => {
    try { return lstatSync(p); } catch { return undefined; }
  };
  // A symlink's own mode means nothing: it is replaced through its directory.
  const self = st(real);
  if (self && !self.isSymbolicLink() && sandboxMay(self, 'w')) return true;
  const uid = process.getuid?.();
  const parts = relative(root, real).split(sep).filter(Boolean);
  for (let i = parts.length; i >= 1; i--) {
    const entry = join(root, ...parts.slice(0, i));
    const dir = st(dirname(entry));
    if (!dir || !sandboxMay(dir, 'w')) continue;
    const sticky = (dir.mode & 0o1000) !== 0;
    if (!sticky || dir.uid === uid || st(entry)?.uid === uid) return true;
  }
  return false;
}

/** The directories of `pathEnv` the command could not have filled: absolute, and outside every root. */
export function pathOutside(pathEnv: string, roots: readonly string[]): string[] {
  return [...new Set(pathEnv.split(delimiter))].filter((d) => isAbsolute(d) && !insideWritable(d, roots));
}

/**
 * A program to start outside the sandbox, found as execvp would (`name` on PATH, or a path), but
 * never where the command may write: a `node_modules/.bin/gh` that `npm run` puts first on PATH
 * is passed over for the next `gh` on PATH. `refused` names what was passed over when nothing
 * else was found.
 */
export function findOutside(name: string, pathEnv: string, roots: readonly string[]): { path: string } | { refused: string[] } {
  const runnable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  const candidates = name.includes('/') ? [name] : pathEnv.split(delimiter).filter(Boolean).map((d) => join(d, name));
  const refused: string[] = [];
  for (const c of candidates) {
    if (!runnable(c)) continue;
    if (!isAbsolute(c) || insideWritable(c, roots)) refused.push(c);
    else return { path: c };
  }
  return { refused };
}
