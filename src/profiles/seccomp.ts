// The seccomp filter applied to the sandboxed command (SPEC §4, invariant 6), as a classic-BPF
// program: the raw `struct sock_filter[]` the helper in seccomp/ hands to seccomp(2).
//
// What it refuses, and why:
// - a foreign architecture (i386 on x86_64, arm32 on aarch64) or the x32 ABI: syscall numbers
//   differ there, so every rule below could be bypassed → kill the process.
// - socket() of any family but AF_INET, AF_INET6 and AF_NETLINK → EPERM. AF_UNIX could reach
//   host daemons (docker, ssh-agent, dbus) whose socket paths are visible read-only; families the
//   network namespace does not isolate (AF_VSOCK to the hypervisor, …) would bypass the proxy.
//   socketpair() stays allowed for SOCK_STREAM and SOCK_SEQPACKET: a connected pair that cannot
//   reach any existing socket, which libuv/node, python multiprocessing and many tools need for
//   child stdio. A SOCK_DGRAM pair is refused: sendto()/connect() on it reach host socket paths.
// - keyctl, add_key, request_key → EPERM: the sandbox shares the caller's session keyring, whose
//   keys would otherwise be readable and changeable from inside.
// - io_uring_* → EPERM: io_uring performs socket/open operations that seccomp never sees.
// - new namespaces: unshare/clone with any CLONE_NEW* flag, setns → EPERM. CLONE_NEWUSER is the
//   escape (it hands out a full capability set); the others already need capabilities the
//   command does not have, but refusing them too gives one clear EPERM and costs nothing.
//   clone3 → ENOSYS: its flags live in a struct seccomp cannot read; libc then falls back to
//   clone, whose flags are checked.
// - mount, umount2, pivot_root and the new mount API → EPERM (the command has no capabilities,
//   so this is defence in depth behind the kernel's own checks).
// - ioctl(TIOCSTI / TIOCLINUX) → EPERM: pushing keystrokes into the user's terminal
//   (bwrap --new-session already detaches the terminal; this holds even if that changes).
// - setuid/setgid bits: chmod/fchmod/fchmodat/fchmodat2 with S_ISUID or S_ISGID → EPERM (a root
//   caller's sandbox would otherwise leave a root shell on the host), and so do open/openat/creat
//   (O_CREAT or O_TMPFILE), mkdir/mkdirat and mknod/mknodat asking for those bits (the
//   supervisor strips them too, should a call get that far). openat2 → ENOSYS (its flags and
//   mode live in a struct seccomp cannot read; libc and programs fall back to openat).
// - `supervise` (the protected-path supervisor, init/supervisor.c): every call that can
//   create, replace, remove or re-point a name, or write a file by name, goes to the supervisor
//   (SECCOMP_RET_USER_NOTIF), which performs it itself after checking the name: open/openat only
//   when they can write (O_WRONLY, O_RDWR, O_CREAT, O_TRUNC; never with O_PATH), creat, mkdir(at),
//   mknod(at), symlink(at), link(at), unlink(at), rmdir, rename(at/at2), truncate, and the calls
//   that change a file's mode, owner or extended attributes without naming anything new: the chmod
//   and chown families, setxattr/removexattr in every form (a POSIX ACL in system.posix_acl_access
//   is a chmod). Read-only opens never leave the kernel, unless `gateReads` (a read-denied path lies in
//   a writable directory, where a program outside could replace it: the supervisor then checks
//   what every open reaches; O_PATH opens, which read nothing, still stay in the kernel). umask() too, only so that the supervisor's
//   cache of each process's umask is emptied (it is then continued unchanged), and connect(), continued
//   unchanged too, only so that a refused loopback connection can be reported. A nested seccomp listener
//   (SECCOMP_FILTER_FLAG_NEW_LISTENER) → EPERM: its supervisor could answer CONTINUE for calls
//   ours never saw. landlock_create_ruleset → EOPNOTSUPP: the supervisor performs calls under
//   srt's Landlock rules and cannot know a stricter domain the command would add.
// `allowUnixSockets` adds AF_UNIX to the allowed families and lifts the socketpair type check;
// `allowNamespaces` drops the namespace and mount rules.

