// Protected paths as patterns, for a backend that matches paths by regular expression
// (Seatbelt): every name at any depth below every write root, existing or not, so nothing needs
// a placeholder. Git internals are protected in every `.git` below a root (a repository created
// during the run included: it cannot be told apart by a pattern).

import { dirname, join, posix } from 'node:path';
import { isWithin } from '../glob.js';
import type { ProtectedRegion } from './access-rule.js';
import {
  GIT_INTERNALS, HOME_PROTECTED, HOME_PROTECTED_FILES, PROTECTED_DIR_NAMES, PROTECTED_FILE_NAMES, PROTECTED_SUFFIXES,
  USER_SETTINGS_FILES, WORKTREE_ENTRIES,
} from './protected.js';

/** GIT_INTERNALS as globs below a git dir, `worktrees` as its entries' redirecting files. */
function gitInternalGlobs(): string[] {
  return GIT_INTERNALS.flatMap((g) => (g.endsWith('worktrees') ? WORKTREE_ENTRIES.map((e) => `${g}/*/${e.name}`) : [g]));
}

export interface PatternInput {
  /** Real write roots (cwd, allowWrite, a linked worktree's git dirs), not srt's own TMPDIR. */
  roots: string[];
  cwd: string;
  home: string;
  root: string;
  managedDir: string;
  /** cwd holds a repository: `.git/HEAD`, or a `.git` file. */
  cwdIsRepository: boolean;
  /** cwd's `.git` is a file (linked worktree or submodule checkout): the pointer is protected. */
  cwdGitFile: boolean;
  worktree?: { commonDir: string; gitDir: string };
  /** Directories `core.hooksPath` names (resolved with hooksPathDir). */
  hooksDirs?: string[];
  /** A global relative one-component `core.hooksPath`: that name is protected everywhere. */
  hooksName?: string;
  /** Platform-specific entries under home (macOS: `Library/LaunchAgents`). */
  homeEntries?: string[];
}

export function protectedPatterns(input: PatternInput): ProtectedRegion[] {
  const out = new Map<string, ProtectedRegion>();
  const add = (base: string, tail: string | undefined, why: string) => {
    const key = `${base}\0${tail ?? ''}`;
    if (!out.has(key)) out.set(key, { region: tail === undefined ? { base } : { base, tail }, why });
  };
  const names = [
    ...PROTECTED_FILE_NAMES, ...PROTECTED_DIR_NAMES, ...PROTECTED_SUFFIXES.map((s) => `*${s}`),
    ...(input.hooksName ? [input.hooksName] : []),
  ];
  const linked = input.worktree && input.worktree.commonDir !== input.worktree.gitDir ? input.worktree : undefined;
  for (const r of input.roots) {
    // A linked worktree's git dirs get the git-dir entries below, not the names of a work tree.
    if (linked && (r === linked.commonDir || r === linked.gitDir)) continue;
    for (const name of names) add(r, `**/${name}`, `${name} at any depth below ${r}`);
    for (const g of gitInternalGlobs()) add(r, `**/.git/${g}`, `.git/${g} of every repository below ${r}`);
    if (isWithin(input.home, r)) {
      for (const e of [...HOME_PROTECTED, ...HOME_PROTECTED_FILES, ...(input.homeEntries ?? [])]) add(join(input.home, e), undefined, `~/${e} (the home directory is writable)`);
    }
  }
  if (linked) {
    // The main repository's git dir is writable for the worktree's commits, except what runs code
    // or redirects git, and each worktree's redirecting files.
    for (const g of gitInternalGlobs()) {
      if (g.includes('*')) add(linked.commonDir, g, `${g} of the main repository`);
      else add(join(linked.commonDir, g), undefined, `${g} of the main repository`);
    }
  }
  if (input.cwdGitFile) add(join(input.cwd, '.git'), undefined, 'the .git file of the current directory');
  else if (!input.cwdIsRepository) add(join(input.cwd, '.git'), undefined, '.git (no new repository in a directory that is not one)');
  for (const e of ['HEAD', 'objects', 'refs']) add(join(input.cwd, e), undefined, `${e} (no bare repository in the current directory)`);
  for (const dir of input.hooksDirs ?? []) {
    add(dir, undefined, `${dir} (core.hooksPath)`);
    // husky 9 points hooksPath at `.husky/_`, whose stubs run the scripts in `.husky/` itself.
    if (posix.basename(dir) === '_') add(dirname(dir), undefined, `${dirname(dir)} (core.hooksPath)`);
  }
  add(join(input.root, '.srt'), undefined, "the project's .srt settings");
  add(join(input.home, '.srt'), undefined, "srt's own settings and state");
  for (const f of USER_SETTINGS_FILES) add(join(input.home, f), undefined, "srt's user settings");
  add(input.managedDir, undefined, 'the managed settings directory');
  return [...out.values()];
}
