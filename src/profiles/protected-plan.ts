// The protected paths of one run (the plan for bwrap: paths, not patterns): from what the
// searches found below each writable root, the paths bound read-only (or kept uncreatable) and
// the supervisor's name rules. The names themselves are in protected.ts.

import { basename, dirname, isAbsolute, join, posix } from 'node:path';
import { isWithin } from '../glob.js';
import {
  GIT_DIR_ENTRIES, GIT_INTERNALS, HOME_PROTECTED, HOME_PROTECTED_FILES, hooksPathDir, isProtectedDirName,
  isProtectedFileName, PROTECTED_DIR_NAMES, PROTECTED_FILE_NAMES, PROTECTED_SUFFIXES, REPOSITORY_MARKERS,
  USER_SETTINGS_FILES, WORKTREE_ENTRIES, type ProtectedTarget,
} from './protected.js';
import type { SupervisorRules } from './supervisor.js';

/** A `.git` *file* (linked worktree or submodule checkout) and the git dirs it points to. */
export interface GitFile {
  file: string;
  /** The per-checkout git dir named by `gitdir:`. */
  gitDir: string;
  /** The shared git dir (`commondir`), equal to gitDir for submodules. */
  commonDir: string;
  /** For a linked worktree: every `<commonDir>/worktrees/<name>` dir that exists. */
  worktreeDirs: string[];
}

/** What the searches found below one writable root. */
export interface RootScan {
  /** The root (where it lands, symlinks resolved). */
  root: string;
  /** Paths relative to root listed by the file search (`protectedSearchArgs`). */
  found: string[];
  /** Symlinks with a protected name (relative to root), as `isProtectedLink` tells. */
  links: string[];
  /** `.git` files found below the root, already read. */
  gitFiles: GitFile[];
  /**
   * Every git dir found below the root (relative, `.` for the root itself), whatever its name: a
   * HEAD with objects/ and refs/ beside it (a `.git`, a submodule's, a bare repository).
   */
  gitDirs: string[];
  /** The root lies in a repository (a work tree or a git dir holds it). */
  inRepo: boolean;
  /** The root is itself a git dir (a linked worktree's main `.git`). */
  isGitDir?: boolean;
  /**
   * Directories the search could not list that the command could get into (its own, to chmod
   * open; one it may pass through): what they hold is unknown, so they are kept read-only whole.
   */
  shut?: string[];
}

/** A repository found, with the `core.hooksPath` its own config names (unresolved). */
export interface RepoHooks {
  /** The work tree's top (for a relative hooksPath). */
  workTree: string;
  hooksPath: string;
}

export interface ProtectedInput {
  roots: RootScan[];
  home: string;
  /** The git work-tree top holding cwd, else cwd (the project's `.srt/` lives there). */
  projectRoot: string;
  depth: number;
  managedDir: string;
  /** core.hooksPath of each repository found. */
  repoHooks: RepoHooks[];
  /** core.hooksPath of the user's global and the system config, if set. */
  globalHooksPath?: string;
  /** Every repository work tree found (a relative global hooksPath applies in each). */
  workTrees: string[];
  /** srt's own files (src/platform/self.ts): protected where a writable root holds them. */
  srtFiles?: { path: string; kind: 'file' | 'dir' }[];
}

export interface ProtectedPlan {
  /** Paths bound read-only when they exist; without the supervisor, missing ones get placeholders. */
  targets: ProtectedTarget[];
  rules: SupervisorRules;
  /** A writable root holds the home directory. */
  homeWritable: boolean;
}

/** The GIT_DIR_ENTRIES of one git dir (the submodules' are found as git dirs of their own). */
function gitDirTargets(gitDir: string, worktrees: 'whole' | 'entries' = 'whole'): ProtectedTarget[] {
  // A linked worktree writes its index and HEAD under `worktrees/<name>`, so there only each
  // entry's redirecting files are protected (see worktreeGitDirTargets); elsewhere the whole dir.
  return GIT_DIR_ENTRIES.filter((e) => worktrees === 'whole' || e.name !== 'worktrees')
    .map((e) => ({ path: join(gitDir, e.name), kind: e.kind, ...(e.ifExists ? { ifExists: true as const } : {}) }));
}

/** The redirecting files of a linked worktree's own git dir (`<main>/.git/worktrees/<name>`). */
function worktreeGitDirTargets(gitDir: string): ProtectedTarget[] {
  return WORKTREE_ENTRIES.map((e) => ({ path: join(gitDir, e.name), kind: 'file', ...(e.ifExists ? { ifExists: true as const } : {}) }));
}


/** Adds a target; the first reason a path is protected is the one kept. */
type Add = (t: ProtectedTarget) => void;

