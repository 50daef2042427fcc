// Protected paths (SPEC §3, invariant 10): write-denied whatever the settings say, in every
// writable root. The principle: anything a host program runs or obeys later without asking
// (shells, git, editors, AI agents, srt itself). This module is the pure plan: which searches
// find them, which paths follow from what was found, and the rules the seccomp supervisor
// (init/supervisor.c) applies at any depth. The platform side (src/platform/search.ts) runs
// the searches and reads git's pointer files and configs.

import { basename, dirname, isAbsolute, join, posix, resolve } from 'node:path';
import { isWithin } from '../glob.js';
import type { ProtectedRegion } from './access.js';

export const PROTECTED_FILE_NAMES = [
  '.bashrc', '.bash_profile', '.bash_login', '.bash_logout', '.zshrc', '.zshenv', '.zprofile', '.zlogin',
  '.profile', '.gitconfig', '.gitmodules', '.ripgreprc', '.mcp.json', '.pre-commit-config.yaml',
  // Other agents' project configuration: it names commands and servers they start.
  'opencode.json',
  // Beyond SPEC §3: Debian's and Ubuntu's default ~/.bashrc runs it; opencode reads either spelling.
  '.bash_aliases', 'opencode.jsonc',
] as const;
/** Names protected by their ending (`*.code-workspace`). */
export const PROTECTED_SUFFIXES = ['.code-workspace'] as const;
export const PROTECTED_DIR_NAMES = [
  '.vscode', '.idea', '.claude', '.cursor', '.devcontainer', '.zed', '.srt',
  // Other agents' and tools' project configuration (hooks, MCP servers, commands they run).
  '.gemini', '.codex', '.amazonq', '.roo', '.kiro', '.continue', '.windsurf',
  // Beyond SPEC §3: opencode loads plugins (code) from here.
  '.opencode',
] as const;
/**
 * The entries of a git dir that run code or redirect git to code: hooks, the config
 * (core.hooksPath, core.fsmonitor, filters, …), `commondir` (points git at another directory's
 * config and hooks), `worktrees/` (each linked worktree's `commondir` and `gitdir` do the same).
 * `commondir` is kept only where it exists: an empty placeholder would break every git command.
 */
export const GIT_DIR_ENTRIES: readonly { name: string; kind: 'file' | 'dir'; ifExists?: true }[] = [
  { name: 'config', kind: 'file' },
  { name: 'config.worktree', kind: 'file' },
  { name: 'commondir', kind: 'file', ifExists: true },
  { name: 'hooks', kind: 'dir' },
  { name: 'worktrees', kind: 'dir' },
];
/**
 * Inside a repository's git dir that existed before the run (relative, `**` = one or more
 * components): GIT_DIR_ENTRIES, and the same inside every submodule's git dir.
 */
export const GIT_INTERNALS: readonly string[] = [
  ...GIT_DIR_ENTRIES.map((e) => e.name),
  ...GIT_DIR_ENTRIES.map((e) => `modules/**/${e.name}`),
];
/** Below the home directory, when a writable root holds it. */
export const HOME_PROTECTED = ['.config/git', '.ssh', '.local/bin', '.config/systemd/user', '.config/autostart', '.claude', '.cursor'] as const;
/**
 * What a tool runs later from its cache without asking, wherever a writable root holds it: npx
 * runs the package `_npx/` holds (MCP hosts start servers with `npx -y`), `pnpm dlx` its `dlx/`.
 * The rest of a cache is not protected (npm rewrites its index on every install).
 */
export const TOOL_RUN_DIRS = ['.npm/_npx', '.cache/pnpm/dlx'] as const;
/** Files below the home directory, when a writable root holds it (Claude Code's user config: MCP servers, hooks). */
export const HOME_PROTECTED_FILES = ['.claude.json'] as const;
/** srt's own user settings in the reference tool's location (SPEC §2.1), in every spelling. */
export const USER_SETTINGS_FILES = ['.srt-settings.json', '.srt-settings.yaml', '.srt-settings.yml'] as const;
/** The managed settings directory on Linux (SPEC §2.1), protected in every run. */
export const MANAGED_DIR = '/etc/srt';
/** Names whose creation means a new repository (a `.git`, a bare repository's `HEAD`). */
export const REPOSITORY_MARKERS = ['.git', 'HEAD'] as const;