export type SeccompArch = 'x86_64' | 'aarch64';

export interface SeccompFilterOptions {
  arch: SeccompArch;
  allowUnixSockets: boolean;
  allowNamespaces: boolean;
  /** Send the creating calls to the protected-path supervisor. */
  supervise?: boolean;
  /** With `supervise`: send read-only opens there too (it checks them against read-denied paths). */
  gateReads?: boolean;
}

// <linux/audit.h>: EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
export const AUDIT_ARCH: Record<SeccompArch, number> = {
  x86_64: 0xc000003e,
  aarch64: 0xc00000b7,
};
export const X32_SYSCALL_BIT = 0x40000000;

type SyscallName =
  | 'socket' | 'socketpair' | 'keyctl' | 'add_key' | 'request_key' | 'ioctl' | 'clone' | 'clone3' | 'unshare' | 'setns'
  | 'mount' | 'umount2' | 'pivot_root'
  | 'open_tree' | 'move_mount' | 'fsopen' | 'fsconfig' | 'fsmount' | 'fspick'
  | 'mount_setattr' | 'open_tree_attr'
  | 'io_uring_setup' | 'io_uring_enter' | 'io_uring_register'
  | 'open' | 'creat' | 'openat' | 'openat2' | 'mkdir' | 'mkdirat' | 'mknod' | 'mknodat'
  | 'symlink' | 'symlinkat' | 'link' | 'linkat' | 'unlink' | 'unlinkat' | 'rmdir'
  | 'rename' | 'renameat' | 'renameat2' | 'truncate' | 'chmod' | 'fchmod' | 'fchmodat' | 'fchmodat2'
  | 'chown' | 'fchown' | 'lchown' | 'fchownat'
  | 'setxattr' | 'lsetxattr' | 'fsetxattr' | 'setxattrat' | 'removexattr' | 'lremovexattr' | 'fremovexattr' | 'removexattrat'
  | 'seccomp' | 'landlock_create_ruleset' | 'umask' | 'connect';

// Checked against asm/unistd_64.h (x86_64) and asm-generic/unistd.h (aarch64). Syscalls added
// since 5.x (424 and up) share one number on every architecture. aarch64 has none of the legacy
// path calls (open, creat, mkdir, mknod, symlink, link, unlink, rmdir, rename, chmod) nor
// renameat: only their *at forms (undefined here: -1), and no chown/lchown.
export const SYSCALL_NUMBERS: Record<SeccompArch, Record<SyscallName, number>> = {
  x86_64: {
    socket: 41, socketpair: 53, keyctl: 250, add_key: 248, request_key: 249, ioctl: 16, clone: 56, unshare: 272, setns: 308,
    mount: 165, umount2: 166, pivot_root: 155,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
    clone3: 435, mount_setattr: 442, open_tree_attr: 467,
    open: 2, creat: 85, openat: 257, openat2: 437, mkdir: 83, mkdirat: 258, mknod: 133, mknodat: 259,
    symlink: 88, symlinkat: 266, link: 86, linkat: 265, unlink: 87, unlinkat: 263, rmdir: 84,
    rename: 82, renameat: 264, renameat2: 316, truncate: 76, chmod: 90, fchmod: 91, fchmodat: 268,
    fchmodat2: 452, seccomp: 317, landlock_create_ruleset: 444, umask: 95, connect: 42,
    chown: 92, fchown: 93, lchown: 94, fchownat: 260,
    setxattr: 188, lsetxattr: 189, fsetxattr: 190, setxattrat: 463, removexattr: 197, lremovexattr: 198, fremovexattr: 199, removexattrat: 466,
  },
  aarch64: {
    socket: 198, socketpair: 199, keyctl: 219, add_key: 217, request_key: 218, ioctl: 29, clone: 220, unshare: 97, setns: 268,
    mount: 40, umount2: 39, pivot_root: 41,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
    clone3: 435, mount_setattr: 442, open_tree_attr: 467,
    open: -1, creat: -1, openat: 56, openat2: 437, mkdir: -1, mkdirat: 34, mknod: -1, mknodat: 33,
    symlink: -1, symlinkat: 36, link: -1, linkat: 37, unlink: -1, unlinkat: 35, rmdir: -1,
    rename: -1, renameat: -1, renameat2: 276, truncate: 45, chmod: -1, fchmod: 52, fchmodat: 53,
    fchmodat2: 452, seccomp: 277, landlock_create_ruleset: 444, umask: 166, connect: 203,
    chown: -1, fchown: 55, lchown: -1, fchownat: 54,
    setxattr: 5, lsetxattr: 6, fsetxattr: 7, setxattrat: 463, removexattr: 14, lremovexattr: 15, fremovexattr: 16, removexattrat: 466,
  },
};

