// The per-user key stable sentinels derive from (credentials/sentinels.ts keyedRandom):
// ~/.srt/keys/sentinel.key, 32 random bytes made on first use, mode 0600 in a 0700 directory.
// No sandbox can read it: the directory is hidden in every run like a denied credential file
// (profiles/access.ts srtSecretRules), filesystem.disabled included, so it is made at the start
// of every run. The key counts only when it and every directory from ~/.srt down to it belong to
// this user and nobody else may write them, and nobody else may read the key; it is read without
// following a symlink. Else srt says why, and this run's sentinels are new ones.

import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, linkSync, mkdirSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { srtSecretsDir } from '../profiles/access.js';
import { cacheDirChain, untrustedDir } from './private-cache.js';

const SENTINEL_KEY_BYTES = 32;

export function sentinelKeyPath(home: string): string {
  return join(srtSecretsDir(home), 'sentinel.key');
}

/** Read the key through `fd`: a regular file of this user's that nobody else may read, of the right size. */
function readKey(fd: number, uid: number, path: string): Buffer | string {
  const st = fstatSync(fd);
  if (!st.isFile()) return `${path} is not a regular file; remove it (srt makes a new key)`;
  if (st.uid !== uid) return `${path} belongs to uid ${st.uid}, not you; remove it (srt makes a new key)`;
  if ((st.mode & 0o077) !== 0) return `others may read or change ${path} (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`;
  if (st.size !== SENTINEL_KEY_BYTES) return `${path} is not a key srt made (${st.size} bytes); remove it (srt makes a new key)`;
  const key = Buffer.alloc(SENTINEL_KEY_BYTES);
  if (readSync(fd, key, 0, key.length, 0) !== key.length) return `${path} could not be read whole`;
  return key;
}

/**
 * The sentinel key, made when missing (a temporary file linked into place: two runs that start
 * together end up with the same key), or why there is none.
 */
export function loadSentinelKey(home: string): { key: Buffer } | { problem: string } {
  const uid = process.geteuid?.();
  if (uid === undefined) return { problem: 'this platform has no user ids to check the key against' };
  const dir = srtSecretsDir(home);
  for (const d of cacheDirChain(home, dir)) {
    try { mkdirSync(d, { mode: 0o700 }); } catch { /* exists, or cannot be made: said below */ }
  }
  for (const d of cacheDirChain(home, dir)) {
    const why = untrustedDir(d, uid);
    if (why) return { problem: `${d}: ${why === 'missing' ? 'cannot be made' : why}` };
  }
  const path = sentinelKeyPath(home);
  const open = () => openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  let fd: number;
  try {
    fd = open();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return { problem: `${path} is a symbolic link; remove it (srt makes a new key)` };
    if (code !== 'ENOENT') return { problem: `${path}: ${code ?? (e as Error).message}` };
    const tmp = `${path}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, randomBytes(SENTINEL_KEY_BYTES), { mode: 0o600, flag: 'wx' });
      try { linkSync(tmp, path); } catch (l) { if ((l as NodeJS.ErrnoException).code !== 'EEXIST') throw l; }
      fd = open();
    } catch (w) {
      return { problem: `cannot make ${path}: ${(w as NodeJS.ErrnoException).code ?? (w as Error).message}` };
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  try {
    const key = readKey(fd, uid, path);
    return typeof key === 'string' ? { problem: key } : { key };
  } finally {
    closeSync(fd);
  }
}