export interface ProtectedTarget {
  path: string;
  kind: 'file' | 'dir';
  /**
   * Masked only when it exists: an empty placeholder would itself break git (an empty
   * `commondir` makes every git command fail). Without the supervisor, srt removes it after the
   * run if the command created it (the supervisor simply refuses to create it).
   */
  ifExists?: true;
  /** Protected only where it is missing: it must stay uncreatable, an existing one is left as is. */
  ifMissing?: true;
  /** Only without the supervisor (placeholders), which keeps the stricter rules of names alone. */
  fallbackOnly?: true;
  /**
   * Protected for what it is or where something lands rather than by its name (SPEC §3), for
   * srt doctor and --dry-run: `the target of ~/.bashrc`, `include.path of ~/.gitconfig`, `in the
   * bare repository …`.
   */
  why?: string;
}

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

/** The supervisor's name rules (see init/supervisor.c); roots and paths come from the mounts plan. */
export interface SupervisorRules {
  names: string[];
  suffixes: string[];
  gitInternals: string[];
  /** Exempt from the git-internal rules: a linked worktree's own git dir. */
  exempt: string[];
  markers: string[];
}

export interface ProtectedPlan {
  /** Paths bound read-only when they exist; without the supervisor, missing ones get placeholders. */
  targets: ProtectedTarget[];
  rules: SupervisorRules;
  /** A writable root holds the home directory. */
  homeWritable: boolean;
}

/**
 * ripgrep arguments listing every file that reveals a protected path down to `depth` directories
 * below a root. `rg --files` lists files only (no directories, no symlinks), so directories are
 * found through a file inside them (a repository through `.git/HEAD`); symlinks come from
 * `isProtectedLink`.
 */
export function protectedSearchArgs(depth: number): string[] {
  const globs = [
    ...PROTECTED_FILE_NAMES,
    ...PROTECTED_SUFFIXES.map((s) => `*${s}`),
    ...PROTECTED_DIR_NAMES.map((d) => `**/${d}/**`),
    // Every git dir, whatever its name (told apart from logs/HEAD by objects/ and refs/ beside it).
    'HEAD',
    '.git',
  ];
  // A repository at depth d shows up as d/.git/HEAD, two levels further down.
  return ['--files', '--hidden', '--no-ignore', '--no-config', '--no-messages', '--no-follow',
    '--max-depth', String(depth + 2), ...globs.flatMap((g) => ['-g', g])];
}

/**
 * The same search as one walk of srt-init (`--list-protected`, init/listing.c) in the current
 * directory: regular files with these names or endings, or below a directory of these names, to
 * depth+2, and every symlink (isProtectedLink picks them).
 */
export function protectedListArgs(depth: number): string[] {
  return ['--list-protected', String(depth + 2),
    ...[...PROTECTED_FILE_NAMES, 'HEAD', '.git'].flatMap((n) => ['-f', n]),
    ...PROTECTED_SUFFIXES.flatMap((s) => ['-s', s]),
    ...PROTECTED_DIR_NAMES.flatMap((d) => ['-d', d])];
}

/** Names (and `*.suffix` patterns) of symlinks that stand for a protected path. */
export function protectedLinkNames(): string[] {
  return [...PROTECTED_FILE_NAMES, ...PROTECTED_SUFFIXES.map((s) => `*${s}`), ...PROTECTED_DIR_NAMES, '.git', 'hooks', 'config', 'commondir'];
}

/** Git-dir entries a symlink stands for only inside a `.git` (`x/.git/hooks`). */
const GIT_LINK_NAMES: readonly string[] = ['hooks', 'config', 'commondir'];
const LINK_NAMES: ReadonlySet<string> = new Set(protectedLinkNames().filter((n) => !n.startsWith('*') && !GIT_LINK_NAMES.includes(n)));

