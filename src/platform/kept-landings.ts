// Where a library sandbox's paths land, kept for its next command while nothing they were
// resolved through can have changed. Each directory a walk looks a name up in is watched with
// inotify before the lookup, and so is what each name leads to (a file's link count changes
// without an event in its directory); any event in any of them, a watch that cannot be set, a
// file system that does not report every change locally or a change of the mount table makes
// every kept landing stale (tree-watch.ts; docs/design-choices.md "Reusing the tree search" says
// why the watch is sound). What is read from files' contents (git configuration, hooks paths) is
// no landing, and is read again for every command. A snapshot's listing (names, kinds, symlinks'
// targets), or that it holds too many names to list, is kept with them when its directory was
// watched before it was listed: none of it changes without an event in that directory. So are
// replaceableNames' verdicts on the directories the walks watched.

import type { Landing } from '../profiles/landing.js';
import { landingResolver, listSnapshot, type KeptVerdicts } from './landing.js';
import { TreeWatch } from './tree-watch.js';

export class KeptLandings {
  private readonly landings = new Map<string, Landing>();
  /** Directories and names watched, by real path. */
  private readonly dirs = new Set<string>();
  private readonly names = new Set<string>();
  /** Snapshots' listings taken while their directory was watched, and how many names each read
   *  (for 'too-large', one more than the most it was asked for: it holds at least that many). */
  private readonly listings = new Map<string, { listed: ReturnType<typeof listSnapshot>; read: number }>();
  /** replaceableNames' verdicts on watched directories (landing.ts KeptVerdicts). */
  readonly replaceable: KeptVerdicts = { verdicts: new Map(), watched: (dir) => this.dirs.has(dir) && this.watch.stale === undefined };
  /** How many landings and snapshot listings this command took from earlier ones. */
  reused = 0;
  listingsReused = 0;

  constructor(readonly watch: TreeWatch) {}

  /** Kept landings for the next command: these, while current (`previous`'s watch checked
   *  just before: TreeWatch.checkAll); else new ones (none when the last ones needed more
   *  watches than srt spends). */
  static next(previous: KeptLandings | undefined, runRoot: string): KeptLandings | undefined {
    if (previous && previous.watch.stale === undefined) {
      previous.reused = 0;
      previous.listingsReused = 0;
      return previous;
    }
    previous?.watch.close();
    if (previous?.watch.exhausted) return undefined;
    return new KeptLandings(new TreeWatch(runRoot));
  }

  /** A resolver (landingResolver) answering from the kept landings, and keeping what it resolves. */
  resolver(): { resolve: (path: string) => Landing; close: () => void } {
    const watch = this.watch;
    const r = landingResolver((dir, name) => {
      const at = dir.fd >= 0 ? `/proc/self/fd/${dir.fd}` : dir.path;
      if (!this.dirs.has(dir.path)) {
        this.dirs.add(dir.path);
        watch.local(dir.path);
        watch.dir(at);
      }
      const path = dir.path === '/' ? `/${name}` : `${dir.path}/${name}`;
      if (!this.names.has(path)) {
        this.names.add(path);
        watch.local(path);
        watch.name(`${at}/${name}`);
      }
    });
    return {
      resolve: (path) => {
        const kept = this.landings.get(path);
        if (kept) {
          this.reused++;
          return kept;
        }
        const l = r.resolve(path);
        if (watch.stale === undefined) this.landings.set(path, l);
        return l;
      },
      close: r.close,
    };
  }

  /** listSnapshot(dir, max), from an earlier command while current. */
  listing(dir: string, max: number): ReturnType<typeof listSnapshot> {
    const kept = this.listings.get(dir);
    // listSnapshot gives up past `max` names; a directory too large for a smaller `max` may not be.
    if (kept && (kept.read > max || kept.listed !== 'too-large')) {
      this.listingsReused++;
      return kept.read > max ? 'too-large' : kept.listed;
    }
    const listed = listSnapshot(dir, max);
    // Kept only if the watch of `dir` was set before it was read (the walk to a landing watches
    // each directory before looking a name up in it).
    if (this.dirs.has(dir) && this.watch.stale === undefined) {
      this.listings.set(dir, { listed, read: listed === 'too-large' ? max + 1 : listed.entries.length + listed.skipped.length });
    }
    return listed;
  }

  close(): void {
    this.watch.close();
  }
}