export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const SOCK_STREAM = 1;
export const SOCK_SEQPACKET = 5;
/** The socket type proper; SOCK_NONBLOCK/SOCK_CLOEXEC are flag bits above it. */
export const SOCK_TYPE_MASK = 0xf;
export const TIOCSTI = 0x5412;
export const TIOCLINUX = 0x541c;
// CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET. clone() keeps the exit
// signal in its low byte, so CLONE_NEWTIME (0x80) only means "new time namespace" for unshare().
export const CLONE_NAMESPACE_FLAGS = 0x7e020000;
export const CLONE_NEWTIME = 0x80;

// <fcntl.h>, <sys/stat.h> (the same values on x86_64 and aarch64)
export const O_ACCMODE = 0o3;
export const O_CREAT = 0o100;
export const O_TRUNC = 0o1000;
export const O_PATH = 0o10000000;
export const O_TMPFILE_BIT = 0o20000000; // __O_TMPFILE
export const S_ISUID_GID = 0o6000;

// <linux/seccomp.h>
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_USER_NOTIF = 0x7fc00000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
export const SECCOMP_SET_MODE_FILTER = 1;
export const SECCOMP_FILTER_FLAG_NEW_LISTENER = 8;
export const EPERM = 1;
export const ENOSYS = 38;
export const EOPNOTSUPP = 95;

// <linux/filter.h> opcodes used here.
export const BPF_LD_W_ABS = 0x20;
export const BPF_JEQ_K = 0x15;
export const BPF_JSET_K = 0x45;
export const BPF_RET_K = 0x06;
export const BPF_ALU_AND_K = 0x54;
export const BPF_JA = 0x05;

// struct seccomp_data offsets (little-endian: the low half of args[i] comes first).
const OFF_NR = 0;
const OFF_ARCH = 4;
const argLow = (i: number): number => 16 + 8 * i;

/** Kernel limit (BPF_MAXINSNS); the helper refuses longer programs too. */
export const MAX_INSNS = 4096;

type Target = string; // a label
type Item =
  | { label: string }
  | { code: number; k: number; jt?: Target; jf?: Target };