/**
 * Does a symlink at `rel` (relative to a root, `/`-separated) stand for a protected path? The
 * symlinks of a tree are listed whole and matched here: forty name tests per entry in find(1)
 * cost 0.4 s in a 100k-file tree, the listing alone 0.05 s. A suffix also matches the bare
 * suffix (`.code-workspace`), as find's `-name '*.code-workspace'` does.
 */
export function isProtectedLink(rel: string): boolean {
  const parts = rel.split('/');
  const name = parts[parts.length - 1]!;
  if (LINK_NAMES.has(name) || PROTECTED_SUFFIXES.some((s) => name.endsWith(s))) return true;
  return GIT_LINK_NAMES.includes(name) && parts[parts.length - 2] === '.git';
}

const isFileName = (n: string) => (PROTECTED_FILE_NAMES as readonly string[]).includes(n) || PROTECTED_SUFFIXES.some((s) => n.endsWith(s) && n.length > s.length);
const isDirName = (n: string) => (PROTECTED_DIR_NAMES as readonly string[]).includes(n);

/** Is `p` equal to or below `base`? */
function within(p: string, base: string): boolean {
  return p === base || base === '/' || p.startsWith(base + '/');
}

/** The GIT_DIR_ENTRIES of one git dir (the submodules' are found as git dirs of their own). */
export function gitDirTargets(gitDir: string, worktrees: 'whole' | 'entries' = 'whole'): ProtectedTarget[] {
  // A linked worktree writes its index and HEAD under `worktrees/<name>`, so there only each
  // entry's redirecting files are protected (see worktreeGitDirTargets); elsewhere the whole dir.
  return GIT_DIR_ENTRIES.filter((e) => worktrees === 'whole' || e.name !== 'worktrees')
    .map((e) => ({ path: join(gitDir, e.name), kind: e.kind, ...(e.ifExists ? { ifExists: true as const } : {}) }));
}

/** The redirecting files of a linked worktree's own git dir (`<main>/.git/worktrees/<name>`). */
function worktreeGitDirTargets(gitDir: string): ProtectedTarget[] {
  return [
    { path: join(gitDir, 'commondir'), kind: 'file', ifExists: true },
    { path: join(gitDir, 'gitdir'), kind: 'file', ifExists: true },
    { path: join(gitDir, 'config.worktree'), kind: 'file' },
  ];
}

/** Where a `core.hooksPath` value points (git: relative to the work tree's top, `~` expanded). */
export function hooksPathDir(value: string, workTree: string, home: string): string {
  if (value === '~' || value.startsWith('~/')) return join(home, value.slice(1));
  return isAbsolute(value) ? resolve(value) : resolve(workTree, value);
}

