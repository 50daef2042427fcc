// Whether the trees a sandbox searched (the protected-path search, the deny globs' walk) are still
// exactly as the search saw them, so that its next command may reuse what it found. Every
// directory the search reads is watched with inotify (fs.watch) *before* it is read; any event in
// any of them, a watch that could not be set, a search root whose path now leads elsewhere, a
// change of the mount table or a file system that does not report every change locally makes
// the search stale. docs/design-choices.md "Reusing the tree search" says why this is sound.
// Every watch of this process shares libuv's one inotify queue, and events lost when that queue
// overflows are lost without a word (libuv drops the kernel's overflow notice). An overflow needs
// the queue's limit of events pending at once, and those arrive before anything is dropped: so
// every event in any watch of the process is counted, a watch that failed keeps counting (its
// directories stay watched while any other watch is live), and a watch that saw half the limit
// delivered since its last check is stale.

import { closeSync, constants, fstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { dirname, join } from 'node:path';
import { nodeCrypto } from '../node-crypto.js';
import { removeTree } from './remove.js';

/** File systems whose every change to a name is made through this kernel (so inotify sees it):
 *  not network or FUSE ones, where another machine or a daemon changes names unseen, nor overlayfs,
 *  where a name written straight into a lower layer appears with no event. */
const LOCAL_FILE_SYSTEMS = new Set(['ext2', 'ext3', 'ext4', 'xfs', 'btrfs', 'tmpfs', 'f2fs', 'zfs', 'bcachefs']);
/** How long the fence may take to come back before the search is taken as stale. */
const FENCE_TIMEOUT_MS = 5_000;

/** At most a quarter of the user's inotify watches (editors and build tools need theirs). */
function watchBudget(): number {
  try {
    return Math.min(65_536, Math.floor(Number(readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8').trim()) / 4));
  } catch {
    return 0;
  }
}

/** A mount table entry: its mount point (unescaped) and file system type. */
function mounts(text: string): { point: string; type: string }[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return text.split('\n').filter(Boolean).map((line) => {
    const f = line.split(' ');
    const sep = f.indexOf('-');
    return { point: unescape(f[4] ?? ''), type: f[sep + 1] ?? '' };
  });
}

const within = (path: string, dir: string) => dir === '/' || path === dir || path.startsWith(`${dir}/`);

/** A tree root pinned by a descriptor: read it (and run searches in it) through `at`. */
export interface PinnedTree {
  at: string;
  close(): void;
}

/** Every watch of this process not closed yet (they share one inotify queue, see the header). */
const open = new Set<TreeWatch>();
/** Events delivered to any watch of this process so far. */
let delivered = 0;
/** Events since a watch's last check past which an overflow of the queue cannot be ruled out:
 *  half the queue's limit (the rest may be the embedding program's own watches'); where the limit
 *  cannot be read, any event. */
const OVERFLOW_BOUND = (() => {
  try {
    return Math.max(1, Math.floor(Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim()) / 2) || 1);
  } catch {
    return 1;
  }
})();

export class TreeWatch {
  private readonly watchers: FSWatcher[] = [];
  private readonly pins: { path: string; dev: bigint; ino: bigint }[] = [];
  private readonly mountTable: string;
  private table: { point: string; type: string }[] | undefined;
  private readonly budget = watchBudget();
  private readonly fenceDir: string;
  private readonly fence: FSWatcher;
  private fenceWaiter: { name: string; done: () => void } | undefined;
  private why: string | undefined;
  /** `delivered` when this watch was last shown current (made, or its fence came back). */
  private seen = delivered;
  /** More directories than the budget: watching this sandbox's trees again would fail again. */
  exhausted = false;

  /** Watches with a fence directory below `runRoot` (hidden from every sandbox; a dead
   *  process's is reaped by its pid, as its run directories are). */
  constructor(runRoot: string) {
    this.mountTable = readFileSync('/proc/self/mountinfo', 'utf8');
    mkdirSync(runRoot, { recursive: true, mode: 0o700 });
    this.fenceDir = mkdtempSync(join(runRoot, `${process.pid}-watch-`));
    this.fence = watch(this.fenceDir, { persistent: false }, (_event, name) => {
      if (this.fenceWaiter && name === this.fenceWaiter.name) this.fenceWaiter.done();
    });
    this.fence.on('error', () => this.fail('the watch of its fence failed'));
    open.add(this);
  }

  /** An event in a watched directory of `to`; counted for every watch (see the header). Once no
   *  watch is live, nothing needs counting: every watch lets its directories go. */
  private static event(to: TreeWatch): void {
    to.fail('a watched directory changed');
    delivered++;
    let live = false;
    for (const w of open) {
      w.overflowCheck();
      live ||= !w.why;
    }
    if (!live) for (const w of open) w.release();
  }

  private overflowCheck(): void {
    if (delivered - this.seen >= OVERFLOW_BOUND) this.fail('too many events to rule out an overflow of the inotify queue');
  }

  /** Why the search is stale already, if it is. */
  get stale(): string | undefined {
    return this.why;
  }

  /** How many directories are watched for the next command (none once stale). */
  get size(): number {
    return this.why ? 0 : this.watchers.length;
  }

  /** The search can no longer be shown to be current: it is done again for the next command.
   *  Its directories stay watched while another watch is live (their events count towards an
   *  overflow, see the header), and are let go at close() or once no watch is live. */
  fail(why: string): void {
    this.why ??= why;
  }

  /** Watch one directory, before it is read. */
  dir(path: string): void {
    if (this.why) return;
    try {
      this.add(path);
    } catch (e) {
      this.fail(`cannot watch ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }

  /**
   * Watch what `path` names now, if anything (a file's link count changes unseen by its
   * directory's watch); nothing there, or a dangling or looping symlink, is no failure: the watch
   * of the directory holding the name sees it appear.
   */
  name(path: string): void {
    if (this.why) return;
    try {
      this.add(path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'ELOOP') this.fail(`cannot watch ${path}: ${code ?? (e as Error).message}`);
    }
  }

  /** The file system holding `real` (a real path) reports every change here. */
  local(real: string): void {
    const table = (this.table ??= mounts(this.mountTable));
    const holder = table.filter((m) => within(real, m.point)).sort((a, b) => b.point.length - a.point.length)[0];
    if (holder && !LOCAL_FILE_SYSTEMS.has(holder.type)) this.fail(`${holder.point} is a ${holder.type} file system (changes made elsewhere are not reported)`);
  }

  private add(path: string): void {
    if (this.watchers.length >= this.budget) {
      this.exhausted = true;
      return this.fail(`more than ${this.budget} directories to watch`);
    }
    const w = watch(path, { persistent: false }, () => TreeWatch.event(this));
    w.on('error', () => this.fail('a watch failed'));
    this.watchers.push(w);
  }

  /**
   * Pin the tree at `path` for a search: open it, remember which directory the path leads to
   * (checked again before reuse) and watch it. A path that is no directory is not searched; its
   * parent is then watched (pinned likewise) for one to appear. Undefined: no directory there.
   */
  pin(path: string): PinnedTree | undefined {
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
    } catch {
      if (dirname(path) === path) this.fail(`cannot open ${path}`);
      else this.pin(dirname(path))?.close();
      return undefined;
    }
    try {
      const st = fstatSync(fd, { bigint: true });
      this.pins.push({ path, dev: st.dev, ino: st.ino });
      this.checkFileSystems(path);
    } catch (e) {
      this.fail(`cannot pin ${path}: ${(e as Error).message}`);
    }
    const at = `/proc/${process.pid}/fd/${fd}`;
    this.dir(at);
    return { at, close: () => closeSync(fd) };
  }

  /** Watch `dir` and the directories below it, `depth` levels down, each before it is read. */
  tree(dir: string, depth: number): void {
    this.dir(dir);
    if (depth <= 0 || this.why) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      return this.fail(`cannot read ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    for (const e of entries) if (e.isDirectory()) this.tree(join(dir, e.name), depth - 1);
  }

  /** The file systems of `path` and of everything mounted below it report every change here. */
  private checkFileSystems(path: string): void {
    const real = realpathSync(path);
    const table = mounts(this.mountTable);
    const holder = table.filter((m) => within(real, m.point)).sort((a, b) => b.point.length - a.point.length)[0];
    for (const m of [...(holder ? [holder] : []), ...table.filter((m) => within(m.point, real))]) {
      if (!LOCAL_FILE_SYSTEMS.has(m.type)) return this.fail(`${m.point} is a ${m.type} file system (changes made elsewhere are not reported)`);
    }
  }

  /**
   * Undefined when every watched tree is as it was searched; else why not. Changes complete
   * before this call all show: the kernel queues each event when the change is made, in order,
   * and the fence file written here comes back through the same queue after them.
   */
  async check(): Promise<string | undefined> {
    await TreeWatch.checkAll([this]);
    return this.why;
  }

  /**
   * check() for several watches with one fence: all of this process's watches share one inotify
   * queue (libuv's, one per event loop), so when the fence's event comes back every change made
   * before it has been delivered to every watch. Each watch's `stale` says the outcome.
   */
  static async checkAll(watches: readonly TreeWatch[]): Promise<void> {
    const live = watches.filter((w) => !w.why);
    if (!live.length) return;
    let table: string | undefined;
    try {
      table = readFileSync('/proc/self/mountinfo', 'utf8');
    } catch (e) {
      for (const w of live) w.fail(`cannot check: ${(e as Error).message}`);
      return;
    }
    for (const w of live) w.checkPins(table);
    const fencer = live.find((w) => !w.why);
    if (!fencer) return;
    const why = await fencer.fenceBack();
    for (const w of live) {
      if (why) w.fail(why);
      w.overflowCheck();
      w.seen = delivered;
    }
  }

  /** The mount table is the one watched under, and each pinned path still leads to its directory. */
  private checkPins(table: string): void {
    try {
      if (table !== this.mountTable) this.fail('the mount table changed');
      for (const p of this.pins) {
        const st = statSync(p.path, { bigint: true, throwIfNoEntry: false });
        if (!st || st.dev !== p.dev || st.ino !== p.ino) this.fail(`${p.path} now leads to another directory`);
      }
    } catch (e) {
      this.fail(`cannot check: ${(e as Error).message}`);
    }
  }

  /** Write a fence file and wait for its event; why not, if it did not come back. */
  private async fenceBack(): Promise<string | undefined> {
    const name = nodeCrypto().randomBytes(9).toString('base64url');
    try {
      writeFileSync(join(this.fenceDir, name), '');
    } catch (e) {
      return `cannot write the fence: ${(e as Error).message}`;
    }
    // Its event is delivered on a later turn of the loop: the waiter is in place before.
    const arrived = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), FENCE_TIMEOUT_MS);
      this.fenceWaiter = { name, done: () => { clearTimeout(timer); resolve(true); } };
    });
    this.fenceWaiter = undefined;
    try { unlinkSync(join(this.fenceDir, name)); } catch { /* removed with the directory */ }
    return arrived ? undefined : 'the fence did not come back (events were lost)';
  }

  private release(): void {
    for (const w of this.watchers.splice(0)) w.close();
  }

  close(): void {
    this.why ??= 'closed';
    open.delete(this);
    this.release();
    this.fence.close();
    removeTree(this.fenceDir);
  }
}