/** Build the filter for one architecture. Deterministic: same options, same bytes. */
export function buildSeccompFilter(opts: SeccompFilterOptions): Buffer {
  const nr = SYSCALL_NUMBERS[opts.arch];
  const items: Item[] = [];
  const ld = (offset: number): void => { items.push({ code: BPF_LD_W_ABS, k: offset }); };
  const jeq = (k: number, jt: Target): void => { items.push({ code: BPF_JEQ_K, k, jt }); };
  const jset = (k: number, jt: Target): void => { items.push({ code: BPF_JSET_K, k, jt }); };
  const ret = (k: number): void => { items.push({ code: BPF_RET_K, k }); };
  const and = (k: number): void => { items.push({ code: BPF_ALU_AND_K, k }); };
  const label = (name: string): void => { items.push({ label: name }); };

  ld(OFF_ARCH);
  items.push({ code: BPF_JEQ_K, k: AUDIT_ARCH[opts.arch], jf: 'kill' });
  ld(OFF_NR);
  if (opts.arch === 'x86_64') jset(X32_SYSCALL_BIT, 'kill');

  const refused: SyscallName[] = ['io_uring_setup', 'io_uring_enter', 'io_uring_register', 'keyctl', 'add_key', 'request_key'];
  if (!opts.allowNamespaces) {
    refused.push('setns', 'mount', 'umount2', 'pivot_root', 'open_tree', 'open_tree_attr',
      'move_mount', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr');
  }
  for (const name of refused) jeq(nr[name], 'eperm');
  if (!opts.allowNamespaces) {
    jeq(nr.clone3, 'enosys');
    jeq(nr.clone, 'clone');
    jeq(nr.unshare, 'unshare');
  }
  jeq(nr.socket, 'socket');
  if (!opts.allowUnixSockets) jeq(nr.socketpair, 'socketpair');
  jeq(nr.ioctl, 'ioctl');
  const sup = opts.supervise === true;
  const has = (n: SyscallName): boolean => nr[n] >= 0;
  const on = (n: SyscallName, target: Target): void => { if (has(n)) jeq(nr[n], target); };
  on('openat2', 'enosys');
  // Path calls: [syscall, index of its flags argument (opens) / mode argument (others)].
  on('open', 'open');
  on('openat', 'openat');
  on('creat', 'creat');
  // chmod family and mkdir/mknod: the mode is argument 1 (legacy calls) or 2 (*at calls).
  for (const n of ['chmod', 'fchmod', 'mkdir', 'mknod'] as const) on(n, 'mode1');
  for (const n of ['fchmodat', 'fchmodat2', 'mkdirat', 'mknodat'] as const) on(n, 'mode2');
  if (sup) {
    for (const n of ['symlink', 'symlinkat', 'link', 'linkat', 'unlink', 'unlinkat', 'rmdir', 'rename', 'renameat',
      'renameat2', 'truncate', 'umask', 'chown', 'fchown', 'lchown', 'fchownat', 'setxattr', 'lsetxattr', 'fsetxattr',
      'setxattrat', 'removexattr', 'lremovexattr', 'fremovexattr', 'removexattrat', 'connect'] as const) on(n, 'notify');
    on('seccomp', 'seccomp');
    on('landlock_create_ruleset', 'eopnotsupp');
  }
  ret(SECCOMP_RET_ALLOW);

  // A mode argument with setuid/setgid bits → EPERM (with or without the supervisor: one
  // behaviour); else to the supervisor, or allowed. The kernel reads modes as umode_t and open
  // flags as int: the low 32 bits are the value.
  const then = sup ? 'notify' : 'allow';
  const modeAt = (i: number) => {
    ld(argLow(i));
    jset(S_ISUID_GID, 'eperm');
    items.push({ code: BPF_JA, k: 0, jt: then });
  };
  label('mode1');
  modeAt(1);
  label('mode2');
  modeAt(2);
  // open(path, flags, mode) / openat(dirfd, path, flags, mode): the mode counts only when the
  // call creates (O_CREAT, O_TMPFILE); the supervisor gets every open that can write.
  for (const [name, flagsArg] of [['open', 1], ['openat', 2]] as const) {
    if (!has(name)) continue;
    label(name);
    ld(argLow(flagsArg));
    jset(O_PATH, 'allow');
    jset(O_CREAT | O_TMPFILE_BIT, `${name}Mode`);
    if (sup && opts.gateReads) items.push({ code: BPF_JA, k: 0, jt: 'notify' });
    else {
      if (sup) jset(O_ACCMODE | O_TRUNC, 'notify');
      ret(SECCOMP_RET_ALLOW);
    }
    label(`${name}Mode`);
    modeAt(flagsArg + 1);
  }
  if (has('creat')) {
    label('creat');
    modeAt(1);
  }
  if (sup) {
    label('seccomp');
    ld(argLow(0));
    items.push({ code: BPF_JEQ_K, k: SECCOMP_SET_MODE_FILTER, jf: 'allow' });
    ld(argLow(1));
    jset(SECCOMP_FILTER_FLAG_NEW_LISTENER, 'eperm');
    ret(SECCOMP_RET_ALLOW);
  }

  // Argument checks read only the low 32 bits: the kernel takes these arguments as int /
  // unsigned int (socket family, ioctl cmd) or uses only their low 32 bits (clone flags).
  if (!opts.allowNamespaces) {
    label('clone');
    ld(argLow(0));
    jset(CLONE_NAMESPACE_FLAGS, 'eperm');
    ret(SECCOMP_RET_ALLOW);
    label('unshare');
    ld(argLow(0));
    jset(CLONE_NAMESPACE_FLAGS | CLONE_NEWTIME, 'eperm');
    ret(SECCOMP_RET_ALLOW);
  }
  label('socket');
  ld(argLow(0));
  for (const family of [AF_INET, AF_INET6, AF_NETLINK, ...(opts.allowUnixSockets ? [AF_UNIX] : [])]) jeq(family, 'allow');
  ret(SECCOMP_RET_ERRNO | EPERM);
  if (!opts.allowUnixSockets) {
    label('socketpair');
    ld(argLow(1));
    and(SOCK_TYPE_MASK);
    jeq(SOCK_STREAM, 'allow');
    jeq(SOCK_SEQPACKET, 'allow');
    ret(SECCOMP_RET_ERRNO | EPERM);
  }
  label('ioctl');
  ld(argLow(1));
  jeq(TIOCSTI, 'eperm');
  jeq(TIOCLINUX, 'eperm');
  ret(SECCOMP_RET_ALLOW);

  label('allow');
  ret(SECCOMP_RET_ALLOW);
  label('eperm');
  ret(SECCOMP_RET_ERRNO | EPERM);
  label('enosys');
  ret(SECCOMP_RET_ERRNO | ENOSYS);
  if (sup) {
    label('notify');
    ret(SECCOMP_RET_USER_NOTIF);
    label('eopnotsupp');
    ret(SECCOMP_RET_ERRNO | EOPNOTSUPP);
  }
  label('kill');
  ret(SECCOMP_RET_KILL_PROCESS);

  return assemble(items);
}

/** Resolve labels into forward jump offsets and encode struct sock_filter (8 bytes each). */
function assemble(items: Item[]): Buffer {
  const at = new Map<string, number>();
  let count = 0;
  for (const item of items) {
    if ('label' in item) at.set(item.label, count);
    else count++;
  }
  if (count > MAX_INSNS) throw new Error(`seccomp filter too long: ${count} instructions`);
  const out = Buffer.alloc(count * 8);
  let pc = 0;
  const offset = (target: Target | undefined): number => {
    if (target === undefined) return 0; // fall through to the next instruction
    const dest = at.get(target);
    if (dest === undefined) throw new Error(`seccomp filter: undefined label ${target}`);
    const delta = dest - pc - 1;
    if (delta < 0 || delta > 255) throw new Error(`seccomp filter: jump to ${target} out of range`);
    return delta;
  };
  for (const item of items) {
    if ('label' in item) continue;
    out.writeUInt16LE(item.code, pc * 8);
    // BPF_JA jumps by k (its jt/jf are unused); the label is kept in jt.
    const ja = item.code === BPF_JA;
    out.writeUInt8(ja ? 0 : offset(item.jt), pc * 8 + 2);
    out.writeUInt8(ja ? 0 : offset(item.jf), pc * 8 + 3);
    out.writeUInt32LE(ja ? offset(item.jt) : item.k >>> 0, pc * 8 + 4);
    pc++;
  }
  return out;
}
