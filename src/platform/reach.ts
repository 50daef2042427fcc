// What the sandboxed command may do to a host file, as the kernel judges it inside the sandbox:
// it runs with the caller's uid and no capability (bubblewrap's user namespace grants a root
// caller none over files it does not own), so a root caller's search sees more than the
// command can ever reach.

import type { Stats } from 'node:fs';

/**
 * May the command search (`x`) or write (`w`) what `st` describes? It may whatever its owner may
 * (it can chmod what it owns), otherwise only what a group or other bit grants. The group bit
 * counts for everyone: it is also the mask of an ACL that may name the caller, which srt cannot
 * read, and judging a path out of reach when it is not would leave it unprotected.
 */
export function sandboxMay(st: Stats, access: 'x' | 'w'): boolean {
  return st.uid === process.getuid?.() || (st.mode & (access === 'x' ? 0o011 : 0o022)) !== 0;
}
