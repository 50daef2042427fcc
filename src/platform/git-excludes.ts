// Without the supervisor, the empty placeholders sit in the work tree during the run: git inside
// is told to ignore them (an excludes file through GIT_CONFIG_*, on top of the user's own).

import { lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { Policy } from '../policy.js';
import { gitConfigValue, parseGitConfig } from '../profiles/gitconfig.js';
import { hooksPathDir, type ProtectedTarget } from '../profiles/protected.js';

/** The variables that point git at an excludes file (written into `runDir`) naming `placeholders`. */
export function placeholderExcludesEnv(placeholders: ProtectedTarget[], env: NodeJS.ProcessEnv, runDir: string, policy: Policy): NodeJS.ProcessEnv {
  const patterns: string[] = [];
  for (const ph of placeholders) {
    for (let d = dirname(ph.path); ; d = dirname(d)) {
      if (lstatSync(join(d, '.git'), { throwIfNoEntry: false })) {
        if (join(d, '.git') !== ph.path) patterns.push(`/${relative(d, ph.path)}${ph.kind === 'dir' ? '/' : ''}`);
        break;
      }
      if (d === '/') break;
    }
  }
  if (patterns.length === 0) return {};
  const own = userExcludes(env, policy);
  const file = join(runDir, 'git-excludes');
  writeFileSync(file, `${own}${own && !own.endsWith('\n') ? '\n' : ''}# srt placeholders\n${[...new Set(patterns)].join('\n')}\n`, { mode: 0o444 });
  const n = Number(env.GIT_CONFIG_COUNT ?? 0) || 0;
  return { GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: 'core.excludesFile', [`GIT_CONFIG_VALUE_${n}`]: file };
}

/** The user's own global excludes file (core.excludesFile, else git's default), read outside. */
function userExcludes(env: NodeJS.ProcessEnv, policy: Policy): string {
  const home = policy.home;
  const xdg = env.XDG_CONFIG_HOME || join(home, '.config');
  let path = join(xdg, 'git', 'ignore');
  for (const f of [join(xdg, 'git', 'config'), join(home, '.gitconfig')]) {
    try {
      const v = gitConfigValue(parseGitConfig(readFileSync(f, 'utf8')), 'core.excludesFile');
      if (v) path = hooksPathDir(v, policy.cwd, home);
    } catch { /* absent or unreadable */ }
  }
  try { return readFileSync(path, 'utf8'); } catch { return ''; }
}
