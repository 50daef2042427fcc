// Repositories the command created during the run (SPEC §3): their internals could be written
// inside (git init, git clone), so when the run ends srt disables whatever git would run from
// them that git itself does not write for a plain repository, and says how to restore it. And
// in every repository the run could write: an interrupted rebase or cherry-pick it left, whose
// todo list `git rebase --continue` on the host would run `exec` lines from.

import { lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { reviewGitConfig } from '../profiles/gitconfig.js';
import { isGitDirectory } from './search.js';

const DISABLED = '.srt-disabled';

/**
 * The git dirs behind the names the supervisor saw created (`.git`, `HEAD`), or the new
 * `.git/HEAD` files a search found: each git dir once, only those that exist now.
 */
export function newGitDirs(created: string[]): string[] {
  const dirs = new Set<string>();
  for (const p of created) {
    const dir = basename(p) === '.git' ? p : dirname(p);
    // Still where it was made, with no symlink on the way: the command could have put a link to
    // one of your own repositories at that path since, and that one is not for srt to change.
    let real: string;
    try { real = realpathSync(dir); } catch { continue; }
    if (real === dir && isGitDirectory(dir)) dirs.add(dir);
  }
  return [...dirs];
}

/** A directory of ours to move things into: `base`, or `base-2`, … if that name is taken (by anything). */
function freshDir(base: string): string {
  for (let i = 1; ; i++) {
    const dir = i === 1 ? base : `${base}-${i}`;
    try {
      mkdirSync(dir, { mode: 0o755 });
      return dir;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || i > 100) throw e;
    }
  }
}

const shown = (p: string, cwd: string) => {
  const rel = relative(cwd, p);
  return rel === '' ? '.' : rel.startsWith('..') ? p : rel;
};

/**
 * Disable what would run from each new git dir: config entries git does not write itself
 * (the original kept as `config.srt-disabled`, a config of the safe entries in its place),
 * hooks that are not git's `*.sample` files (moved to `hooks.srt-disabled/`), and a `commondir`
 * pointing outside the repository. One line per repository saying what and how to restore.
 */
export function disableNewRepositories(gitDirs: string[], cwd: string): string[] {
  const lines: string[] = [];
  for (const gitDir of gitDirs) {
    const what: string[] = [];
    const restore: string[] = [];
    const g = shown(gitDir, cwd);
    try {
      for (const name of ['config', 'config.worktree']) {
        const file = join(gitDir, name);
        let text: string;
        try {
          if (!lstatSync(file).isFile()) {
            // A symlink or anything else where git reads its config: set it aside whole.
            renameSync(file, file + DISABLED);
            what.push(`${name} (not a file)`);
            restore.push(`mv ${g}/${name}${DISABLED} ${g}/${name}`);
            continue;
          }
          text = readFileSync(file, 'utf8');
        } catch { continue; }
        const review = reviewGitConfig(text);
        if (!review) continue;
        renameSync(file, file + DISABLED);
        writeFileSync(file, review.kept, { mode: 0o644 });
        what.push(...review.disabled.map((k) => (name === 'config' ? k : `${name}: ${k}`)));
        restore.push(`mv ${g}/${name}${DISABLED} ${g}/${name}`);
      }
      const hooks = join(gitDir, 'hooks');
      let entries: string[] = [];
      try {
        if (lstatSync(hooks).isSymbolicLink()) {
          renameSync(hooks, hooks + DISABLED);
          what.push('hooks (a symlink)');
          restore.push(`mv ${g}/hooks${DISABLED} ${g}/hooks`);
        } else {
          entries = readdirSync(hooks).filter((n) => !n.endsWith('.sample'));
        }
      } catch { /* no hooks dir */ }
      if (entries.length) {
        // Never into something already there: a symlink by that name would carry the hooks
        // anywhere (a startup directory).
        const aside = freshDir(hooks + DISABLED);
        for (const n of entries) renameSync(join(hooks, n), join(aside, n));
        what.push(...entries.map((n) => `hooks/${n}`));
        restore.push(`mv ${g}/${basename(aside)}/* ${g}/hooks/`);
      }
      const commondir = join(gitDir, 'commondir');
      try {
        const target = resolve(gitDir, readFileSync(commondir, 'utf8').trim());
        let real = target;
        try { real = realpathSync(target); } catch { /* dangling: still a redirect */ }
        // Git writes one only as `<gitdir>/worktrees/<name>/commondir`, pointing at that <gitdir>.
        const own = realpathSync(gitDir);
        if (!(basename(dirname(own)) === 'worktrees' && real === dirname(dirname(own)))) {
          renameSync(commondir, commondir + DISABLED);
          what.push(`commondir (pointed at ${target})`);
          restore.push(`mv ${g}/commondir${DISABLED} ${g}/commondir`);
        }
      } catch { /* none */ }
    } catch (e) {
      lines.push(`could not review ${g}, a repository created inside the sandbox (${(e as Error).message}): check its config and hooks before running git there`);
      continue;
    }
    if (what.length) {
      lines.push(`disabled ${what.join(', ')} in ${g}, a repository created inside the sandbox (git would run them); ` +
        `review, then restore with: ${restore.join(' && ')}`);
    }
  }
  return lines;
}

