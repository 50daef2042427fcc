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
// - setuid/setgid bits → EPERM: chmod/fchmod/fchmodat/fchmodat2 with S_ISUID or S_ISGID in the
//   mode, and open/openat/creat (with O_CREAT or O_TMPFILE), mkdir/mkdirat and mknod/mknodat
//   asking for them. For a root caller uid 0 maps to host root, so a setuid copy of a shell left
//   in the work tree would be a root shell for every local user. openat2 → ENOSYS: its mode sits
//   in a struct seccomp cannot read, and libc falls back to openat.
// `allowUnixSockets` adds AF_UNIX to the allowed families and lifts the socketpair type check;
// `allowNamespaces` drops the namespace and mount rules.

export type SeccompArch = 'x86_64' | 'aarch64';

export interface SeccompFilterOptions {
  arch: SeccompArch;
  allowUnixSockets: boolean;
  allowNamespaces: boolean;
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
  | 'chmod' | 'fchmod' | 'fchmodat' | 'fchmodat2' | 'open' | 'openat' | 'openat2' | 'creat' | 'mkdir' | 'mkdirat' | 'mknod' | 'mknodat';

// Checked against asm/unistd_64.h (x86_64) and asm-generic/unistd.h (aarch64). Syscalls added
// since 5.x (424 and up) share one number on every architecture.
export const SYSCALL_NUMBERS: Record<SeccompArch, Record<SyscallName, number>> = {
  x86_64: {
    socket: 41, socketpair: 53, keyctl: 250, add_key: 248, request_key: 249, ioctl: 16, clone: 56, unshare: 272, setns: 308,
    mount: 165, umount2: 166, pivot_root: 155,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
    clone3: 435, mount_setattr: 442, open_tree_attr: 467,
    chmod: 90, fchmod: 91, fchmodat: 268, fchmodat2: 452, open: 2, openat: 257, openat2: 437, creat: 85,
    mkdir: 83, mkdirat: 258, mknod: 133, mknodat: 259,
  },
  aarch64: {
    socket: 198, socketpair: 199, keyctl: 219, add_key: 217, request_key: 218, ioctl: 29, clone: 220, unshare: 97, setns: 268,
    mount: 40, umount2: 39, pivot_root: 41,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
    clone3: 435, mount_setattr: 442, open_tree_attr: 467,
    // aarch64 has only the *at forms; -1 marks a syscall that does not exist there.
    chmod: -1, fchmod: 52, fchmodat: 53, fchmodat2: 452, open: -1, openat: 56, openat2: 437, creat: -1,
    mkdir: -1, mkdirat: 34, mknod: -1, mknodat: 33,
  },
};

/** Syscalls whose mode argument (index) may carry S_ISUID/S_ISGID, and the flags argument that
 *  makes it count (open*: only with O_CREAT/O_TMPFILE). */
const MODE_ARGS: Array<{ name: SyscallName; mode: number; flags?: number }> = [
  { name: 'chmod', mode: 1 }, { name: 'fchmod', mode: 1 }, { name: 'fchmodat', mode: 2 }, { name: 'fchmodat2', mode: 2 },
  { name: 'creat', mode: 1 }, { name: 'open', mode: 2, flags: 1 }, { name: 'openat', mode: 3, flags: 2 },
  { name: 'mkdir', mode: 1 }, { name: 'mkdirat', mode: 2 }, { name: 'mknod', mode: 1 }, { name: 'mknodat', mode: 2 },
];

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
export const S_ISUID = 0o4000;
export const S_ISGID = 0o2000;
// x86_64 and aarch64 share these values: O_CREAT 0100, O_TMPFILE (__O_TMPFILE | O_DIRECTORY) 020200000.
export const O_CREAT = 0o100;
export const O_TMPFILE_BIT = 0o20000000;

// <linux/seccomp.h>
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
export const EPERM = 1;
export const ENOSYS = 38;

// <linux/filter.h> opcodes used here.
export const BPF_LD_W_ABS = 0x20;
export const BPF_JEQ_K = 0x15;
export const BPF_JSET_K = 0x45;
export const BPF_RET_K = 0x06;
export const BPF_ALU_AND_K = 0x54;

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
  jeq(nr.openat2, 'enosys');
  const modeCalls = MODE_ARGS.filter((m) => nr[m.name] >= 0);
  for (const m of modeCalls) jeq(nr[m.name], `mode:${m.name}`);
  ret(SECCOMP_RET_ALLOW);

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
  // The kernel reads modes as umode_t and open flags as int: the low 32 bits are the value.
  for (const m of modeCalls) {
    label(`mode:${m.name}`);
    if (m.flags !== undefined) {
      ld(argLow(m.flags));
      items.push({ code: BPF_JSET_K, k: O_CREAT | O_TMPFILE_BIT, jf: 'allow' });
    }
    ld(argLow(m.mode));
    jset(S_ISUID | S_ISGID, 'eperm');
    ret(SECCOMP_RET_ALLOW);
  }

  label('allow');
  ret(SECCOMP_RET_ALLOW);
  label('eperm');
  ret(SECCOMP_RET_ERRNO | EPERM);
  label('enosys');
  ret(SECCOMP_RET_ERRNO | ENOSYS);
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
    out.writeUInt8(offset(item.jt), pc * 8 + 2);
    out.writeUInt8(offset(item.jf), pc * 8 + 3);
    out.writeUInt32LE(item.k >>> 0, pc * 8 + 4);
    pc++;
  }
  return out;
}
