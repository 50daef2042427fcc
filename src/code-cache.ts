// V8 code cache for srt's CLI bundle. Node 20 compiles every module from source at each start and
// has no compile cache of its own (loading srt's chunks as ES modules, compiled from source, cost
// a third of `srt -- true`). The CLI is therefore a CommonJS bundle (dist/bundle/*.cjs), which
// vm.Script can compile with cached data, and bin/srt loads its chunks through this hook: each chunk
// is compiled with the bytecode V8 produced for it in an earlier run, and a chunk compiled
// without one has its bytecode (including the functions that run used) written at exit.
//
// Bytecode is code srt runs outside any sandbox, so an entry is trusted only as far as its
// location: ~/.srt/cache/code (~/.srt is never writable from a sandbox). V8 checks an entry
// against its source only by length, so an entry is named by a hash of the chunk's exact source
// and of the node that made it, and it is used only if it and the directories above it up to
// ~/.srt belong to this user and nobody else may write them (`sudo -E srt` with another user's
// HOME must not run that user's bytecode). Any failure means compiling from source, never an error.

import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire, Module } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { Script } from 'node:vm';

/** Past this many entries the directory is emptied rather than grown (each srt build adds its chunks). */
const MAX_ENTRIES = 200;

/** Set to any value, chunks are compiled from source and nothing is cached (benchmarks, debugging). */
export const NO_CODE_CACHE_ENV = 'SRT_NO_CODE_CACHE';

interface CompiledChunk {
  script: Script;
  entry: string;
}

export interface NodeIdentity { version: string; arch: string; execArgv: readonly string[]; nodeOptions: string }

/**
 * An entry's file name: the chunk's exact source and the node that compiles it. V8 rejects
 * bytecode of another node or other V8 flags; naming entries by them too keeps two nodes (or flag
 * sets) from overwriting each other's entries at every run.
 */
export function entryName(content: string, node: NodeIdentity): string {
  return createHash('sha256').update(`${node.version}\0${node.arch}\0${node.execArgv.join(' ')}\0${node.nodeOptions}\0`).update(content).digest('hex');
}

/** The cache directory's components from ~/.srt down, as the trust check walks them. */
export function cacheDirs(home: string): string[] {
  const srt = join(home, '.srt');
  return [srt, join(srt, 'cache'), join(srt, 'cache', 'code')];
}

/** What `srt doctor` says about the cache in `home`: why it is not used, if it is not. */
export function codeCacheState(home: string): { used: true; entries: number } | { used: false; why: string; path?: string } {
  if (process.env[NO_CODE_CACHE_ENV] !== undefined) return { used: false, why: `${NO_CODE_CACHE_ENV} is set` };
  if (typeof process.geteuid !== 'function') return { used: false, why: 'this platform has no user ids' };
  const dirs = cacheDirs(home);
  for (const d of dirs) {
    const why = untrustedDir(d, process.geteuid());
    if (why === 'missing') return { used: true, entries: 0 }; // made by the next run
    if (why) return { used: false, why, path: d };
  }
  return { used: true, entries: readdirSync(dirs[dirs.length - 1]!).filter((n) => !n.endsWith('.tmp')).length };
}

/** A directory or file only this user can change: owned by them, writable by no one else. */
function ownedAlone(st: { uid: number; mode: number }, uid: number): boolean {
  return st.uid === uid && (st.mode & 0o022) === 0;
}

/** Why `dir` cannot hold trusted entries, or undefined when it can (not followed if a symlink). */
function untrustedDir(dir: string, uid: number): 'missing' | 'not a directory' | 'not yours' | 'others may write it' | undefined {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) return 'missing';
  if (!st.isDirectory()) return 'not a directory';
  if (ownedAlone(st, uid)) return undefined;
  return st.uid !== uid ? 'not yours' : 'others may write it';
}

function trustedDirs(dirs: readonly string[], uid: number): boolean {
  return dirs.every((d) => untrustedDir(d, uid) === undefined);
}

/** The entry's bytes, if it is a regular file only this user can change (read without following a
 *  link; opened non-blocking, since opening a FIFO there would wait for a writer forever). */
function readEntry(path: string, uid: number): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || !ownedAlone(st, uid)) return undefined;
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Compile and run srt's chunks (files directly in `bundleDir`) with cached bytecode from `home`. */
export function installCodeCache(bundleDir: string, home: string | undefined): void {
  if (process.env[NO_CODE_CACHE_ENV] !== undefined || !home || typeof process.geteuid !== 'function') return;
  const uid = process.geteuid();
  const dirs = cacheDirs(home);
  const dir = dirs[dirs.length - 1]!;
  const trusted = trustedDirs(dirs, uid);
  const node = { version: process.version, arch: process.arch, execArgv: process.execArgv, nodeOptions: process.env.NODE_OPTIONS ?? '' };
  const prefix = bundleDir.endsWith(sep) ? bundleDir : bundleDir + sep;
  const toWrite: CompiledChunk[] = [];
  const proto = Module.prototype as unknown as { _compile(content: string, filename: string): unknown };
  const compile = proto._compile;
  proto._compile = function (this: Module, content: string, filename: string) {
    if (!filename.startsWith(prefix) || filename.slice(prefix.length).includes(sep)) return compile.call(this, content, filename);
    const entry = join(dir, entryName(content, node));
    const cachedData = trusted ? readEntry(entry, uid) : undefined;
    // No import() in a chunk: a script compiled from cached data has no dynamic-import callback
    // in Node 20 (the bundle is checked for it: test/e2e/code-cache.test.ts).
    const script = new Script(Module.wrap(content), { filename, cachedData });
    if (!cachedData || script.cachedDataRejected) toWrite.push({ script, entry });
    const fn = script.runInThisContext() as (...a: unknown[]) => unknown;
    return fn.call(this.exports, this.exports, createRequire(filename), this, filename, dirname(filename));
  };
  // Inside a sandbox ~/.srt is read-only: trying would only have the supervisor report it.
  if (process.env.SRT_SANDBOX === '1') return;
  process.once('exit', () => {
    if (toWrite.length > 0) write(dirs, uid, toWrite);
  });
}

function write(dirs: readonly string[], uid: number, chunks: readonly CompiledChunk[]): void {
  for (const d of dirs) {
    try { mkdirSync(d, { mode: 0o700 }); } catch { /* exists (checked below) or cannot be made */ }
  }
  try {
    if (!trustedDirs(dirs, uid)) return;
    const dir = dirs[dirs.length - 1]!;
    if (readdirSync(dir).length + chunks.length > MAX_ENTRIES) {
      for (const name of readdirSync(dir)) rmSync(join(dir, name), { force: true });
    }
    for (const { script, entry } of chunks) {
      const tmp = `${entry}.${process.pid}.tmp`;
      try {
        writeFileSync(tmp, script.createCachedData(), { mode: 0o600, flag: 'wx' });
        renameSync(tmp, entry);
      } catch (e) {
        rmSync(tmp, { force: true });
        throw e;
      }
    }
  } catch { /* read-only (inside a sandbox) or full: compiled from source next time */ }
}
