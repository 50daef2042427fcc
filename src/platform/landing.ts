// Where a path lands on this host once every symlink is followed, including through a
// missing tail (a dangling symlink's target is where a create would land).
//
// On Linux the walk holds each directory open (O_PATH) and looks up the next name in that very
// directory, never NOFOLLOW-less by path: a concurrent rename or symlink swap of a component can
// make the answer stale, but never a mix of two trees (a path whose parts came from different
// moments). What it reports for an existing path, with its device and inode, was at that path
// when it looked. Elsewhere (macOS) the walk is by path, one lstat per component.

import { accessSync, closeSync, constants, fstatSync, lstatSync, opendirSync, openSync, readlinkSync, statSync, type BigIntStats, type Dirent, type OpenDirOptions } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { SnapshotEntry } from '../profiles/bwrap-facts.js';
import type { FileId, Landing } from '../profiles/landing.js';

const MAX_LINKS = 40;
/** Linux's O_PATH (the same on x86_64 and aarch64); Node does not export it. */
const O_PATH = 0o10000000;
const PINNED = process.platform === 'linux';

const idOf = (st: BigIntStats): FileId => ({ dev: String(st.dev), ino: String(st.ino) });
/** A directory's entry as a path (names here are single components, never `.` or `..`). */
const child = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/** One directory entry, looked up in an open directory (or by path off Linux). */
interface Dir {
  path: string;
  fd: number; // -1 off Linux
  /** Held by a resolver for later walks (landingResolver): not closed by this one. */
  shared?: boolean;
}

/** Directories a resolver keeps open, by real path (each reached by looking up real names only). */
type DirCache = Map<string, number>;
/** Past this many held directories a resolver holds no more (descriptors are finite). */
const MAX_HELD = 4096;

