// Protected paths (SPEC §3): write-denied whatever the settings say. This module is the pure
// plan: which ripgrep search finds them, and which targets follow from what it found. The
// platform side (src/platform/search.ts) runs the search and reads git's pointer files.

import { dirname, join, posix } from 'node:path';

export const PROTECTED_FILE_NAMES = [
  '.bashrc', '.bash_profile', '.zshrc', '.zprofile', '.profile',
  '.gitconfig', '.gitmodules', '.ripgreprc', '.mcp.json',
  // Beyond SPEC §3: the other startup files bash and zsh run.
  '.bash_login', '.zshenv', '.zlogin',
] as const;
export const PROTECTED_DIR_NAMES = ['.vscode', '.idea', '.srt'] as const;

export interface ProtectedTarget {
  path: string;
  kind: 'file' | 'dir';
  /**
   * Masked only when it exists: an empty placeholder would itself break git (an empty
   * `commondir` makes every git command fail). When missing, srt removes it after the run if
   * the command created it.
   */
  ifExists?: true;
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

export interface ProtectedInput {
  cwd: string;
  home: string;
  root: string;
  depth: number;
  managedDir: string;
  /** Paths relative to cwd reported by the search (`protectedSearchArgs`). */
  found: string[];
  /** `.git` files found (cwd's own included), already read. */
  gitFiles: GitFile[];
}

/**
 * ripgrep arguments listing every file that reveals a protected path down to `depth` directories
 * below cwd. `rg --files` lists files only, so directories are found through a file inside them
 * (a repository through `.git/HEAD`); an empty nested `.vscode/`, `.idea/` or `.srt/` is not found.
 */
export function protectedSearchArgs(depth: number): string[] {
  const globs = [
    ...PROTECTED_FILE_NAMES,
    ...PROTECTED_DIR_NAMES.map((d) => `**/${d}/**`),
    '**/.git/HEAD',
    '**/.git/modules/**/HEAD',
    '.git',
  ];
  // A repository at depth d shows up as d/.git/HEAD, two levels further down.
  return ['--files', '--hidden', '--no-ignore', '--no-config', '--no-messages', '--no-follow',
    '--max-depth', String(depth + 2), ...globs.flatMap((g) => ['-g', g])];
}

/**
 * Git internals that run code or redirect git to code: hooks, the config (core.hooksPath,
 * core.fsmonitor, filters, …), `commondir` (points git at another directory's config and
 * hooks) and `worktrees/` (each linked worktree's `commondir`/`gitdir` do the same).
 */
function gitDirTargets(gitDir: string, worktrees: 'whole' | 'entries' = 'whole'): ProtectedTarget[] {
  const targets: ProtectedTarget[] = [
    { path: join(gitDir, 'hooks'), kind: 'dir' },
    { path: join(gitDir, 'config'), kind: 'file' },
    { path: join(gitDir, 'config.worktree'), kind: 'file' },
    { path: join(gitDir, 'commondir'), kind: 'file', ifExists: true },
  ];
  // A linked worktree writes its index and HEAD under `worktrees/<name>`, so there only each
  // entry's redirecting files are protected (see worktreeGitDirTargets); elsewhere the whole dir.
  if (worktrees === 'whole') targets.push({ path: join(gitDir, 'worktrees'), kind: 'dir' });
  return targets;
}

/** The redirecting files of a linked worktree's own git dir (`<main>/.git/worktrees/<name>`). */
function worktreeGitDirTargets(gitDir: string): ProtectedTarget[] {
  return [
    { path: join(gitDir, 'commondir'), kind: 'file', ifExists: true },
    { path: join(gitDir, 'gitdir'), kind: 'file', ifExists: true },
    { path: join(gitDir, 'config.worktree'), kind: 'file' },
  ];
}

export function protectedTargets(input: ProtectedInput): ProtectedTarget[] {
  const { cwd, depth } = input;
  const out = new Map<string, ProtectedTarget>();
  const add = (t: ProtectedTarget) => { if (!out.has(t.path)) out.set(t.path, t); };

  // Every name, existing or not, in cwd and in each nested repository root: that is where
  // editors, git and agents look for them. A missing name in some other subdirectory is not
  // masked (that would plant placeholders in every directory of the tree); existing ones are.
  const projectRoot = (dir: string) => {
    for (const name of PROTECTED_FILE_NAMES) add({ path: join(dir, name), kind: 'file' });
    for (const name of PROTECTED_DIR_NAMES) add({ path: join(dir, name), kind: 'dir' });
  };
  projectRoot(cwd);
  // No turning cwd into a bare repository.
  add({ path: join(cwd, 'HEAD'), kind: 'file' });
  add({ path: join(cwd, 'objects'), kind: 'dir' });
  add({ path: join(cwd, 'refs'), kind: 'dir' });
  const cwdGitFile = input.gitFiles.find((g) => g.file === join(cwd, '.git'));
  if (!cwdGitFile) {
    // Only a real repository (with HEAD) gets its hooks/config masked inside `.git`. Without one,
    // `.git` itself stays uncreatable; an empty `.git` is another run's placeholder and must not
    // be filled with placeholders of our own (that would keep it from ever being removed).
    if (input.found.includes('.git/HEAD')) for (const t of gitDirTargets(join(cwd, '.git'))) add(t);
    else add({ path: join(cwd, '.git'), kind: 'dir' });
  }

  add({ path: join(input.root, '.srt'), kind: 'dir' });
  add({ path: join(input.home, '.srt'), kind: 'dir' });
  add({ path: input.managedDir, kind: 'dir' });

  // Nested finds: these exist, so they are masked where they are.
  for (const rel of input.found) {
    const segs = rel.split('/').filter((s) => s !== '' && s !== '.');
    const last = segs.length - 1;
    if (last < 0) continue;
    if ((PROTECTED_FILE_NAMES as readonly string[]).includes(segs[last]!) && last <= depth) {
      add({ path: join(cwd, ...segs), kind: 'file' });
    }
    const dirIdx = segs.findIndex((s) => (PROTECTED_DIR_NAMES as readonly string[]).includes(s));
    if (dirIdx >= 0 && dirIdx < last && dirIdx <= depth) {
      add({ path: join(cwd, ...segs.slice(0, dirIdx + 1)), kind: 'dir' });
    }
    const gitIdx = segs.indexOf('.git');
    if (gitIdx >= 0 && gitIdx <= depth && gitIdx < last) {
      const gitDir = join(cwd, ...segs.slice(0, gitIdx + 1));
      if (segs[last] === 'HEAD' && last === gitIdx + 1) {
        for (const t of gitDirTargets(gitDir)) add(t);
        projectRoot(join(cwd, ...segs.slice(0, gitIdx)));
      }
      // Submodule git dirs live in the superproject's .git/modules/<name>/.
      if (segs[gitIdx + 1] === 'modules' && segs[last] === 'HEAD') {
        for (const t of gitDirTargets(join(cwd, ...segs.slice(0, last)))) add(t);
      }
    }
  }
  // `.git` files: the pointer itself (rewriting it would redirect git to attacker hooks) and the
  // hooks/config of the git dirs it names. For cwd's linked worktree the main repository's .git
  // is made writable by the caller, these stay read-only inside it.
  for (const g of input.gitFiles) {
    const segs = posix.relative(cwd, g.file).split('/');
    if (g.file !== join(cwd, '.git') && (segs[0] === '..' || segs.length - 1 > depth)) continue;
    add({ path: g.file, kind: 'file' });
    projectRoot(dirname(g.file));
    const linked = g.gitDir !== g.commonDir;
    for (const t of gitDirTargets(g.commonDir, linked ? 'entries' : 'whole')) add(t);
    if (linked) for (const dir of new Set([g.gitDir, ...g.worktreeDirs])) for (const t of worktreeGitDirTargets(dir)) add(t);
  }
  return [...out.values()];
}
