// The generated BPF program, run through a small classic-BPF interpreter on both architectures.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  AUDIT_ARCH,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  SECCOMP_RET_USER_NOTIF,
  SYSCALL_NUMBERS,
  buildSeccompFilter,
  type SeccompArch,
  type SeccompFilterOptions,
} from '../../src/profiles/seccomp.js';

const ALLOW = SECCOMP_RET_ALLOW;
const KILL = SECCOMP_RET_KILL_PROCESS;
const EPERM = SECCOMP_RET_ERRNO | 1;
const ENOSYS = SECCOMP_RET_ERRNO | 38;

const AUDIT_ARCH_I386 = 0x40000003;
const AUDIT_ARCH_ARM = 0x40000028;
const X32_BIT = 0x40000000;

interface Insn { code: number; jt: number; jf: number; k: number }

function decode(prog: Buffer): Insn[] {
  expect(prog.length % 8).toBe(0);
  const out: Insn[] = [];
  for (let i = 0; i < prog.length; i += 8) {
    out.push({ code: prog.readUInt16LE(i), jt: prog[i + 2]!, jf: prog[i + 3]!, k: prog.readUInt32LE(i + 4) });
  }
  return out;
}

/** Run a classic-BPF seccomp program on struct seccomp_data; only the opcodes seccomp filters may use here. */
function run(prog: Buffer, nr: number, arch: number, args: bigint[] = []): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  for (let i = 0; i < 6; i++) data.writeBigUInt64LE(BigInt.asUintN(64, args[i] ?? 0n), 16 + 8 * i);
  const insns = decode(prog);
  let a = 0;
  for (let pc = 0; pc < insns.length; pc++) {
    const { code, jt, jf, k } = insns[pc]!;
    switch (code) {
      case 0x20: // BPF_LD | BPF_W | BPF_ABS
        if (k % 4 !== 0 || k + 4 > 64) throw new Error(`bad load offset ${k}`);
        a = data.readUInt32LE(k);
        break;
      case 0x15: // BPF_JMP | BPF_JEQ | BPF_K
        pc += a === k ? jt : jf;
        break;
      case 0x45: // BPF_JMP | BPF_JSET | BPF_K
        pc += (a & k) !== 0 ? jt : jf;
        break;
      case 0x54: // BPF_ALU | BPF_AND | BPF_K
        a = (a & k) >>> 0;
        break;
      case 0x05: // BPF_JMP | BPF_JA
        pc += k;
        break;
      case 0x06: // BPF_RET | BPF_K
        return k >>> 0;
      default:
        throw new Error(`unexpected opcode 0x${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error('program fell off the end');
}

const ARCHES: SeccompArch[] = ['x86_64', 'aarch64'];
const strict = (arch: SeccompArch): SeccompFilterOptions => ({ arch, allowUnixSockets: false, allowNamespaces: false });

const AF_UNIX = 1n, AF_INET = 2n, AF_INET6 = 10n, AF_NETLINK = 16n;
const SIGCHLD = 17n;
const CLONE_VM = 0x100n, CLONE_THREAD = 0x10000n, CLONE_NEWNS = 0x20000n, CLONE_NEWUSER = 0x10000000n;
const CLONE_NEWPID = 0x20000000n, CLONE_NEWNET = 0x40000000n, CLONE_NEWUTS = 0x4000000n;
const CLONE_NEWIPC = 0x8000000n, CLONE_NEWCGROUP = 0x2000000n, CLONE_NEWTIME = 0x80n;
const CLONE_FILES = 0x400n, CLONE_FS = 0x200n, CLONE_SYSVSEM = 0x40000n;
const NAMESPACE_FLAGS = [CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP];

describe.each(ARCHES)('seccomp filter (%s)', (arch) => {
  const nr = SYSCALL_NUMBERS[arch];
  const native = AUDIT_ARCH[arch];
  const prog = buildSeccompFilter(strict(arch));
  const call = (n: number, args: bigint[] = []): number => run(prog, n, native, args);

  it('is a well-formed program: 8-byte instructions, forward jumps in range, every path returns', () => {
    const insns = decode(prog);
    expect(insns.length).toBeGreaterThan(0);
    expect(insns.length).toBeLessThanOrEqual(4096);
    insns.forEach((insn, pc) => {
      if (insn.code === 0x15 || insn.code === 0x45) {
        expect(pc + 1 + insn.jt).toBeLessThan(insns.length);
        expect(pc + 1 + insn.jf).toBeLessThan(insns.length);
      }
    });
    expect(insns[insns.length - 1]!.code).toBe(0x06);
  });

  it('is deterministic', () => {
    expect(buildSeccompFilter(strict(arch)).equals(prog)).toBe(true);
  });

  it('kills a foreign architecture before looking at the syscall number', () => {
    const foreign = arch === 'x86_64' ? [AUDIT_ARCH_I386, AUDIT_ARCH.aarch64, AUDIT_ARCH_ARM] : [AUDIT_ARCH_ARM, AUDIT_ARCH.x86_64, AUDIT_ARCH_I386];
    for (const a of foreign) {
      for (const n of [0, 1, 59, nr.socket, nr.clone]) expect(run(prog, n, a, [AF_INET])).toBe(KILL);
    }
  });

  it('allows ordinary syscalls', () => {
    for (const n of [0, 1, 2, 3, 59, 60, 62, 63, 64, 93, 221, 231, 500]) {
      if (Object.values(nr).includes(n)) continue;
      expect(call(n)).toBe(ALLOW);
    }
  });

  it('refuses socket(AF_UNIX) with EPERM for every socket type, allows other families', () => {
    for (const type of [1n, 2n, 5n, 1n | 0x80000n /* SOCK_CLOEXEC */]) {
      expect(call(nr.socket, [AF_UNIX, type, 0n])).toBe(EPERM);
    }
    for (const family of [AF_INET, AF_INET6, AF_NETLINK]) expect(call(nr.socket, [family, 1n, 0n])).toBe(ALLOW);
  });

  it('refuses every socket family the network namespace does not isolate (AF_VSOCK, AF_PACKET, …)', () => {
    for (const family of [0n, 3n, 4n, 5n, 15n, 17n /* PACKET */, 38n /* ALG */, 40n /* VSOCK */, 44n /* XDP */, 45n]) {
      expect(call(nr.socket, [family, 1n, 0n])).toBe(EPERM);
    }
  });

  it('allows stream and seqpacket socketpairs (child stdio), refuses datagram pairs (they reach socket paths)', () => {
    for (const type of [1n, 5n, 1n | 0x80000n /* SOCK_CLOEXEC */, 5n | 0x800n /* SOCK_NONBLOCK */]) {
      expect(call(nr.socketpair, [AF_UNIX, type, 0n, 0n])).toBe(ALLOW);
    }
    for (const type of [2n, 2n | 0x80000n, 3n, 10n]) expect(call(nr.socketpair, [AF_UNIX, type, 0n, 0n])).toBe(EPERM);
  });

  it('refuses the keyring syscalls (the caller\'s session keyring is shared)', () => {
    for (const n of [nr.keyctl, nr.add_key, nr.request_key]) expect(call(n)).toBe(EPERM);
  });

  it('judges the socket family by its low 32 bits, as the kernel does (int)', () => {
    expect(call(nr.socket, [(0xdeadbeefn << 32n) | AF_UNIX, 1n])).toBe(EPERM);
    expect(call(nr.socket, [(1n << 32n) | AF_INET, 1n])).toBe(ALLOW);
  });

  it('refuses io_uring with EPERM', () => {
    for (const n of [nr.io_uring_setup, nr.io_uring_enter, nr.io_uring_register]) expect(call(n)).toBe(EPERM);
  });

  it('refuses clone with any namespace flag, allows fork and threads', () => {
    for (const flag of NAMESPACE_FLAGS) {
      expect(call(nr.clone, [flag | SIGCHLD])).toBe(EPERM);
      expect(call(nr.unshare, [flag])).toBe(EPERM);
    }
    expect(call(nr.clone, [SIGCHLD])).toBe(ALLOW);
    const thread = CLONE_VM | CLONE_FS | CLONE_FILES | 0x800n /* SIGHAND */ | CLONE_THREAD | CLONE_SYSVSEM | 0x80000n | 0x100000n | 0x200000n;
    expect(call(nr.clone, [thread])).toBe(ALLOW);
    expect(call(nr.clone, [CLONE_VM | 0x4000n /* VFORK */ | SIGCHLD])).toBe(ALLOW);
  });

  it('refuses unshare of a time namespace but allows unshare of files/fs', () => {
    expect(call(nr.unshare, [CLONE_NEWTIME])).toBe(EPERM);
    expect(call(nr.unshare, [CLONE_FILES])).toBe(ALLOW);
    expect(call(nr.unshare, [CLONE_FS | CLONE_SYSVSEM])).toBe(ALLOW);
  });

  it('answers clone3 with ENOSYS so that libc falls back to clone', () => {
    expect(call(nr.clone3, [0n, 88n])).toBe(ENOSYS);
  });

  it('refuses setns, mount, umount2, pivot_root and the new mount API', () => {
    for (const name of ['setns', 'mount', 'umount2', 'pivot_root', 'open_tree', 'open_tree_attr', 'move_mount',
      'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr'] as const) {
      expect(call(nr[name]), name).toBe(EPERM);
    }
  });

  it('refuses TIOCSTI and TIOCLINUX, allows other ioctls', () => {
    expect(call(nr.ioctl, [0n, 0x5412n])).toBe(EPERM);
    expect(call(nr.ioctl, [0n, 0x541cn])).toBe(EPERM);
    expect(call(nr.ioctl, [0n, (1n << 32n) | 0x5412n])).toBe(EPERM); // cmd is an unsigned int
    for (const cmd of [0x5401n /* TCGETS */, 0x5413n /* TIOCGWINSZ */, 0x541bn /* FIONREAD */, 0x5421n]) {
      expect(call(nr.ioctl, [0n, cmd])).toBe(ALLOW);
    }
  });

  it('refuses setuid/setgid modes in chmod-like calls and creations, allows ordinary modes', () => {
    const suid = 0o4755n, sgid = 0o2755n, plain = 0o755n;
    const O_CREAT = 0o100n, O_TMPFILE = 0o20200000n, O_WRONLY = 1n;
    for (const [name, modeArg] of [['fchmod', 1], ['fchmodat', 2], ['fchmodat2', 2], ['mkdirat', 2], ['mknodat', 2], ['chmod', 1], ['mkdir', 1], ['mknod', 1], ['creat', 1]] as const) {
      if (nr[name] < 0) continue;
      const args = (mode: bigint) => Array.from({ length: 4 }, (_, i) => (i === modeArg ? mode : 0n));
      expect(call(nr[name], args(suid)), name).toBe(EPERM);
      expect(call(nr[name], args(sgid)), name).toBe(EPERM);
      expect(call(nr[name], args(plain)), name).toBe(ALLOW);
      expect(call(nr[name], args((1n << 32n) | plain)), name).toBe(ALLOW); // umode_t: the low bits count
    }
    // openat: the mode counts only when a file is created.
    expect(call(nr.openat, [0n, 0n, O_CREAT | O_WRONLY, suid])).toBe(EPERM);
    expect(call(nr.openat, [0n, 0n, O_TMPFILE | O_WRONLY, sgid])).toBe(EPERM);
    expect(call(nr.openat, [0n, 0n, O_CREAT | O_WRONLY, 0o644n])).toBe(ALLOW);
    expect(call(nr.openat, [0n, 0n, 0n, suid])).toBe(ALLOW); // no O_CREAT: the mode argument is garbage, ignored
    if (nr.open >= 0) expect(call(nr.open, [0n, O_CREAT, suid])).toBe(EPERM);
    expect(call(nr.openat2, [0n, 0n, 0n, 24n])).toBe(ENOSYS);
  });

  it('allowUnixSockets drops only the socket rule', () => {
    const p = buildSeccompFilter({ arch, allowUnixSockets: true, allowNamespaces: false });
    expect(run(p, nr.socket, native, [AF_UNIX, 1n])).toBe(ALLOW);
    expect(run(p, nr.unshare, native, [CLONE_NEWUSER])).toBe(EPERM);
    expect(run(p, nr.io_uring_setup, native)).toBe(EPERM);
    expect(run(p, 0, AUDIT_ARCH_ARM)).toBe(KILL);
  });

  it('allowNamespaces drops only the namespace and mount rules', () => {
    const p = buildSeccompFilter({ arch, allowUnixSockets: false, allowNamespaces: true });
    expect(run(p, nr.unshare, native, [CLONE_NEWUSER | CLONE_NEWNS])).toBe(ALLOW);
    expect(run(p, nr.clone, native, [CLONE_NEWUSER | SIGCHLD])).toBe(ALLOW);
    expect(run(p, nr.clone3, native)).toBe(ALLOW);
    for (const n of [nr.mount, nr.setns, nr.umount2, nr.pivot_root, nr.fsopen]) expect(run(p, n, native)).toBe(ALLOW);
    expect(run(p, nr.socket, native, [AF_UNIX, 1n])).toBe(EPERM);
    expect(run(p, nr.io_uring_enter, native)).toBe(EPERM);
    expect(run(p, nr.ioctl, native, [0n, 0x5412n])).toBe(EPERM);
  });

  it('keeps refusing io_uring, TIOCSTI and foreign arches with both rules off', () => {
    const p = buildSeccompFilter({ arch, allowUnixSockets: true, allowNamespaces: true });
    expect(run(p, nr.io_uring_setup, native)).toBe(EPERM);
    expect(run(p, nr.ioctl, native, [0n, 0x5412n])).toBe(EPERM);
    expect(run(p, nr.socket, AUDIT_ARCH_I386, [AF_INET])).toBe(KILL);
  });
});

describe('x86_64 specifics', () => {
  it('kills the x32 ABI (syscall numbers with bit 30 set)', () => {
    const prog = buildSeccompFilter(strict('x86_64'));
    const nr = SYSCALL_NUMBERS.x86_64;
    expect(run(prog, X32_BIT | 41, AUDIT_ARCH.x86_64, [AF_UNIX])).toBe(KILL);
    expect(run(prog, X32_BIT | 0, AUDIT_ARCH.x86_64)).toBe(KILL);
    expect(run(prog, nr.socket, AUDIT_ARCH.x86_64, [AF_INET])).toBe(ALLOW);
  });

  it('aarch64 has no x32 check: the same number is an ordinary syscall there', () => {
    // 0x40000000 is beyond every aarch64 syscall; the kernel answers ENOSYS itself.
    expect(run(buildSeccompFilter(strict('aarch64')), X32_BIT, AUDIT_ARCH.aarch64)).toBe(ALLOW);
  });
});

describe.each(ARCHES)('protected-path supervision and setuid bits (%s)', (arch) => {
  const nr = SYSCALL_NUMBERS[arch];
  const NOTIFY = SECCOMP_RET_USER_NOTIF;
  const EOPNOTSUPP = SECCOMP_RET_ERRNO | 95;
  const sup = buildSeccompFilter({ ...strict(arch), supervise: true });
  const plain = buildSeccompFilter(strict(arch));
  const at = (prog: Buffer, name: keyof typeof nr, ...args: bigint[]) => run(prog, nr[name], AUDIT_ARCH[arch], args);
  const O_RDONLY = 0n, O_WRONLY = 1n, O_RDWR = 2n, O_CREAT = 0o100n, O_TRUNC = 0o1000n, O_PATH = 0o10000000n;
  const O_DIRECTORY = 0o200000n, O_CLOEXEC = 0o2000000n, O_TMPFILE = 0o20000000n | O_DIRECTORY, O_NOFOLLOW = 0o400000n;
  const AT_FDCWD = -100n;

  it('openat: only opens that can write go to the supervisor; O_PATH and read-only never do', () => {
    for (const f of [O_RDONLY, O_RDONLY | O_CLOEXEC | O_DIRECTORY, O_RDONLY | O_NOFOLLOW, O_PATH | O_CREAT | O_WRONLY]) {
      expect(at(sup, 'openat', AT_FDCWD, 0n, f, 0o644n), `flags ${f.toString(8)}`).toBe(ALLOW);
    }
    for (const f of [O_WRONLY, O_RDWR, 3n, O_RDONLY | O_CREAT, O_RDONLY | O_TRUNC, O_WRONLY | O_TMPFILE]) {
      expect(at(sup, 'openat', AT_FDCWD, 0n, f, 0o755n), `flags ${f.toString(8)}`).toBe(NOTIFY);
    }
    // Creating with setuid/setgid bits is refused before the supervisor, as without it.
    expect(at(sup, 'openat', AT_FDCWD, 0n, O_WRONLY | O_CREAT, 0o4755n)).toBe(EPERM);
    expect(at(sup, 'openat', AT_FDCWD, 0n, O_WRONLY, 0o4755n)).toBe(NOTIFY); // no creation: the mode is unused
    // The upper half of the flags argument is ignored by the kernel (an int).
    expect(at(sup, 'openat', AT_FDCWD, 0n, 1n << 32n, 0n)).toBe(ALLOW);
  });

  it('every call that can create, replace, remove or re-point a name goes to the supervisor', () => {
    const all: (keyof typeof nr)[] = ['mkdirat', 'mknodat', 'symlinkat', 'linkat', 'unlinkat', 'renameat2', 'truncate', 'umask',
      ...(arch === 'x86_64' ? ['creat', 'mkdir', 'mknod', 'symlink', 'link', 'unlink', 'rmdir', 'rename', 'renameat'] as const : [])];
    for (const name of all) expect(at(sup, name, 0n, 0o644n, 0o644n, 0n), name).toBe(NOTIFY);
    for (const name of ['mkdirat', 'mknodat', ...(arch === 'x86_64' ? ['creat', 'mkdir', 'mknod'] as const : [])] as const) {
      expect(at(sup, name, 0n, 0o4755n, 0o4755n, 0n), `${name} setuid`).toBe(EPERM);
    }
    for (const name of ['fchmod', 'fchmodat', 'fchmodat2', ...(arch === 'x86_64' ? ['chmod'] as const : [])] as const) {
      const modeArg = name === 'fchmod' || name === 'chmod' ? 1 : 2;
      const args = [0n, 0n, 0n, 0n];
      args[modeArg] = 0o755n;
      expect(at(sup, name, ...args), name).toBe(NOTIFY);
      args[modeArg] = 0o4755n;
      expect(at(sup, name, ...args), `${name} setuid`).toBe(EPERM);
      args[modeArg] = 0o2755n;
      expect(at(plain, name, ...args), `${name} setgid, no supervisor`).toBe(EPERM);
      args[modeArg] = 0o755n;
      expect(at(plain, name, ...args), `${name}, no supervisor`).toBe(ALLOW);
    }
    if (arch === 'x86_64') expect(at(sup, 'open', 0n, O_WRONLY | O_CREAT, 0o644n)).toBe(NOTIFY);
  });

  it('connect() goes to the supervisor (it only watches for refused loopback connections), and never without it', () => {
    expect(at(sup, 'connect', 3n, 0n, 16n)).toBe(NOTIFY);
    expect(at(plain, 'connect', 3n, 0n, 16n)).toBe(ALLOW);
  });

  it('the calls that change a mode, owner or extended attribute (a POSIX ACL is a chmod) go to the supervisor', () => {
    const attrs: (keyof typeof nr)[] = ['fchown', 'fchownat', 'setxattr', 'lsetxattr', 'fsetxattr', 'setxattrat',
      'removexattr', 'lremovexattr', 'fremovexattr', 'removexattrat', ...(arch === 'x86_64' ? ['chown', 'lchown'] as const : [])];
    for (const name of attrs) {
      expect(at(sup, name, 0n, 0n, 0n, 0n), name).toBe(NOTIFY);
      expect(at(plain, name, 0n, 0n, 0n, 0n), `${name}, no supervisor`).toBe(ALLOW);
    }
  });

  it('openat2 is ENOSYS (flags in memory); a nested listener EPERM; Landlock EOPNOTSUPP under the supervisor', () => {
    for (const prog of [sup, plain]) expect(at(prog, 'openat2', AT_FDCWD, 0n, 0n, 24n)).toBe(ENOSYS);
    expect(at(sup, 'seccomp', 1n, 8n, 0n)).toBe(EPERM); // SECCOMP_SET_MODE_FILTER, NEW_LISTENER
    expect(at(sup, 'seccomp', 1n, 1n, 0n)).toBe(ALLOW); // TSYNC: a stricter filter is fine
    expect(at(sup, 'seccomp', 0n, 0n, 0n)).toBe(ALLOW);
    expect(at(sup, 'landlock_create_ruleset', 0n, 0n, 0n)).toBe(EOPNOTSUPP);
    expect(at(plain, 'landlock_create_ruleset', 0n, 0n, 0n)).toBe(ALLOW);
    expect(at(plain, 'seccomp', 1n, 8n, 0n)).toBe(ALLOW);
  });

  it('without the supervisor: creation modes with setuid/setgid are refused, other calls pass', () => {
    expect(at(plain, 'openat', AT_FDCWD, 0n, O_WRONLY | O_CREAT, 0o4755n)).toBe(EPERM);
    expect(at(plain, 'openat', AT_FDCWD, 0n, O_WRONLY | O_TMPFILE, 0o2755n)).toBe(EPERM);
    expect(at(plain, 'openat', AT_FDCWD, 0n, O_WRONLY | O_CREAT, 0o755n)).toBe(ALLOW);
    expect(at(plain, 'openat', AT_FDCWD, 0n, O_WRONLY, 0o4755n)).toBe(ALLOW); // no creation: mode unused
    expect(at(plain, 'mknodat', AT_FDCWD, 0n, 0o104755n, 0n)).toBe(EPERM);
    expect(at(plain, 'mkdirat', AT_FDCWD, 0n, 0o755n)).toBe(ALLOW);
    expect(at(plain, 'renameat2', 0n, 0n, 0n, 0n, 0n)).toBe(ALLOW);
    if (arch === 'x86_64') {
      expect(at(plain, 'creat', 0n, 0o4755n)).toBe(EPERM);
      expect(at(plain, 'open', 0n, O_WRONLY | O_CREAT, 0o6755n)).toBe(EPERM);
    }
  });
});

// The supervisor's own table (init/supervisor.c: enum op, op_nr per architecture) must name the
// same calls by the same numbers as the filter that sends them.
describe('the supervisor decodes what the filter sends', () => {
  const src = readFileSync(new URL('../../init/supervisor.c', import.meta.url), 'utf8');
  const ops = /enum op \{([^}]*)\}/.exec(src)![1]!.split(',').map((o) => o.trim()).filter((o) => o && o !== 'OP_COUNT');
  const tables: Record<SeccompArch, string> = { x86_64: '__x86_64__', aarch64: '__aarch64__' };
  for (const arch of ARCHES) {
    it(arch, () => {
      const block = src.slice(src.indexOf(`defined(${tables[arch]})`));
      const numbers = /op_nr\[OP_COUNT\] = \{([^}]*)\}/.exec(block)![1]!.split(',').map((n) => Number(n.trim()));
      expect(numbers).toHaveLength(ops.length);
      ops.forEach((op, i) => {
        const name = op.slice(3).toLowerCase() as keyof (typeof SYSCALL_NUMBERS)[SeccompArch];
        expect(SYSCALL_NUMBERS[arch][name], op).toBe(numbers[i]);
      });
    });
  }
});

// Cross-check the hard-coded numbers against the kernel headers when they are installed
// (linux-libc-dev). Syscalls newer than the headers are skipped.
describe('syscall numbers match the installed kernel headers', () => {
  const headers: Record<SeccompArch, string[]> = {
    x86_64: ['/usr/include/x86_64-linux-gnu/asm/unistd_64.h', '/usr/include/asm/unistd_64.h'],
    aarch64: ['/usr/include/asm-generic/unistd.h'],
  };
  for (const arch of ARCHES) {
    const file = headers[arch].find((f) => existsSync(f));
    it.skipIf(!file)(`${arch}: ${file ?? 'headers not installed'}`, () => {
      const text = readFileSync(file!, 'utf8');
      let checked = 0;
      for (const [name, number] of Object.entries(SYSCALL_NUMBERS[arch])) {
        if (number < 0) continue; // not on this architecture (aarch64's renameat is guarded out too)
        const m = new RegExp(`#define __NR(?:3264)?_${name}\\s+(\\d+)\\b`).exec(text);
        if (!m) continue;
        expect(Number(m[1]), name).toBe(number);
        checked++;
      }
      expect(checked).toBeGreaterThanOrEqual(15);
    });
  }
});
