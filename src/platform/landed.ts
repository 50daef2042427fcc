// Protection by landing (SPEC §3): what a host program runs or reads as configuration is
// protected where it really lies. Found at start, read-only: the target of every symlink inside a
// protected directory (`.git/hooks/pre-commit -> ../../scripts/pre-commit`), the home's startup and
// configuration files wherever they land in a writable root (stow-style
// `~/.bashrc -> ~/dotfiles/bashrc`, an allowWrite of `~/.config`), what tools run from their caches
// (`~/.npm/_npx/`), and every file git reads as configuration through
// `include.path`/`includeIf.*.path` from the system, global or a repository's config. Each is
// planned as a protected path; the mounts plan binds it read-only where it lands, the supervisor
// refuses changing it there. What appears during the run is judged where it lands.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { isWithin } from '../glob.js';
import type { Landing } from '../profiles/landing.js';
import { parseGitConfig } from '../profiles/gitconfig.js';
import type { Policy } from '../policy.js';
import {
  HOME_PROTECTED, HOME_PROTECTED_FILES, PROTECTED_DIR_NAMES, PROTECTED_FILE_NAMES, TOOL_RUN_DIRS, type ProtectedTarget,
} from '../profiles/protected.js';
import { protectedPlan, type ProtectedPlan } from '../profiles/protected-plan.js';
import { landingResolver } from './landing.js';
import type { ProtectedScan } from './search.js';
import { ownFiles } from './self.js';

/** Entries looked at inside protected directories, all together (a large `.idea/` is a few hundred). */
const MAX_ENTRIES = 20_000;
const MAX_DEPTH = 8;
/** git's own limit on nested includes. */
const MAX_INCLUDE_DEPTH = 10;

export interface LandedInput {
  /** The writable roots, where they land. */
  roots: string[];
  home: string;
  /** The environment host git runs with (XDG_CONFIG_HOME, GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM). */
  env: NodeJS.ProcessEnv;
  /** Protected directories (as planned) whose symlinks lead elsewhere; missing ones are skipped. */
  dirs: string[];
  /** The git dir of every repository found: its config and config.worktree may include files. */
  gitDirs: string[];
}

export interface Landed {
  targets: ProtectedTarget[];
  warnings: string[];
}

/** `resolve`: the caller's resolver (gatherLinux shares one with the policy's literal paths). */
export function protectedByLanding(input: LandedInput, resolve?: (path: string) => Landing): Landed {
  if (resolve) return landedWith(input, resolve);
  // One resolver for all (the home's files share their directories): a walk per path from `/`
  // was most of a next command's planning.
  const resolver = landingResolver();
  try {
    return landedWith(input, resolver.resolve);
  } finally {
    resolver.close();
  }
}

