// Files srt keeps between runs under ~/.srt/cache, which a later run reads back outside any
// sandbox: V8 bytecode (src/code-cache.ts), settings files known valid (settings/valid-cache.ts),
// the encoded roots of the Java trust store (proxy/trust.ts), srt-init's record of its last walk
// of a tree (platform/search.ts). ~/.srt is never writable from a sandbox; beyond that, an entry
// counts only when it and every directory from ~/.srt down to it belong to this user and nobody
// else may write them (`sudo -E srt` with another user's HOME reads nothing that user put
// there), read without following a symlink. Failing to read or to write an entry is never an
// error: the work is done again.

import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';

export type Untrusted = 'missing' | 'not a directory' | 'not yours' | 'others may write it';

const euid = (): number | undefined => (typeof process.geteuid === 'function' ? process.geteuid() : undefined);

/** A directory or file only `uid` can change: owned by it, writable by no one else. */
function ownedAlone(st: { uid: number; mode: number }, uid: number): boolean {
  return st.uid === uid && (st.mode & 0o022) === 0;
}

/** Why `dir` cannot hold trusted entries, or undefined when it can (a symlink is not followed). */
export function untrustedDir(dir: string, uid: number): Untrusted | undefined {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) return 'missing';
  if (!st.isDirectory()) return 'not a directory';
  if (ownedAlone(st, uid)) return undefined;
  return st.uid !== uid ? 'not yours' : 'others may write it';
}

/** ~/.srt and each directory below it down to `dir` (which must lie below ~/.srt). */
export function cacheDirChain(home: string, dir: string): string[] {
  const root = join(home, '.srt');
  const rel = relative(root, dir);
  if (rel.startsWith('..') || isAbsolute(rel)) throw new Error(`${dir} is not below ${root}`);
  const chain = [root];
  for (const part of rel.split(sep).filter(Boolean)) chain.push(join(chain[chain.length - 1]!, part));
  return chain;
}

/** Is every directory from ~/.srt down to `dir` trusted? */
export function trustedCacheDir(home: string, dir: string): boolean {
  const uid = euid();
  return uid !== undefined && cacheDirChain(home, dir).every((d) => untrustedDir(d, uid) === undefined);
}

/** An entry's bytes, if it and its directories are trusted; opened non-blocking (a FIFO there
 *  would wait for a writer forever) and without following a symlink. */
export function readCacheFile(home: string, path: string): Buffer | undefined {
  return cacheReader(home, dirname(path))?.(path);
}

/**
 * A reader of entries in `dir`, its directories checked once (for a caller reading many entries
 * at once, as the code cache does at start), or undefined when they are not trusted. Each entry
 * is still checked as its own: a file owned by this user that nobody else may write.
 */
export function cacheReader(home: string, dir: string): ((path: string) => Buffer | undefined) | undefined {
  const uid = euid();
  if (uid === undefined || !trustedCacheDir(home, dir)) return undefined;
  return (path) => readOwnedFile(path, uid);
}

function readOwnedFile(path: string, uid: number): Buffer | undefined {
  const fd = openOwnedFile(path, uid);
  if (fd === undefined) return undefined;
  try {
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function openOwnedFile(path: string, uid: number): number | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (st.isFile() && ownedAlone(st, uid)) return fd;
  } catch { /* missing or unreadable: no entry */ }
  if (fd !== undefined) closeSync(fd);
  return undefined;
}

/** A descriptor of an entry, if it and its directories are trusted (as readCacheFile reads
 *  one), for another process to read; the caller closes it. */
export function openCacheFile(home: string, path: string): number | undefined {
  const uid = euid();
  if (uid === undefined || !trustedCacheDir(home, dirname(path))) return undefined;
  return openOwnedFile(path, uid);
}

/** Make the directories from ~/.srt down to `dir` (private), and say whether they can be trusted. */
export function prepareCacheDir(home: string, dir: string): boolean {
  for (const d of cacheDirChain(home, dir)) {
    try { mkdirSync(d, { mode: 0o700 }); } catch { /* exists (checked below) or cannot be made */ }
  }
  return trustedCacheDir(home, dir);
}

let temps = 0;

/** A new private temporary file beside an entry, in a trusted directory, for another process
 *  to fill: `commit` renames it over the entry, `discard` removes it. */
export function cacheFileWriter(home: string, path: string): { fd: number; commit(): boolean; discard(): void } | undefined {
  if (!prepareCacheDir(home, dirname(path))) return undefined;
  const tmp = `${path}.${process.pid}.${++temps}.tmp`;
  let fd: number;
  try {
    fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch {
    return undefined;
  }
  const discard = () => {
    try { unlinkSync(tmp); } catch { /* never made or gone already */ }
  };
  return {
    fd,
    commit: () => {
      try {
        renameSync(tmp, path);
        return true;
      } catch {
        discard();
        return false;
      }
    },
    discard,
  };
}

/** Write an entry whole (a temporary name, then renamed over it) into a trusted directory;
 *  false when it could not be. */
export function writeCacheFile(home: string, path: string, data: Uint8Array | string): boolean {
  const out = cacheFileWriter(home, path);
  if (!out) return false;
  try {
    writeFileSync(out.fd, data);
  } catch {
    out.discard();
    return false;
  } finally {
    closeSync(out.fd);
  }
  return out.commit();
}

/** 64 bits of FNV-1a of a string's UTF-16 code units, as hex: only to spread entries' names,
 *  never to tell contents apart. */
export function fnv64(text: string): string {
  let lo = 0x84222325;
  let hi = 0xcbf29ce4;
  for (let i = 0; i < text.length; i++) {
    lo = (lo ^ text.charCodeAt(i)) >>> 0;
    // Multiply by the FNV prime 2^40 + 0x1b3, in 32-bit halves.
    const l = lo * 0x1b3;
    const h = hi * 0x1b3 + (lo << 8) + Math.floor(l / 0x100000000);
    lo = l >>> 0;
    hi = h >>> 0;
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}
