// Protected paths (SPEC §3, invariant 10): write-denied whatever the settings say, in every
// writable root. The principle: anything a host program runs or obeys later without asking
// (shells, git, editors, AI agents, srt itself). This module names them and says how the
// searches find them; protected-plan.ts turns what was found into paths, protected-patterns.ts
// into patterns (Seatbelt), supervisor.ts into the rules the seccomp supervisor applies at any
// depth. The platform side (src/platform/search.ts) runs the searches and reads git's pointer
// files and configs.

import { isAbsolute, join, resolve } from 'node:path';

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
/** The files of a linked worktree's own git dir (`.git/worktrees/<name>/`) that point git
 *  elsewhere: protected instead of the whole entry, which the worktree's commits write. */
export const WORKTREE_ENTRIES: readonly { name: string; ifExists?: true }[] = [
  { name: 'commondir', ifExists: true },
  { name: 'gitdir', ifExists: true },
  { name: 'config.worktree' },
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

/** Is this a protected file name (or `*.suffix`, the bare suffix excepted)? */
export const isProtectedFileName = (n: string) => (PROTECTED_FILE_NAMES as readonly string[]).includes(n) || PROTECTED_SUFFIXES.some((s) => n.endsWith(s) && n.length > s.length);
export const isProtectedDirName = (n: string) => (PROTECTED_DIR_NAMES as readonly string[]).includes(n);

/** Where a `core.hooksPath` value points (git: relative to the work tree's top, `~` expanded). */
export function hooksPathDir(value: string, workTree: string, home: string): string {
  if (value === '~' || value.startsWith('~/')) return join(home, value.slice(1));
  return isAbsolute(value) ? resolve(value) : resolve(workTree, value);
}