export function protectedPlan(input: ProtectedInput): ProtectedPlan {
  const out = new Map<string, ProtectedTarget>();
  const add: Add = (t) => { if (!out.has(t.path)) out.set(t.path, t); };
  const exempt: string[] = [];
  for (const scan of input.roots) {
    rootTop(scan, add);
    foundTargets(scan, input.depth, add);
    gitDirsFound(scan, add);
    linkTargets(scan, input.depth, add);
    for (const rel of scan.shut ?? []) add({ path: join(scan.root, ...segments(rel)), kind: 'dir', why: 'a directory srt cannot list, which the command could open up' });
    exempt.push(...gitFileTargets(scan, input.depth, add));
  }
  const names = hooksTargets(input, add);
  const homeWritable = ownTargets(input, add);
  return {
    targets: [...out.values()],
    homeWritable,
    rules: {
      names,
      suffixes: [...PROTECTED_SUFFIXES],
      gitInternals: [...GIT_INTERNALS],
      exempt,
      markers: [...REPOSITORY_MARKERS],
    },
  };
}

/** Every name, existing or not, at the top of each root and of each nested repository: that is
 *  where editors, git and agents look for them. Deeper, existing ones are found and kept; the
 *  supervisor refuses new ones at any depth. */
function projectTop(dir: string, add: Add): void {
  for (const name of PROTECTED_FILE_NAMES) add({ path: join(dir, name), kind: 'file' });
  for (const name of PROTECTED_DIR_NAMES) add({ path: join(dir, name), kind: 'dir' });
}

/** The root's own names, and its git dir, or what keeps a repository from being made there. */
function rootTop(scan: RootScan, add: Add): void {
  const { root } = scan;
  if (!scan.isGitDir) projectTop(root, add);
  const rootGitFile = scan.gitFiles.find((g) => g.file === join(root, '.git'));
  if (scan.found.includes('.git/HEAD')) {
    for (const t of gitDirTargets(join(root, '.git'))) add(t);
  } else if (!scan.inRepo && !rootGitFile && !scan.isGitDir && !scan.gitDirs.includes('.')) {
    // Not in a repository: no bare repository at the top (HEAD, objects/, refs/ and config
    // stay uncreatable; while one of them is missing the top is no git dir). A `.git` made
    // there is a new repository, reviewed when the run ends; without the supervisor, which
    // cannot tell a new repository's internals from an old one's, `.git` stays uncreatable.
    // An empty `.git` there is another run's placeholder and must not be filled with
    // placeholders of our own (that would keep it from ever being removed).
    add({ path: join(root, '.git'), kind: 'dir', fallbackOnly: true });
    add({ path: join(root, 'HEAD'), kind: 'file', ifMissing: true });
    add({ path: join(root, 'objects'), kind: 'dir', ifMissing: true });
    add({ path: join(root, 'refs'), kind: 'dir', ifMissing: true });
    add({ path: join(root, 'config'), kind: 'file', ifMissing: true });
  }
}

const segments = (rel: string) => rel.split('/').filter((s) => s !== '' && s !== '.');

/** Nested finds: these exist, so they are kept where they are. */
function foundTargets({ root, found }: RootScan, depth: number, add: Add): void {
  for (const rel of found) {
    const segs = segments(rel);
    const last = segs.length - 1;
    if (last < 0) continue;
    if (isProtectedFileName(segs[last]!) && last <= depth) add({ path: join(root, ...segs), kind: 'file' });
    const dirIdx = segs.findIndex(isProtectedDirName);
    if (dirIdx >= 0 && dirIdx < last && dirIdx <= depth) add({ path: join(root, ...segs.slice(0, dirIdx + 1)), kind: 'dir' });
    const gitIdx = segs.indexOf('.git');
    if (gitIdx >= 0 && gitIdx <= depth && gitIdx < last && segs[last] === 'HEAD' && last === gitIdx + 1) {
      for (const t of gitDirTargets(join(root, ...segs.slice(0, gitIdx + 1)))) add(t);
      projectTop(join(root, ...segs.slice(0, gitIdx)), add);
    }
  }
}

/** Every other git dir (a submodule's in .git/modules/, a bare repository at any depth the
 *  search reached) is a repository too: its hooks and config run code. */
function gitDirsFound(scan: RootScan, add: Add): void {
  for (const rel of scan.gitDirs) {
    const segs = segments(rel);
    // A linked worktree's main git dir is planned from its `.git` file (gitFileTargets).
    if (segs.at(-1) === '.git' || (scan.isGitDir && segs.length === 0)) continue;
    const inGit = segs.includes('.git') || scan.isGitDir;
    for (const t of gitDirTargets(join(scan.root, ...segs))) add(inGit ? t : { ...t, why: `in the bare repository ${join(scan.root, ...segs)}` });
  }
}

/** Symlinks with a protected name: the link is protected (the supervisor refuses removing or
 *  replacing it) and so is where it points (bound read-only through it). A `.git` link is a
 *  repository whose git dir is elsewhere. */
function linkTargets({ root, links }: RootScan, depth: number, add: Add): void {
  for (const rel of links) {
    const segs = segments(rel);
    const name = segs.at(-1);
    if (!name || segs.length - 1 > depth + 1) continue;
    const path = join(root, ...segs);
    const inGit = segs.length >= 2 && segs.at(-2) === '.git';
    if (name === '.git') {
      for (const t of gitDirTargets(path)) add(t);
      projectTop(dirname(path), add);
    } else if (inGit && ['hooks', 'config', 'commondir'].includes(name)) {
      add({ path, kind: name === 'hooks' ? 'dir' : 'file' });
    } else if (isProtectedDirName(name)) {
      add({ path, kind: 'dir' });
    } else if (isProtectedFileName(name)) {
      add({ path, kind: 'file' });
    }
  }
}

