// The protected-path search of a small tree, in this process: the listing srt-init's walk gives
// (init/listing.c; rg and find where it is not built: src/platform/search.ts) without starting
// it. Most runs start in a directory of a few files, where forking this ~60 MB process for the
// walker costs more than the walk. A tree found larger than a small budget, a directory that
// fails other than by being replaced, or a name the walker's output would carry differently
// (undecodable) is left to it: the walk then says nothing, so the listing is always the walker's
// or identical to it (test/unit/search-walk.test.ts compares the two on generated trees).

import { closeSync, constants, openSync, readdirSync, type Dirent } from 'node:fs';
import { isProtectedLink, PROTECTED_DIR_NAMES, PROTECTED_FILE_NAMES, PROTECTED_SUFFIXES } from '../profiles/protected.js';

/** Entries read before the walk gives the tree to srt-init (a few milliseconds of readdir). */
export const WALK_BUDGET = 2000;

// protectedListArgs: files of these names or endings, or below a directory of these names.
const FILE_NAMES: ReadonlySet<string> = new Set<string>([...PROTECTED_FILE_NAMES, 'HEAD', '.git']);
const DIR_NAMES: ReadonlySet<string> = new Set<string>(PROTECTED_DIR_NAMES);
const fileMatches = (name: string) => FILE_NAMES.has(name) || PROTECTED_SUFFIXES.some((s) => name.endsWith(s));

/** A directory replaced by a non-directory: skipped, as srt-init skips it. One srt cannot open
 *  (EACCES) is left to srt-init, which tells whether the command could open it up. */
const SKIPPED = new Set(['ENOTDIR', 'ELOOP']);

export interface WalkListing {
  /** Regular files with a protected name or below a protected directory, relative to the root. */
  files: string[];
  /** Symlinks with a protected name (isProtectedLink), relative. */
  links: string[];
}

/** A directory's entries, opened without following a symlink put in its place. */
function entries(path: string): Dirent[] {
  const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    return readdirSync(`/proc/self/fd/${fd}`, { withFileTypes: true });
  } finally {
    closeSync(fd);
  }
}

/**
 * What `srt-init --list-protected maxDepth` lists below `root` (the symlinks already picked), or
 * undefined when the tree holds more than `budget` entries or the walk cannot tell the same.
 */
export function walkProtected(root: string, maxDepth: number, budget = WALK_BUDGET): WalkListing | undefined {
  const files: string[] = [];
  const links: string[] = [];
  let seen = 0;
  // [path, relative path, depth of its entries, below a protected directory name]
  const dirs: [string, string, number, boolean][] = [[root, '', 1, false]];
  for (let next = dirs.pop(); next; next = dirs.pop()) {
    const [path, rel, depth, inProtectedDir] = next;
    let list: Dirent[];
    try {
      // The root as srt-init opens it (its working directory); below it, no symlink followed.
      list = rel === '' ? readdirSync(path, { withFileTypes: true }) : entries(path);
    } catch (e) {
      if (rel !== '' && SKIPPED.has((e as NodeJS.ErrnoException).code ?? '')) continue;
      return undefined;
    }
    seen += list.length;
    if (seen > budget) return undefined;
    for (const e of list) {
      if (e.name.includes('\uFFFD')) return undefined;
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isSymbolicLink()) {
        if (isProtectedLink(r)) links.push(r);
      } else if (e.isDirectory()) {
        if (depth < maxDepth) dirs.push([`${path}/${e.name}`, r, depth + 1, inProtectedDir || DIR_NAMES.has(e.name)]);
      } else if (e.isFile() && (inProtectedDir || fileMatches(e.name))) {
        files.push(r);
      }
    }
  }
  return { files, links };
}
