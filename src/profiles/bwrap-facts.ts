// What the Linux lowering needs to know about the host (gathered read-only by
// platform/linux-facts.ts): the paths and globs to resolve, and the facts that answer them.

import type { PathRule, Policy } from '../policy.js';
import { literalOf } from './access-rule.js';
import type { HostListen, RelayListen } from './init-args.js';
import type { Landing } from './landing.js';
import type { ProtectedTarget } from './protected.js';

export interface SeccompLaunch {
  helperPath: string;
  filterPath: string;
  relays: RelayListen[];
  exposes: HostListen[];
  /** The command's own pty, relayed over `channelFd`; `stdio`: which of its fds 0-2 are on it. */
  terminal?: { channelFd: number; parentStatFd: number; stdio: string };
  /** The protected-path supervisor: its rules file and the descriptor it reports on. */
  supervisor?: { rulesPath: string; reportFd: number };
  /** The descriptor srt-init waits on for srt's one byte before it starts the command (`--go-fd`):
   *  srt starts its proxy while bwrap and srt-init set the sandbox up. */
  goFd: number;
  /** The sandbox's process bound (`--max-procs`): hostProcessBound(). */
  maxProcs: number;
  /** Where srt writes the mount plan the helper checks before anything runs (`--verify`). */
  mountsPath?: string;
  /** With `mountsPath`: an empty directory srt makes in the run directory, where bwrap binds each
   *  snapshot's host directory for the helper to take its entries from (init/verify.c). */
  stageDir?: string;
}

/** An entry of a directory srt snapshots: its name and kind (`file`: anything but a directory or symlink). */
export interface SnapshotEntry {
  name: string;
  kind: 'file' | 'dir' | 'symlink';
  /** For a symlink: its target. */
  target?: string;
}

/** What the credential plan asks of the mounts (credentials/plan.ts). */
export interface CredentialMounts {
  /** Files (and globs) unreadable inside: `deny` entries and masks that fall back to deny. */
  deny: PathRule[];
  /** Files the command reads as their sentinel copy: bwrap copies it from `fd` (no host file). */
  masked: { path: string; fd: number; mode: number }[];
}

export interface BwrapFacts {
  /** Landing of every path from `literalPaths()` (keys as returned there). */
  landings: ReadonlyMap<string, Landing>;
  /** Existing matches of every glob from `globRules()`, keyed by the rule's path, as landings. */
  globMatches: ReadonlyMap<string, Landing[]>;
  /** Per glob, directories holding a name that is not valid UTF-8 (which bwrap cannot be given)
   *  that may match it: deny rules cover such a directory whole, allow rules never open it. */
  globUndecodable?: ReadonlyMap<string, Landing[]>;
  /** Per glob, directories srt could not read that may hold matches: deny rules cover them whole. */
  globUnreadable?: ReadonlyMap<string, Landing[]>;
  protectedTargets: ProtectedTarget[];
  /** When cwd is a linked worktree: the main repository's .git dir and the worktree's own git
   *  dir inside it (`.git/worktrees/<name>`), both writable apart from their protected entries. */
  worktree?: { commonDir: string; gitDir: string };
  runDir: string;
  /** The directory holding every run's directory (`~/.srt/run`): hidden, but for `runDir`, so
   *  concurrent runs never see each other's TMPDIR, filter or proxy sockets. */
  runRoot?: string;
  /** srt's own files the sandbox must read (helper, Node preload and its undici), kept readable
   *  even inside a denyRead region such as `~/` when srt is installed there. */
  runtimeFiles?: { path: string; kind: 'file' | 'dir' }[];
  tmpDir: string;
  /** A file srt owns that nobody may read (mode 000), bound over denied files: reads fail with EACCES. */
  deniedFile: string;
  /** Files inside protected directories (`.git/hooks/pre-commit`) with more than one hard link. */
  hardLinked?: ReadonlyArray<{ path: string; nlink: number }>;
  /** Literal allowRead paths that are symlinks, with their targets: recreated inside when their
   *  parent is hidden (`denyRead: ["/"]` hides merged-/usr links such as /lib64 → usr/lib64). */
  symlinks?: ReadonlyMap<string, string>;
  credentials?: CredentialMounts;
  /** Directories srt itself cannot write (a colleague's checkout, /etc): the command cannot
   *  create anything there either, so a missing protected path there needs no placeholder. */
  readOnlyDirs?: ReadonlySet<string>;
  /** Paths whose name a program of the caller's, outside the sandbox, could replace, rename or
   *  create in their directory (it is writable or owned by the caller, or the caller is root), for
   *  every directory on the way to a read-denied path; a sticky directory (/tmp) counts as not. */
  replaceable?: ReadonlySet<string>;
  /** What `snapshots` of the plan asked for: each directory's entries when srt listed them, or
   *  `too-large` (more than srt binds one by one). */
  snapshots?: ReadonlyMap<string, SnapshotEntry[] | 'too-large'>;
  seccomp?: SeccompLaunch;
  /** fd on which bwrap reports `child-pid` and `exit-code`. */
  jsonStatusFd?: number;
}

/** Globs expanded at wrap time (denyWrite is expanded too: it only adds); `openTime`: the deny
 *  globs are judged at each open instead (the supervisor runs), and are left out. */
export function globRules(policy: Policy, credentials?: CredentialMounts, opts: { openTime?: boolean } = {}): PathRule[] {
  const fs = policy.filesystem;
  const deny = opts.openTime ? [] : [...fs.denyRead, ...(credentials?.deny ?? [])];
  return [...deny, ...fs.allowRead, ...fs.denyWrite].filter((r) => literalOf(r) === null);
}

/** Every literal path whose landing the platform must resolve. */
export function literalPaths(policy: Policy, targets: ProtectedTarget[], worktree?: BwrapFacts['worktree'], credentials?: CredentialMounts): string[] {
  const fs = policy.filesystem;
  const rules = [...fs.allowWrite, ...fs.denyWrite, ...fs.denyRead, ...fs.allowRead, ...(credentials?.deny ?? [])];
  const paths = new Set<string>([policy.cwd, ...(credentials?.masked ?? []).map((m) => m.path)]);
  for (const r of rules) {
    const lit = literalOf(r);
    if (lit !== null) paths.add(lit);
  }
  for (const m of credentials?.masked ?? []) paths.add(m.path);
  for (const t of targets) paths.add(t.path);
  if (worktree) paths.add(worktree.commonDir).add(worktree.gitDir);
  return [...paths];
}
