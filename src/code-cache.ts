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
// only by length, so an entry holds the chunk's exact source and the node that made it, and is
// used only when both match byte for byte (a comparison, where a hash of every chunk would load
// node:crypto at every start). Any failure means compiling from source, never an error.

import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { basename, dirname, join, sep } from 'node:path';
import { Script } from 'node:vm';
import { cacheDirChain, cacheReader, fnv64, prepareCacheDir, untrustedDir, writeCacheFile } from './platform/private-cache.js';

/** Past this many entries the directory is emptied rather than grown (each srt install adds its chunks). */
const MAX_ENTRIES = 200;

/** Set to any value, chunks are compiled from source and nothing is cached (benchmarks, debugging). */
export const NO_CODE_CACHE_ENV = 'SRT_NO_CODE_CACHE';

interface CompiledChunk {
  script: Script;
  entry: string;
  source: Buffer;
}

export interface NodeIdentity { version: string; arch: string; execArgv: readonly string[]; nodeOptions: string }

/** What an entry must have been made by: V8 rejects bytecode of another node or other V8 flags. */
function identity(node: NodeIdentity): string {
  return `${node.version}\0${node.arch}\0${node.execArgv.join(' ')}\0${node.nodeOptions}`;
}

const ENTRY_NAME = /^[\w.-]+\.cjs-[0-9a-f]{16}$/;

/**
 * An entry's file name: the chunk's name, then a hash of its path and of the node that compiles
 * it. Two installs of srt, or two nodes (or flag sets), keep apart and do not overwrite each
 * other's entries at every run; a new build at the same place replaces its entries.
 */
export function entryName(chunkPath: string, node: NodeIdentity): string {
  return `${basename(chunkPath)}-${fnv64(`${identity(node)}\0${chunkPath}`)}`;
}

/** An entry's bytes: the node's identity and the chunk's source, each after its length, then the bytecode. */
export function entryBytes(source: Buffer, node: NodeIdentity, bytecode: Buffer): Buffer {
  const id = Buffer.from(identity(node));
  const head = Buffer.alloc(8);
  head.writeUInt32LE(id.length, 0);
  head.writeUInt32LE(source.length, 4);
  return Buffer.concat([head, id, source, bytecode]);
}

/** The bytecode of `entry` when it was made by this node from exactly `source`. */
export function entryBytecode(entry: Buffer, source: Buffer, node: NodeIdentity): Buffer | undefined {
  if (entry.length < 8) return undefined;
  const idLength = entry.readUInt32LE(0);
  const sourceAt = 8 + idLength;
  const bytecodeAt = sourceAt + entry.readUInt32LE(4);
  if (bytecodeAt >= entry.length || bytecodeAt - sourceAt !== source.length) return undefined;
  if (entry.toString('utf8', 8, sourceAt) !== identity(node)) return undefined;
  return source.equals(entry.subarray(sourceAt, bytecodeAt)) ? entry.subarray(bytecodeAt) : undefined;
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
  return { used: true, entries: readdirSync(dir).filter((n) => ENTRY_NAME.test(n)).length };
}

/** Compile and run srt's chunks (files directly in `bundleDir`) with cached bytecode from `home`. */
export function installCodeCache(bundleDir: string, home: string | undefined): void {
  if (process.env[NO_CODE_CACHE_ENV] !== undefined || !home) return;
  const dir = codeCacheDir(home);
  const node = { version: process.version, arch: process.arch, execArgv: process.execArgv, nodeOptions: process.env.NODE_OPTIONS ?? '' };
  const prefix = bundleDir.endsWith(sep) ? bundleDir : bundleDir + sep;
  const toWrite: CompiledChunk[] = [];
  // The directories are checked once, at the first chunk: no sandboxed command can replace them
  // (~/.srt is read-only in every sandbox), and no other user can make an entry that is ours.
  let read: ReturnType<typeof cacheReader> | null = null;
  // The loader's handler of .js (and .cjs) files, taken over for the chunks: this one reads a
  // chunk's bytes, compares them with the entry's and compiles exactly what it compared.
  const extensions = (Module as unknown as { _extensions: Record<string, (module: Module, filename: string) => void> })._extensions;
  const js = extensions['.js']!;
  extensions['.js'] = function (module: Module, filename: string) {
    if (!filename.startsWith(prefix) || filename.slice(prefix.length).includes(sep)) return js.call(this, module, filename);
    const source = readFileSync(filename);
    const entry = join(dir, entryName(filename, node));
    if (read === null) read = cacheReader(home, dir);
    const stored = read?.(entry);
    const cachedData = stored && entryBytecode(stored, source, node);
    // No import() in a chunk: a script compiled from cached data has no dynamic-import callback
    // in Node 20 (the bundle is checked for it: test/e2e/code-cache.test.ts).
    const script = new Script(Module.wrap(source.toString('utf8')), { filename, ...(cachedData ? { cachedData } : {}) });
    if (!cachedData || script.cachedDataRejected) toWrite.push({ script, entry, source });
    const fn = script.runInThisContext() as (...a: unknown[]) => unknown;
    fn.call(module.exports, module.exports, createRequire(filename), module, filename, dirname(filename));
  };
  // Inside a sandbox ~/.srt is read-only: trying would only have the supervisor report it.
  if (process.env.SRT_SANDBOX === '1') return;
  process.once('exit', () => {
    if (toWrite.length === 0 || !prepareCacheDir(home, dir)) return;
    try {
      // Entries of another format (an older srt's) go; a directory grown too large is emptied.
      const names = readdirSync(dir);
      const full = names.length + toWrite.length > MAX_ENTRIES;
      for (const name of names) if (full || !(ENTRY_NAME.test(name) || name.endsWith('.tmp'))) rmSync(join(dir, name), { force: true });
    } catch { /* unlistable: written as it is */ }
    for (const { script, entry, source } of toWrite) writeCacheFile(home, entry, entryBytes(source, node, script.createCachedData()));
  });
}