/** The todo lists git runs `exec` lines from when a rebase or cherry-pick is continued. */
const TODOS = ['rebase-merge/git-rebase-todo', 'sequencer/todo'];

/** What srt knows of the repositories in the writable roots when the run starts. */
export interface RepositoriesBefore {
  /** Every git dir found: one found at the end that is not here is the run's. */
  gitDirs: string[];
  /** Each todo list of those git dirs, as it was (null: there was none). */
  todos: Map<string, string | null>;
}

function readTodo(file: string): string | null {
  try { return readFileSync(file, 'utf8'); } catch { return null; }
}

export function repositoriesBefore(gitDirs: string[]): RepositoriesBefore {
  const todos = new Map<string, string | null>();
  for (const g of gitDirs) for (const t of TODOS) todos.set(join(g, t), readTodo(join(g, t)));
  return { gitDirs, todos };
}

/** `exec`/`x` lines: git runs each with the shell. */
const EXEC_LINE = /^[ \t]*(?:exec|x)(?:[ \t]|$)/;

/**
 * In each git dir, a todo list the run wrote or changed (not as it was before) that holds `exec`
 * lines: those lines are commented out (the original kept as `*.srt-disabled`), one line each
 * saying so and how to restore.
 */
export function disableRebaseExec(gitDirs: string[], before: RepositoriesBefore['todos'], cwd: string): string[] {
  const lines: string[] = [];
  for (const gitDir of new Set(gitDirs)) {
    for (const t of TODOS) {
      const file = join(gitDir, t);
      const dir = dirname(file);
      const text = readTodo(file);
      if (text === null || before.get(file) === text) continue;
      // git never makes these a symlink: one could lead its rewrite to a file of yours elsewhere.
      if (lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink()) {
        try {
          renameSync(dir, dir + DISABLED);
          lines.push(`moved ${shown(dir, cwd)} (a symlink the run left where git keeps an interrupted rebase or cherry-pick) to ${shown(dir, cwd)}${DISABLED}`);
        } catch (e) {
          lines.push(`${shown(dir, cwd)} is a symlink the run left and could not be moved aside (${(e as Error).message}): remove it before you continue a rebase there`);
        }
        continue;
      }
      const todo = text.split('\n');
      const execs = todo.filter((l) => EXEC_LINE.test(l)).length;
      if (execs === 0) continue;
      const f = shown(file, cwd);
      try {
        if (!lstatSync(file).isFile()) continue;
        renameSync(file, file + DISABLED);
        writeFileSync(file, todo.map((l) => (EXEC_LINE.test(l) ? `# srt: disabled: ${l}` : l)).join('\n'), { mode: 0o644 });
      } catch (e) {
        lines.push(`could not review ${f}, left by the run (${(e as Error).message}): check its exec lines before you continue that rebase`);
        continue;
      }
      lines.push(`disabled ${execs} exec line(s) in ${f}, an interrupted ${t.startsWith('rebase') ? 'rebase' : 'cherry-pick'} the run left ` +
        `(git ${t.startsWith('rebase') ? 'rebase' : 'cherry-pick'} --continue would run them); review, then restore with: mv ${f}${DISABLED} ${f}`);
    }
  }
  return lines;
}
