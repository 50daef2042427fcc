// Removing a tree the sandboxed command built: it controls everything in it (modes, depth,
// symlinks). Node's rmSync works by path and fails on trees deeper than PATH_MAX or directories
// left without permissions; coreutils' rm and chmod walk by descriptor (fts) and do not.

import { spawnSync } from 'node:child_process';
import { lstatSync, rmSync, unlinkSync } from 'node:fs';
import { findSystemTool } from './deps.js';

/**
 * Remove `path` and everything below it, never following a symlink. Synchronous (it runs from
 * exit and signal handlers). Returns null when the path is gone, else why it is not.
 */
export function removeTree(path: string): string | null {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch { /* too deep, or a directory without permissions: the system tools below */ }
  if (!lstatSync(path, { throwIfNoEntry: false })) return null;
  const chmod = findSystemTool('chmod');
  const rm = findSystemTool('rm');
  if (!chmod || !rm) return 'chmod/rm not found in the system directories';
  // -R without -L/-H: symlinks met in the walk are not followed (GNU chmod does not change them).
  spawnSync(chmod, ['-R', 'u+rwx', '--', path], { stdio: 'ignore' });
  // Never into another file system mounted below (GNU --one-file-system, BSD/macOS -x).
  const oneFs = process.platform === 'linux' ? '--one-file-system' : '-x';
  const r = spawnSync(rm, ['-rf', oneFs, '--', path], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (!lstatSync(path, { throwIfNoEntry: false })) return null;
  return r.stderr.trim().split('\n')[0] || `rm exited with ${r.status}`;
}

/** Remove the file `path` if it is there (one unlink: rmSync stats it first and goes through its
 *  tree removal); any other error is thrown. */
export function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}