/** `.git` files: the pointer itself (rewriting it would redirect git to attacker hooks) and the
 *  hooks/config of the git dirs it names. For a linked worktree the main repository's .git is a
 *  writable root of its own; these stay read-only inside it, and the worktree's own git dir may
 *  be written (index, HEAD) but for its redirecting files. Returns that git dir when the root is
 *  the worktree (exempt from the supervisor's git-internal rules). */
function gitFileTargets({ root, gitFiles }: RootScan, depth: number, add: Add): string[] {
  const exempt: string[] = [];
  for (const g of gitFiles) {
    const segs = posix.relative(root, g.file).split('/');
    if (g.file !== join(root, '.git') && (segs[0] === '..' || segs.length - 1 > depth)) continue;
    add({ path: g.file, kind: 'file' });
    projectTop(dirname(g.file), add);
    const linked = g.gitDir !== g.commonDir;
    for (const t of gitDirTargets(g.commonDir, linked ? 'entries' : 'whole')) add(t);
    if (linked) {
      for (const dir of new Set([g.gitDir, ...g.worktreeDirs])) for (const t of worktreeGitDirTargets(dir)) add(t);
      if (g.file === join(root, '.git')) exempt.push(g.gitDir);
    }
  }
  return exempt;
}

/** The directories `core.hooksPath` names; returns the supervisor's names with a global
 *  relative one-component hooksPath among them. */
function hooksTargets(input: ProtectedInput, add: Add): string[] {
  const hooksFor = (value: string, workTree: string) => {
    const dir = hooksPathDir(value, workTree, input.home);
    add({ path: dir, kind: 'dir' });
    // husky 9 points hooksPath at `.husky/_`, whose stubs run the scripts in `.husky/` itself.
    if (posix.basename(dir) === '_') add({ path: dirname(dir), kind: 'dir' });
  };
  for (const r of input.repoHooks) hooksFor(r.hooksPath, r.workTree);
  const names: string[] = [...PROTECTED_FILE_NAMES, ...PROTECTED_DIR_NAMES];
  if (input.globalHooksPath !== undefined) {
    const v = input.globalHooksPath;
    // Relative: it means that directory in every repository; a one-component name is simply
    // protected wherever it appears, like `.vscode`.
    if (!isAbsolute(v) && !v.startsWith('~') && !v.includes('/') && v !== '.' && v !== '..') names.push(v);
    if (isAbsolute(v) || v.startsWith('~')) hooksFor(v, input.home);
    else for (const wt of input.workTrees) hooksFor(v, wt);
  }
  return names;
}

/** srt's settings and files, and the home directory's entries when a writable root holds it
 *  (returned: whether one does). */
function ownTargets(input: ProtectedInput, add: Add): boolean {
  const { home } = input;
  add({ path: join(input.projectRoot, '.srt'), kind: 'dir' });
  add({ path: join(home, '.srt'), kind: 'dir' });
  for (const f of USER_SETTINGS_FILES) add({ path: join(home, f), kind: 'file' });
  add({ path: input.managedDir, kind: 'dir' });
  const homeWritable = input.roots.some((s) => isWithin(home, s.root));
  if (homeWritable) {
    for (const p of HOME_PROTECTED) add({ path: join(home, p), kind: 'dir' });
    for (const p of HOME_PROTECTED_FILES) add({ path: join(home, p), kind: 'file' });
  }
  // What the next srt runs outside any sandbox (its launcher, node, package, dependencies).
  for (const f of input.srtFiles ?? []) {
    if (input.roots.some((s) => isWithin(f.path, s.root))) add({ path: f.path, kind: f.kind, ifExists: true });
  }
  return homeWritable;
}

/**
 * One line per reason for what is protected for what it is or where it lands (srt doctor,
 * --dry-run): `/r/remote.git/{config,hooks} (in the bare repository /r/remote.git)`. `real`: where
 * a target lands.
 */
export function landedLines(targets: ProtectedTarget[], real: (t: ProtectedTarget) => string): string[] {
  const byWhy = new Map<string, string[]>();
  for (const t of targets) {
    if (t.why === undefined) continue;
    const paths = byWhy.get(t.why) ?? [];
    if (!byWhy.has(t.why)) byWhy.set(t.why, paths);
    paths.push(real(t));
  }
  return [...byWhy].map(([why, paths]) => {
    const dir = dirname(paths[0]!);
    const shown = paths.length === 1 ? paths[0]! : paths.every((p) => dirname(p) === dir)
      ? `${dir === '/' ? '' : dir}/{${paths.map((p) => basename(p)).join(',')}}` : paths.join(', ');
    return `${shown} (${why})`;
  });
}
