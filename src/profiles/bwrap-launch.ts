// The bwrap command line around the mount operations: namespaces, capabilities, srt-init's
// options when it is the sandbox's first process, and what runs bwrap.

import type { Policy } from '../policy.js';
import type { BwrapFacts } from './bwrap-facts.js';
import { hostListenArgv, initArgv, type InitArgs } from './init-args.js';
import { bwrapMountArgs, type MountOp } from './mounts.js';

/**
 * bwrap's options before the mounts, one option with its values per group: new namespaces, and
 * the capabilities the sandbox's first process keeps — srt-init (`init`), or none.
 */
export function bwrapIsolationArgs(init: { lowPort: boolean } | undefined): string[][] {
  const namespaces = [
    '--unshare-user', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
    '--new-session', '--die-with-parent',
  ].map((o) => [o]);
  if (!init) return [...namespaces, ['--cap-drop', 'ALL']];
  // The helper keeps CAP_SYS_ADMIN (nested pid/mount namespace, fresh /proc), CAP_SETPCAP
  // (clearing the bounding set) and CAP_SYS_RESOURCE (the sandbox's share of the per-user limits,
  // init/limits.c) in bwrap's user namespace only, and drops them before exec.
  // ... and CAP_NET_BIND_SERVICE to bind a forwarded port below 1024 inside (the relay drops it),
  // and CAP_DAC_READ_SEARCH so its check of the mounts walks the paths bwrap mounted on, which
  // may pass a directory with no search permission (a root caller's mode-000 directory).
  const caps = ['CAP_SYS_ADMIN', 'CAP_SETPCAP', 'CAP_DAC_READ_SEARCH', 'CAP_SYS_RESOURCE', ...(init.lowPort ? ['CAP_NET_BIND_SERVICE'] : [])];
  return [...namespaces, ['--as-pid-1'], ['--cap-drop', 'ALL'], ...caps.map((c) => ['--cap-add', c])];
}

/** `argGroups`: one option with its values per group, the last `--` and what bwrap runs;
 *  `launcher`: srt-init binding the exposed host ports, or nothing (bwrap is run directly). */
export function bwrapLaunch(policy: Policy, facts: BwrapFacts, ops: MountOp[], writable: string[], command: string[]): { argGroups: string[][]; init?: InitArgs; launcher: string[] } {
  const fsPolicy = policy.filesystem;
  const lowPort = facts.seccomp?.relays.some((r) => r.port < 1024) ?? false;
  const isolation = bwrapIsolationArgs(facts.seccomp ? { lowPort } : undefined);
  const statusArgs = facts.jsonStatusFd !== undefined ? [['--json-status-fd', String(facts.jsonStatusFd)]] : [];
  const launch = facts.seccomp;
  // Landlock in the helper denies writes outside the read-write binds (a read-only bind still lets
  // a FIFO or device be opened for writing). Left out when the filesystem is not isolated, and
  // for nested sandboxes: Landlock refuses mount(2) to everything below it.
  const init: InitArgs | undefined = launch && {
    helperPath: launch.helperPath, relays: launch.relays, exposes: launch.exposes,
    landlock: fsPolicy.disabled || policy.allowNestedUserNamespaces ? 'off' : { writable, socketFiles: policy.network.allowAllUnixSockets },
    ...(launch.terminal ? { pty: launch.terminal } : {}),
    ...(launch.supervisor ? { protect: launch.supervisor } : {}),
    ...(launch.mountsPath !== undefined ? { verify: launch.mountsPath } : {}),
    goFd: launch.goFd,
    maxProcs: launch.maxProcs,
    filter: launch.filterPath,
  };
  const argGroups = [...isolation, ...bwrapMountArgs(ops), ['--chdir', policy.cwd], ...statusArgs, ['--', ...(init ? initArgv(init) : []), ...command]];
  return { argGroups, ...(init ? { init } : {}), launcher: launch ? hostListenArgv(launch.helperPath, launch.exposes) : [] };
}
