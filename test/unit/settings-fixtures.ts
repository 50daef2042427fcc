// Shared fixtures for the settings/policy unit tests: a temp world with HOME, a git repo and a
// managed directory that the loader is pointed at through the LoadOptions test seam.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach } from 'vitest';
import { loadPolicy, loadSettingsReport, type ApprovalSource, type LoadOptions } from '../../src/settings/index.js';

/** Approves every project/local file, for tests about what such files do once approved. */
export const approveAll: ApprovalSource = { isApproved: () => true };

export interface World {
  dir: string;
  home: string;
  repo: string;
  etc: string;
  write(rel: string, content: string | object): string;
  opts(extra?: Partial<LoadOptions>): LoadOptions;
}

const cleanups: string[] = [];
afterEach(() => {
  while (cleanups.length) rmSync(cleanups.pop()!, { recursive: true, force: true });
});

/** A temp tree: `home/`, `repo/` (a repository: `.git/HEAD`), `etc/srt/`. Paths in `write` are relative to it. */
export function world(): World {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'srt-settings-')));
  cleanups.push(dir);
  const home = join(dir, 'home');
  const repo = join(dir, 'repo');
  const etc = join(dir, 'etc', 'srt');
  for (const d of [home, join(repo, '.git'), etc]) mkdirSync(d, { recursive: true });
  writeFileSync(join(repo, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  const w: World = {
    dir,
    home,
    repo,
    etc,
    write(rel, content) {
      const file = join(dir, rel);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
      return file;
    },
    opts(extra = {}) {
      return {
        cwd: repo,
        home,
        managedPaths: [join(etc, 'managed-settings.json'), join(etc, 'managed-settings.d')],
        ...extra,
      };
    },
  };
  return w;
}

export const load = (w: World, extra?: Partial<LoadOptions>) => loadPolicy(w.opts(extra));
export const report = (w: World, extra?: Partial<LoadOptions>) => loadSettingsReport(w.opts(extra));

/** The SettingsError message (all lines) thrown by loading, or '' if none. */
export function loadError(w: World, extra?: Partial<LoadOptions>): string {
  try {
    loadPolicy(w.opts(extra));
  } catch (err) {
    return (err as Error).message;
  }
  return '';
}