function lookup(dir: Dir, name: string): { st: BigIntStats; fd: number } {
  if (!PINNED) return { st: lstatSync(join(dir.path, name), { bigint: true }), fd: -1 };
  const fd = openSync(`/proc/self/fd/${dir.fd}/${name}`, O_PATH | constants.O_NOFOLLOW);
  try {
    return { st: fstatSync(fd, { bigint: true }), fd };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** The last name of a walk needs no descriptor of its own: one lstat in the held directory. */
function lookupLast(dir: Dir, name: string): { st: BigIntStats; fd: number } {
  return { st: lstatSync(PINNED ? `/proc/self/fd/${dir.fd}/${name}` : join(dir.path, name), { bigint: true }), fd: -1 };
}

function linkTarget(dir: Dir, name: string): string {
  return readlinkSync(PINNED ? `/proc/self/fd/${dir.fd}/${name}` : join(dir.path, name));
}

function rootDir(): Dir {
  return { path: '/', fd: PINNED ? openSync('/', O_PATH | constants.O_DIRECTORY) : -1 };
}

export function resolveLanding(path: string): Landing {
  return walk(path, undefined);
}

/**
 * Told before a walk looks `name` up in a directory (held open at `fd`, off Linux -1), so that a
 * watch set then sees every later change of what the lookup finds (KeptLandings).
 */
export type BeforeLookup = (dir: { path: string; fd: number }, name: string) => void;

/**
 * resolveLanding for many paths (a policy's literal paths: 1,000 denied files cost 7,000 lookups
 * one by one): the directories on the way are held open and shared, so each is looked up once and
 * every name below it in that very directory, as one walk would. `close` releases them.
 */
export function landingResolver(before?: BeforeLookup): { resolve: (path: string) => Landing; close: () => void } {
  if (!PINNED) return { resolve: (path) => walk(path, undefined, before), close: () => {} };
  const cache: DirCache = new Map();
  let closed = false;
  return {
    resolve: (path) => walk(path, closed ? undefined : cache, before),
    close: () => {
      closed = true;
      for (const fd of cache.values()) closeSync(fd);
      cache.clear();
    },
  };
}

/** The walk starts at the deepest held directory on `path`'s way, with those above it. */
function heldPrefix(components: string[], cache: DirCache | undefined): Dir[] {
  if (!cache) return [rootDir()];
  let root = cache.get('/');
  if (root === undefined) {
    root = rootDir().fd;
    cache.set('/', root);
  }
  const stack: Dir[] = [{ path: '/', fd: root, shared: true }];
  for (const name of components) {
    const next = child(stack[stack.length - 1]!.path, name);
    const fd = cache.get(next);
    if (fd === undefined) break;
    stack.push({ path: next, fd, shared: true });
  }
  return stack;
}

function walk(path: string, cache: DirCache | undefined, before?: BeforeLookup): Landing {
  const components = resolve(path).split('/').filter(Boolean);
  const stack: Dir[] = heldPrefix(components, cache);
  let pending = components.slice(stack.length - 1);
  /** The final component's stat, once reached (the top of the stack is it). */
  let last: BigIntStats | undefined;
  let links = 0;
  const via: NonNullable<Landing['via']> = [];
  const top = () => stack[stack.length - 1]!;
  const done = (l: Landing): Landing => (via.length ? { ...l, via } : l);
  const drop = (d: Dir) => { if (d.fd >= 0 && !d.shared) closeSync(d.fd); };
  const release = () => { for (const d of stack) drop(d); stack.length = 0; };
  try {
    while (pending.length > 0) {
      const name = pending.shift()!;
      if (name === '.') continue;
      if (name === '..') {
        if (stack.length > 1) drop(stack.pop()!);
        last = undefined;
        continue;
      }
      const cur = top();
      const next = child(cur.path, name);
      before?.(cur, name);
      let found;
      try {
        found = pending.length === 0 ? lookupLast(cur, name) : lookup(cur, name);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return done({ real: join(next, ...pending), kind: 'missing', firstMissing: next });
        if (code === 'ENOTDIR') return done({ real: join(next, ...pending), kind: 'impossible', why: 'not-dir', blockedBy: cur.path });
        // EACCES: `cur` cannot be searched (by srt, nor by the command: the same user).
        return done({ real: join(next, ...pending), kind: 'impossible', why: 'unreadable', blockedBy: cur.path });
      }
      const { st } = found;
      if (st.isSymbolicLink()) {
        if (found.fd >= 0) closeSync(found.fd);
        if (++links > MAX_LINKS) return done({ real: next, kind: 'impossible', why: 'loop' });
        let target: string;
        try {
          target = linkTarget(cur, name);
        } catch {
          // Replaced between the two looks: nothing stable to report.
          return done({ real: join(next, ...pending), kind: 'impossible', why: 'unreadable', blockedBy: cur.path });
        }
        // A link root made in a directory only root can write: part of the system's layout
        // (/var/run -> /run), not something a sandboxed command could have planted.
        let system = false;
        try {
          system = st.uid === 0n && (cur.fd >= 0 ? fstatSync(cur.fd) : lstatSync(cur.path)).uid === 0;
        } catch { /* not judged */ }
        via.push({ link: next, target, system });
        pending = [...target.split('/').filter(Boolean), ...pending];
        if (isAbsolute(target)) {
          release();
          stack.push(rootDir());
        }
        last = undefined;
        continue;
      }
      if (!st.isDirectory() && pending.length > 0) {
        if (found.fd >= 0) closeSync(found.fd);
        return done({ real: join(next, ...pending), kind: 'impossible', why: 'not-dir', blockedBy: next });
      }
      const held = cache && found.fd >= 0 && st.isDirectory() && cache.size < MAX_HELD && !cache.has(next);
      if (held) cache.set(next, found.fd);
      stack.push({ path: next, fd: found.fd, ...(held ? { shared: true } : {}) });
      last = st;
    }
    const cur = top();
    const st = last ?? (cur.fd >= 0 ? fstatSync(cur.fd, { bigint: true }) : statSync(cur.path, { bigint: true }));
    return done(st.isDirectory()
      ? { real: cur.path, kind: 'dir', id: idOf(st) }
      : { real: cur.path, kind: 'file', nlink: Number(st.nlink), id: idOf(st) });
  } finally {
    release();
  }
}

/**
 * The device and inode at an absolute path that must hold no symlink at all (a path srt planned
 * as real), looked up as resolveLanding does; null when it does not exist there (any more), or a
 * component is a symlink now, or cannot be searched.
 */
export function identifyReal(path: string): FileId | null {
  return realId(resolveLanding(path), path);
}

/** The identity a landing gives `path` when it reached it through no symlink at all. */
function realId(l: Landing, path: string): FileId | null {
  return (l.kind === 'file' || l.kind === 'dir') && !l.via?.length && l.real === resolve(path) ? l.id ?? null : null;
}

/**
 * identifyReal for many paths at once (the mount plan: a snapshot's entries share a directory),
 * through one landingResolver: each directory on the way is looked up once, held open and every
 * name below it looked up in that very directory, so an answer is what was there when srt
 * looked, never a mix of two trees. `close` releases the directories.
 */
export function realIdentifier(): { identify: (path: string) => FileId | null; close: () => void } {
  const resolver = landingResolver();
  return { identify: (path) => realId(resolver.resolve(path), path), close: resolver.close };
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
/** More entries than srt binds one by one in a snapshot (each is a mount and bwrap arguments). */
export const MAX_SNAPSHOT_ENTRIES = 1000;

/**
 * A directory's entries for a snapshot: names with their kinds and symlink targets; names that
 * are not valid UTF-8 (which bwrap cannot be given) apart. `too-large` past `max` entries, read
 * no further: what a directory holds beyond that is never looked at.
 */
export function listSnapshot(dir: string, max = MAX_SNAPSHOT_ENTRIES): { entries: SnapshotEntry[]; skipped: Buffer[] } | 'too-large' {
  const list: Dirent<Buffer>[] = [];
  // Node reads names as bytes with `encoding: 'buffer'`, which its types leave out for opendir.
  const d = opendirSync(dir, { encoding: 'buffer', bufferSize: 128 } as unknown as OpenDirOptions);
  try {
    for (let e = d.readSync(); e; e = d.readSync()) {
      if (list.length === max) return 'too-large';
      list.push(e as unknown as Dirent<Buffer>);
    }
  } finally {
    d.closeSync();
  }
  const entries: SnapshotEntry[] = [];
  const skipped: Buffer[] = [];
  for (const e of list) {
    let name: string;
    try { name = STRICT_UTF8.decode(e.name); } catch { skipped.push(e.name); continue; }
    if (e.isSymbolicLink()) {
      try { entries.push({ name, kind: 'symlink', target: readlinkSync(join(dir, name)) }); } catch { /* gone meanwhile */ }
    } else {
      entries.push({ name, kind: e.isDirectory() ? 'dir' : 'file' });
    }
  }
  return { entries, skipped };
}

/**
 * replaceableNames' verdicts kept from an earlier command: only for directories watched before
 * they were judged (a chmod, chown or ACL change of a watched directory is an event: the verdicts
 * go with the landings then).
 */
export interface KeptVerdicts {
  verdicts: Map<string, boolean>;
  watched: (dir: string) => boolean;
}

/**
 * For every directory on the way to these landings (and to the directory a deny could not look
 * into): the paths whose name a program of this user could replace, rename or create in its
 * directory, outside the sandbox. Root can anywhere; anyone in a directory they own (they may
 * chmod it) or can write. A sticky directory (/tmp) counts as not: it is shared by every user,
 * and srt never makes it a snapshot.
 */
export function replaceableNames(landings: Landing[], kept?: KeptVerdicts): Set<string> {
  const uid = process.getuid?.() ?? -1;
  const dirs = new Map<string, boolean>();
  const changeable = (dir: string): boolean => {
    let v = dirs.get(dir) ?? kept?.verdicts.get(dir);
    if (v !== undefined) return v;
    v = false;
    try {
      const st = lstatSync(dir);
      if (st.isDirectory() && !(st.mode & 0o1000)) { // not sticky
        if (uid === 0 || st.uid === uid) v = true;
        else {
          try { accessSync(dir, constants.W_OK); v = true; } catch { /* not writable */ }
        }
      }
    } catch { /* gone or unreadable: nothing to pin */ }
    dirs.set(dir, v);
    if (kept?.watched(dir)) kept.verdicts.set(dir, v);
    return v;
  };
  const out = new Set<string>();
  for (const l of landings) {
    for (const p of [l.real, l.firstMissing, l.blockedBy]) {
      for (let c = p; c && c !== '/'; c = dirname(c)) {
        if (out.has(c)) break;
        if (changeable(dirname(c))) out.add(c);
      }
    }
  }
  return out;
}
