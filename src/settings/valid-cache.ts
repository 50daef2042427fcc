// Settings files srt has validated before, remembered by content. Loading zod and checking a
// document costs about as much as starting node itself, and a settings file rarely changes
// between runs. An entry is an empty file in ~/.srt/cache/valid/ (read as every cache is:
// platform/private-cache.ts) named by a hash of the schema module's code and the file's bytes: a
// changed file, or an srt whose schema changed, validates again. Failing to record one only
// costs the time.

import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeCrypto } from '../node-crypto.js';
import { readCacheFile, prepareCacheDir, writeCacheFile } from '../platform/private-cache.js';
import { SCHEMA_MODULE_URL } from './schema.js';

/** Past this many entries the directory is emptied rather than grown (each edit adds one). */
const MAX_ENTRIES = 256;

let schemaHash: string | undefined;

function entryName(fileSha256: string): string {
  const { createHash } = nodeCrypto();
  schemaHash ??= createHash('sha256').update(readFileSync(fileURLToPath(SCHEMA_MODULE_URL))).digest('hex');
  return createHash('sha256').update(`${schemaHash}\0${fileSha256}`).digest('hex');
}

export interface ValidCache {
  has(fileSha256: string): boolean;
  add(fileSha256s: string[]): void;
}

export function validCache(home: string): ValidCache {
  const dir = join(home, '.srt', 'cache', 'valid');
  return {
    has: (sha) => readCacheFile(home, join(dir, entryName(sha))) !== undefined,
    add: (shas) => {
      if (shas.length === 0 || !prepareCacheDir(home, dir)) return;
      try {
        const names = readdirSync(dir);
        if (names.length + shas.length > MAX_ENTRIES) for (const name of names) rmSync(join(dir, name), { force: true });
      } catch { /* unlistable: added as it is */ }
      for (const sha of shas) writeCacheFile(home, join(dir, entryName(sha)), '');
    },
  };
}
