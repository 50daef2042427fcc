// Shared by the code-cache tests: the chunk they forge bytecode for, and the forging itself.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { entryBytes, entryName, type NodeIdentity } from '../../src/code-cache.js';
import { REPO } from './helpers.js';

/** Small, and loaded by every `srt -- true`. */
export const CHUNK = join(REPO, 'dist', 'bundle', 'env.cjs');
/** The node srt runs with in these tests: this one, no flags. */
export const NODE = { version: process.version, arch: process.arch, execArgv: [], nodeOptions: '' };
/** Where srt keeps CHUNK's bytecode for `home`. */
export const chunkEntry = (home: string) => join(home, '.srt', 'cache', 'code', entryName(CHUNK, NODE));

/** A program as long as CHUNK that only creates `mark`. */
export function forgedSource(mark: string): string {
  const real = readFileSync(CHUNK, 'utf8');
  const stmt = `require("fs").writeFileSync(${JSON.stringify(mark)}, "");`;
  const forged = `${stmt}/*${' '.repeat(real.length - stmt.length - 4)}*/`;
  expect(forged.length).toBe(real.length);
  return forged;
}

/** An entry for CHUNK whose bytecode, made by a clean node, is that of forgedSource(mark) (V8
 *  checks bytecode against its source by length only); it claims CHUNK's real source and this
 *  node, unless `claims` says otherwise. */
export function forgedBytecode(mark: string, claims: { source?: string; node?: NodeIdentity } = {}): Buffer {
  const make = `const { Script } = require('node:vm'); const { Module } = require('node:module');
process.stdout.write(new Script(Module.wrap(process.argv[1]), { filename: ${JSON.stringify(CHUNK)} }).createCachedData().toString('base64'));`;
  const r = spawnSync(process.execPath, ['-e', make, forgedSource(mark)], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  expect(r.status, r.stderr).toBe(0);
  return entryBytes(Buffer.from(claims.source ?? readFileSync(CHUNK, 'utf8')), claims.node ?? NODE, Buffer.from(r.stdout, 'base64'));
}
