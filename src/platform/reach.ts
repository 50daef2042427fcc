// What the sandboxed command may do to a host file, as the kernel judges it inside the sandbox:
// it runs with the caller's uid and no capability (bubblewrap's user namespace grants a root
// caller none over files it does not own), so a root caller's search sees more than the
// command can ever reach.

import { accessSync, constants, statSync, type Stats } from 'node:fs';

/**
 * May the command search (`x`) or write (`w`) what `st` describes? It may whatever its owner may
 * (it can chmod what it owns), otherwise only what a group or other bit grants. The group bit
 * counts for everyone: it is also the mask of an ACL that may name the caller, which srt cannot
 * read, and judging a path out of reach when it is not would leave it unprotected.
 */
export function sandboxMay(st: Stats, access: 'x' | 'w'): boolean {
  return st.uid === process.getuid?.() || (st.mode & (access === 'x' ? 0o011 : 0o022)) !== 0;
}

/**
 * May the command write into the directory `path` as it stands (without a chmod first)? For a
 * caller other than root, access() is the kernel's own answer, ACLs included. Root's
 * capabilities stay outside, so inside it is held to the mode bits, as anyone else.
 */
export function commandMayWrite(path: string): boolean {
  try {
    accessSync(path, constants.W_OK); // a read-only mount, or no permission
  } catch {
    return false;
  }
  if (process.geteuid?.() !== 0) return true;
  const st = statSync(path);
  return (st.mode & (st.uid === 0 ? 0o200 : st.gid === 0 ? 0o020 : 0o002)) !== 0;
}
