// V8 code cache for srt's CLI bundle. Node 20 compiles every module from source at each start and
// has no compile cache of its own (loading srt's chunks as ES modules, compiled from source, cost
// a third of `srt -- true`). The CLI is therefore a CommonJS bundle (dist/bundle/*.cjs), which
// vm.Script can compile with cached data, and bin/srt loads its chunks through this hook: each chunk
// is compiled with the bytecode V8 produced for it in an earlier run, and a chunk compiled
// without one has its bytecode (including the functions that run used) written at exit.
//
// Bytecode is code srt runs outside any sandbox, so an entry is trusted only as far as its
// location: ~/.srt/cache/code, read as platform/private-cache.ts reads every cache (only from
// directories no one else may write, no symlink followed). V8 checks an entry against its source
// only by length, so an entry is named by a hash of the chunk's exact source and of the node that
// made it. Any failure means compiling from source, never an error.

import { createHash } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { Script } from 'node:vm';
import { cacheDirChain, prepareCacheDir, readCacheFile, untrustedDir, writeCacheFile } from './platform/private-cache.js';

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

/** Where the entries are. */
export function codeCacheDir(home: string): string {
  return join(home, '.srt', 'cache', 'code');
}

/** What `srt doctor` says about the cache in `home`: why it is not used, if it is not. */
export function codeCacheState(home: string): { used: true; entries: number } | { used: false; why: string; path?: string } {
  if (process.env[NO_CODE_CACHE_ENV] !== undefined) return { used: false, why: `${NO_CODE_CACHE_ENV} is set` };
  if (typeof process.geteuid !== 'function') return { used: false, why: 'this platform has no user ids' };
  const dir = codeCacheDir(home);
  for (const d of cacheDirChain(home, dir)) {
    const why = untrustedDir(d, process.geteuid());
    if (why === 'missing') return { used: true, entries: 0 }; // made by the next run
    if (why) return { used: false, why, path: d };
  }
  return { used: true, entries: readdirSync(dir).filter((n) => !n.endsWith('.tmp')).length };
}

/** Compile and run srt's chunks (files directly in `bundleDir`) with cached bytecode from `home`. */
export function installCodeCache(bundleDir: string, home: string | undefined): void {
  if (process.env[NO_CODE_CACHE_ENV] !== undefined || !home) return;
  const dir = codeCacheDir(home);
  const node = { version: process.version, arch: process.arch, execArgv: process.execArgv, nodeOptions: process.env.NODE_OPTIONS ?? '' };
  const prefix = bundleDir.endsWith(sep) ? bundleDir : bundleDir + sep;
  const toWrite: CompiledChunk[] = [];
  const proto = Module.prototype as unknown as { _compile(content: string, filename: string): unknown };
  const compile = proto._compile;
  proto._compile = function (this: Module, content: string, filename: string) {
    if (!filename.startsWith(prefix) || filename.slice(prefix.length).includes(sep)) return compile.call(this, content, filename);
    const entry = join(dir, entryName(content, node));
    const cachedData = readCacheFile(home, entry);
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
    if (toWrite.length === 0 || !prepareCacheDir(home, dir)) return;
    try {
      const names = readdirSync(dir);
      if (names.length + toWrite.length > MAX_ENTRIES) for (const name of names) rmSync(join(dir, name), { force: true });
    } catch { /* unlistable: written as it is */ }
    for (const { script, entry } of toWrite) writeCacheFile(home, entry, script.createCachedData());
  });
}