function landedWith(input: LandedInput, resolveLanding: (path: string) => Landing): Landed {
  const { roots, home, env } = input;
  const targets = new Map<string, ProtectedTarget>();
  const warnings: string[] = [];
  const inRoot = (l: Landing) => roots.some((r) => isWithin(l.real, r));
  const shown = (p: string) => (isWithin(p, home) && p !== home ? `~${p.slice(home.length)}` : p);
  const add = (path: string, kind: 'file' | 'dir', why: string) => {
    if (!targets.has(path)) targets.set(path, { path, kind, why });
  };

  // --- symlinks inside protected directories, and inside what they lead to
  const walked = new Set<string>();
  let budget = MAX_ENTRIES;
  /** `top`: where the protected directory lands (a link back inside it leads nowhere new). */
  const queue: { dir: string; top: string; depth: number }[] = [];
  const walkLater = (dir: string) => {
    const l = resolveLanding(dir);
    if (l.kind !== 'dir' || walked.has(l.real)) return;
    walked.add(l.real);
    queue.push({ dir, top: l.real, depth: 0 });
  };
  const drain = () => {
    while (queue.length > 0) {
      const { dir, top, depth } = queue.shift()!;
      let entries;
      try { entries = readdirSync(dir, { withFileTypes: true }); } catch { continue; }
      for (const e of entries) {
        if (--budget < 0) return;
        const path = join(dir, e.name);
        if (e.isSymbolicLink()) {
          const l = resolveLanding(path);
          if (inRoot(l) && !isWithin(l.real, top)) add(path, l.kind === 'dir' ? 'dir' : 'file', `the target of ${shown(path)}`);
          if (l.kind === 'dir') walkLater(path);
        } else if (e.isDirectory() && depth < MAX_DEPTH) {
          queue.push({ dir: path, top, depth: depth + 1 });
        }
      }
    }
  };

  // --- the home's startup and configuration files: a link on the way into a writable root
  const xdg = env.XDG_CONFIG_HOME || join(home, '.config');
  const homeEntries = [
    ...PROTECTED_FILE_NAMES.map((n) => ({ path: join(home, n), dir: false, what: undefined })),
    ...HOME_PROTECTED_FILES.map((n) => ({ path: join(home, n), dir: false, what: undefined })),
    ...PROTECTED_DIR_NAMES.map((n) => ({ path: join(home, n), dir: true, what: undefined })),
    ...HOME_PROTECTED.map((n) => ({ path: join(home, n), dir: true, what: undefined })),
    { path: join(xdg, 'git'), dir: true, what: undefined },
    // What tools run from their caches, the caches where the user moved them too.
    ...[
      ...TOOL_RUN_DIRS.map((n) => join(home, n)),
      ...[env.npm_config_cache, env.NPM_CONFIG_CACHE].filter((c): c is string => !!c && isAbsolute(c)).map((c) => join(c, '_npx')),
      ...(env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? [join(env.XDG_CACHE_HOME, 'pnpm', 'dlx')] : []),
    ].map((path) => ({ path, dir: true, what: `${shown(path)}, whose packages a tool runs later` })),
  ];
  for (const { path, dir, what } of homeEntries) {
    const l = resolveLanding(path);
    // Missing too: through a linked parent (`~/.config -> ~/dotfiles/config`) it would be created
    // there. No link at all: a writable root inside the home (`~/.config`), $XDG_CONFIG_HOME in one.
    if (inRoot(l)) add(path, dir ? 'dir' : 'file', l.via?.length ? `${shown(path)} leads there` : what ?? `your ${shown(path)}`);
    if (dir) walkLater(path);
  }
  for (const dir of input.dirs) walkLater(dir);
  drain();
  if (budget < 0) {
    warnings.push(`srt looked for symlinks in the first ${MAX_ENTRIES} entries of the protected directories only: a link further in ` +
      'that leads into a writable path leaves its target writable; keep protected directories small');
  }

  // --- git include chains: every file git reads as configuration
  const gitConfigs = [
    env.GIT_CONFIG_SYSTEM || '/etc/gitconfig',
    join(xdg, 'git', 'config'),
    env.GIT_CONFIG_GLOBAL || join(home, '.gitconfig'),
    ...input.gitDirs.flatMap((g) => [join(g, 'config'), join(g, 'config.worktree')]),
  ];
  const read = new Set<string>();
  const follow = (file: string, depth: number) => {
    if (depth > MAX_INCLUDE_DEPTH || read.has(file)) return;
    read.add(file);
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { return; }
    let entries;
    try { entries = parseGitConfig(text); } catch { return; } // git refuses such a file too
    for (const e of entries) {
      const include = (e.section === 'include' && e.subsection === undefined) || (e.section === 'includeif' && e.subsection !== undefined);
      if (!include || e.key !== 'path' || e.value === '') continue;
      // git: `~/` is the home directory; a relative path is relative to the including file.
      const v = e.value;
      const target = v === '~' || v.startsWith('~/') ? join(home, v.slice(1)) : isAbsolute(v) ? resolve(v) : resolve(dirname(file), v);
      const l = resolveLanding(target);
      if (inRoot(l)) add(target, 'file', `${e.section === 'include' ? 'include.path' : `includeIf.${e.subsection}.path`} of ${shown(file)}`);
      follow(target, depth + 1);
    }
  };
  for (const f of gitConfigs) follow(f, 0);

  return { targets: [...targets.values()], warnings };
}

/**
 * The protected-path plan of a run (SPEC §3) from what the searches found below the writable
 * roots: the names, every repository's internals, srt's own files, and what is protected where it
 * lands. `exclude`: a root planned apart (a linked worktree's own git dir).
 */
export function protectionPlan(policy: Policy, scanned: ProtectedScan, roots: string[], managedDir: string, exclude?: string,
  resolve?: (path: string) => Landing): { plan: ProtectedPlan; warnings: string[] } {
  const plan = protectedPlan({
    roots: scanned.roots.filter((r) => r.root !== exclude),
    home: policy.home, projectRoot: policy.root, depth: policy.mandatoryDenySearchDepth, managedDir,
    repoHooks: scanned.repoHooks, workTrees: scanned.workTrees, srtFiles: ownFiles(),
    ...(scanned.globalHooksPath !== undefined ? { globalHooksPath: scanned.globalHooksPath } : {}),
  });
  const landed = protectedByLanding({
    roots, home: policy.home, env: process.env, gitDirs: scanned.repos.map((r) => r.gitDir),
    dirs: plan.targets.filter((t) => t.kind === 'dir' && !t.ifExists).map((t) => t.path),
  }, resolve);
  const planned = new Set(plan.targets.map((t) => t.path));
  return { plan: { ...plan, targets: [...plan.targets, ...landed.targets.filter((t) => !planned.has(t.path))] }, warnings: landed.warnings };
}