export function protectedPlan(input: ProtectedInput): ProtectedPlan {
  const { depth, home } = input;
  const out = new Map<string, ProtectedTarget>();
  const add = (t: ProtectedTarget) => { if (!out.has(t.path)) out.set(t.path, t); };
  // Every name, existing or not, at the top of each root and of each nested repository: that is
  // where editors, git and agents look for them. Deeper, existing ones are found and kept; the
  // supervisor refuses new ones at any depth.
  const projectTop = (dir: string) => {
    for (const name of PROTECTED_FILE_NAMES) add({ path: join(dir, name), kind: 'file' });
    for (const name of PROTECTED_DIR_NAMES) add({ path: join(dir, name), kind: 'dir' });
  };
  const hooksFor = (value: string, workTree: string) => {
    const dir = hooksPathDir(value, workTree, home);
    add({ path: dir, kind: 'dir' });
    // husky 9 points hooksPath at `.husky/_`, whose stubs run the scripts in `.husky/` itself.
    if (posix.basename(dir) === '_') add({ path: dirname(dir), kind: 'dir' });
  };
  const exempt: string[] = [];

  for (const scan of input.roots) {
    const { root } = scan;
    if (!scan.isGitDir) projectTop(root);
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
    // Nested finds: these exist, so they are kept where they are.
    for (const rel of scan.found) {
      const segs = rel.split('/').filter((s) => s !== '' && s !== '.');
      const last = segs.length - 1;
      if (last < 0) continue;
      if (isFileName(segs[last]!) && last <= depth) add({ path: join(root, ...segs), kind: 'file' });
      const dirIdx = segs.findIndex(isDirName);
      if (dirIdx >= 0 && dirIdx < last && dirIdx <= depth) add({ path: join(root, ...segs.slice(0, dirIdx + 1)), kind: 'dir' });
      const gitIdx = segs.indexOf('.git');
      if (gitIdx >= 0 && gitIdx <= depth && gitIdx < last && segs[last] === 'HEAD' && last === gitIdx + 1) {
        for (const t of gitDirTargets(join(root, ...segs.slice(0, gitIdx + 1)))) add(t);
        projectTop(join(root, ...segs.slice(0, gitIdx)));
      }
    }
    // Every other git dir (a submodule's in .git/modules/, a bare repository at any depth the
    // search reached) is a repository too: its hooks and config run code.
    for (const rel of scan.gitDirs) {
      const segs = rel.split('/').filter((s) => s !== '' && s !== '.');
      // A linked worktree's main git dir is planned from its `.git` file (below).
      if (segs.at(-1) === '.git' || (scan.isGitDir && segs.length === 0)) continue;
      const inGit = segs.includes('.git') || scan.isGitDir;
      for (const t of gitDirTargets(join(root, ...segs))) add(inGit ? t : { ...t, why: `in the bare repository ${join(root, ...segs)}` });
    }
    // Symlinks with a protected name: the link is protected (the supervisor refuses removing or
    // replacing it) and so is where it points (bound read-only through it). A `.git` link is a
    // repository whose git dir is elsewhere.
    for (const rel of scan.links) {
      const segs = rel.split('/').filter((s) => s !== '' && s !== '.');
      const name = segs.at(-1);
      if (!name || segs.length - 1 > depth + 1) continue;
      const path = join(root, ...segs);
      const inGit = segs.length >= 2 && segs.at(-2) === '.git';
      if (name === '.git') {
        for (const t of gitDirTargets(path)) add(t);
        projectTop(dirname(path));
      } else if (inGit && ['hooks', 'config', 'commondir'].includes(name)) {
        add({ path, kind: name === 'hooks' ? 'dir' : 'file' });
      } else if (isDirName(name)) {
        add({ path, kind: 'dir' });
      } else if (isFileName(name)) {
        add({ path, kind: 'file' });
      }
    }
    // `.git` files: the pointer itself (rewriting it would redirect git to attacker hooks) and the
    // hooks/config of the git dirs it names. For a linked worktree the main repository's .git is
    // a writable root of its own; these stay read-only inside it, and the worktree's own git dir
    // may be written (index, HEAD) but for its redirecting files.
    for (const g of scan.gitFiles) {
      const segs = posix.relative(root, g.file).split('/');
      if (g.file !== join(root, '.git') && (segs[0] === '..' || segs.length - 1 > depth)) continue;
      add({ path: g.file, kind: 'file' });
      projectTop(dirname(g.file));
      const linked = g.gitDir !== g.commonDir;
      for (const t of gitDirTargets(g.commonDir, linked ? 'entries' : 'whole')) add(t);
      if (linked) {
        for (const dir of new Set([g.gitDir, ...g.worktreeDirs])) for (const t of worktreeGitDirTargets(dir)) add(t);
        if (g.file === join(root, '.git')) exempt.push(g.gitDir);
      }
    }
  }

  for (const r of input.repoHooks) hooksFor(r.hooksPath, r.workTree);
  const names: string[] = [...PROTECTED_FILE_NAMES, ...PROTECTED_DIR_NAMES];
  if (input.globalHooksPath !== undefined) {
    const v = input.globalHooksPath;
    // Relative: it means that directory in every repository; a one-component name is simply
    // protected wherever it appears, like `.vscode`.
    if (!isAbsolute(v) && !v.startsWith('~') && !v.includes('/') && v !== '.' && v !== '..') names.push(v);
    if (isAbsolute(v) || v.startsWith('~')) hooksFor(v, home);
    else for (const wt of input.workTrees) hooksFor(v, wt);
  }

  add({ path: join(input.projectRoot, '.srt'), kind: 'dir' });
  add({ path: join(home, '.srt'), kind: 'dir' });
  for (const f of USER_SETTINGS_FILES) add({ path: join(home, f), kind: 'file' });
  add({ path: input.managedDir, kind: 'dir' });
  const homeWritable = input.roots.some((s) => within(home, s.root));
  if (homeWritable) {
    for (const p of HOME_PROTECTED) add({ path: join(home, p), kind: 'dir' });
    for (const p of HOME_PROTECTED_FILES) add({ path: join(home, p), kind: 'file' });
  }
  // What the next srt runs outside any sandbox (its launcher, node, package, dependencies).
  for (const f of input.srtFiles ?? []) {
    if (input.roots.some((s) => within(f.path, s.root))) add({ path: f.path, kind: f.kind, ifExists: true });
  }

  const targets = [...out.values()];
  return {
    targets,
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

/**
 * The rules file the helper reads (`--protect`): NUL-terminated records, a letter and a value.
 * `roots`: where the name rules apply; `paths`: every write-denied path, wherever it is; `free`:
 * where no rule applies (srt's own TMPDIR, below the protected `~/.srt`); `hidden`: read-denied
 * paths and globs whose opens the supervisor refuses, with the paths inside them that stay readable.
 */
export function encodeRules(rules: SupervisorRules, roots: string[], paths: string[], free: string[] = [],
  hidden: { path: string; glob?: true; reopened: string[] }[] = []): Buffer {
  const records = [
    // A read-denied path (H) or glob (h) whose opens the supervisor refuses, then the paths in it
    // that stay readable (O).
    ...hidden.flatMap((h) => [`${h.glob ? 'h' : 'H'}${h.path}`, ...h.reopened.map((o) => `O${o}`)]),
    ...free.map((r) => `F${r}`),
    ...roots.map((r) => `W${r}`),
    ...paths.map((p) => `P${p}`),
    ...rules.exempt.map((p) => `A${p}`),
    ...rules.names.map((n) => `N${n}`),
    ...rules.suffixes.map((s) => `S${s}`),
    ...rules.gitInternals.map((g) => `G${g}`),
    ...rules.markers.map((m) => `M${m}`),
  ];
  for (const r of records) if (r.length < 2 || r.includes('\0')) throw new Error(`protected-path rule ${JSON.stringify(r)} cannot be encoded`);
  return Buffer.from(records.map((r) => `${r}\0`).join(''));
}

/** What the supervisor reported (`--report-fd`, init/supervisor.c): refused calls, repository markers
 *  created, and calls the kernel refused. */
export interface SupervisorReport {
  /** `rule`: which rule refused it, as init/rules.c names it (`N.vscode`, `Ghooks`, `P/path`, `R.git`). */
  refused: { op: string; path: string; rule?: string }[];
  /** Where a new repository's git dir may be: as made, and where each ended up when the run ended. */
  created: string[];
  /** Refusals past the supervisor's list, counted only. */
  unlisted: number;
  /** More new repositories than the supervisor followed: srt must search for them itself. */
  lostTrack: boolean;
  /** Calls the kernel refused (`more`: past those listed, some were not). */
  kernel: { op: string; path: string; err: string }[];
  more: boolean;
  /** TCP connections to a loopback address and port nothing listened on inside, counted
   *  (`connectsUnlisted`: to pairs past the supervisor's list). */
  connects: { address: string; port: number; count: number }[];
  connectsUnlisted: number;
}

/** Parse the report: NUL-terminated fields, records `R` op path rule, `C` path, `N` count, `T`,
 *  `K` op path errno, `X`, `L` address port count, `Y` count. */
export function parseReport(buf: Buffer): SupervisorReport {
  const fields = buf.toString('utf8').split('\0');
  const out: SupervisorReport = { refused: [], created: [], unlisted: 0, lostTrack: false, kernel: [], more: false, connects: [], connectsUnlisted: 0 };
  for (let i = 0; i < fields.length;) {
    const kind = fields[i];
    if (kind === 'R' && i + 3 < fields.length) { out.refused.push({ op: fields[i + 1]!, path: fields[i + 2]!, rule: fields[i + 3]! }); i += 4; }
    else if (kind === 'C' && i + 1 < fields.length) { out.created.push(fields[i + 1]!); i += 2; }
    else if (kind === 'N' && i + 1 < fields.length) { out.unlisted += Number(fields[i + 1]) || 0; i += 2; }
    else if (kind === 'T' && i + 1 < fields.length) { out.lostTrack = true; i += 1; }
    else if (kind === 'K' && i + 3 < fields.length) { out.kernel.push({ op: fields[i + 1]!, path: fields[i + 2]!, err: fields[i + 3]! }); i += 4; }
    else if (kind === 'X' && i + 1 < fields.length) { out.more = true; i += 1; }
    else if (kind === 'L' && i + 3 < fields.length) {
      out.connects.push({ address: fields[i + 1]!, port: Number(fields[i + 2]), count: Number(fields[i + 3]) || 0 });
      i += 4;
    } else if (kind === 'Y' && i + 1 < fields.length) { out.connectsUnlisted += Number(fields[i + 1]) || 0; i += 2; }
    else break; // the rest was cut short
  }
  return out;
}

const VERBS: Record<string, string> = {
  create: 'writing', write: 'writing', 'create in': 'writing in', remove: 'removing', move: 'moving',
  replace: 'replacing', link: 'linking', chmod: 'changing the mode of', chown: 'changing the owner of',
  setxattr: 'setting an extended attribute or ACL on', removexattr: 'removing an extended attribute or ACL of',
};

/**
 * The rule behind a refusal, in words. `pathWhy`: why a protected path is protected where srt
 * knows more than its name (a link's target, an include), for `P` rules.
 */
export function describeRule(rule: string | undefined, pathWhy: (path: string) => string | undefined = () => undefined): string | undefined {
  if (!rule) return undefined;
  const what = rule.slice(1);
  switch (rule[0]) {
    case 'N': return `${(PROTECTED_SUFFIXES as readonly string[]).includes(what) ? `*${what}` : what} in a directory that existed before the run`;
    case 'G': return `${what} of a repository that existed before the run`;
    case 'R': return 'the .git of a repository that existed before the run';
    case 'P': return pathWhy(what);
    default: return undefined;
  }
}

/**
 * One line per refused path (first `max`, then a count of the rest, `unlisted` included), each
 * naming the rule; paths relative to cwd where inside it.
 */
export function refusalLines(refused: SupervisorReport['refused'], cwd: string, max = 10, opts: { unlisted?: number; pathWhy?: (path: string) => string | undefined } = {}): string[] {
  const seen = new Map<string, { op: string; rule?: string }>();
  for (const r of refused) if (!seen.has(r.path)) seen.set(r.path, r);
  const lines: string[] = [];
  for (const [path, { op, rule }] of seen) {
    if (lines.length === max) break;
    const shown = within(path, cwd) && path !== cwd ? posix.relative(cwd, path) : path;
    const named = describeRule(rule, opts.pathWhy);
    lines.push(`refused ${VERBS[op] ?? 'writing'} ${shown} (protected${named ? `: ${named}` : ''})`);
  }
  const more = seen.size - lines.length + (opts.unlisted ?? 0);
  if (more > 0) lines.push(`… and ${more} more refused writes to protected paths`);
  return lines;
}

// --- As patterns, for a backend that matches paths by regular expression (Seatbelt): every name
// at any depth below every write root, existing or not, so nothing needs a placeholder. Git
// internals are protected in every `.git` below a root (a repository created during the run
// included: it cannot be told apart by a pattern).

/** The files of `.git/worktrees/<name>/` that point git elsewhere: protected instead of the whole
 *  `worktrees/`, whose entry of a linked worktree must stay writable whichever root holds it. */
const WORKTREE_ENTRIES = ['commondir', 'gitdir', 'config.worktree'];

/** GIT_INTERNALS as globs below a git dir, `worktrees` as its entries' redirecting files. */
function gitInternalGlobs(): string[] {
  return GIT_INTERNALS.flatMap((g) => (g.endsWith('worktrees') ? WORKTREE_ENTRIES.map((e) => `${g}/*/${e}`) : [g]));
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
