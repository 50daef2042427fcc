// Locate srt-init built from init/*.c by scripts/build-init.sh.
// Checked without running it: present, executable, and an ELF for this machine's architecture.
import { accessSync, closeSync, constants, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { release } from 'node:os';
import { INIT_HELPER_PATH } from '../paths.js';
import type { SeccompArch } from '../profiles/seccomp.js';

export { INIT_HELPER_PATH };

const BUILD_HINT = 'run `npm run build` (needs gcc)';

// ELF e_machine values.
const ELF_MACHINE: Record<SeccompArch, number> = { x86_64: 62, aarch64: 183 };

/** The seccomp architecture of this process, or undefined where srt has no filter for it. */
export function hostSeccompArch(): SeccompArch | undefined {
  if (process.platform !== 'linux') return undefined;
  if (process.arch === 'x64') return 'x86_64';
  if (process.arch === 'arm64') return 'aarch64';
  return undefined;
}

export function findInitHelper(path: string = INIT_HELPER_PATH): { path: string; arch: SeccompArch } | { error: string } {
  const arch = hostSeccompArch();
  if (!arch) {
    return { error: `no seccomp filter for ${process.platform}/${process.arch} (Linux x86_64 and aarch64 only)` };
  }
  try {
    if (!statSync(path).isFile()) return { error: `srt-init ${path} is not a file: ${BUILD_HINT}` };
    accessSync(path, constants.X_OK);
  } catch {
    return { error: `srt-init not built (${path}): ${BUILD_HINT}` };
  }
  const header = Buffer.alloc(20);
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    if (readSync(fd, header, 0, header.length, 0) !== header.length) throw new Error('short');
  } catch {
    return { error: `cannot read srt-init ${path}: ${BUILD_HINT}` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const isElf64Le = header.readUInt32BE(0) === 0x7f454c46 && header[4] === 2 && header[5] === 1;
  if (!isElf64Le || header.readUInt16LE(18) !== ELF_MACHINE[arch]) {
    return { error: `srt-init ${path} is not built for ${arch}: ${BUILD_HINT}` };
  }
  return { path, arch };
}

/**
 * TEST ONLY: run without the protected-path supervisor, as on a kernel that lacks it. A global of
 * srt's own process that only a harness loading srt in-process sets (test/fixtures/
 * without-supervisor.cjs): no settings file, environment variable or command-line flag reaches
 * it, so nothing a user or a repository controls can switch the supervisor off.
 */
export const WITHOUT_SUPERVISOR = Symbol.for('srt.testOnly.withoutSupervisor');

/**
 * Why the protected-path supervisor cannot run here (null: it can). It needs seccomp user
 * notification with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19; without it a signal
 * could restart a call already performed) and ADDFD_FLAG_SEND (5.14), and to read the
 * command's memory (not with Yama's ptrace_scope 2 or 3).
 */
export function supervisorUnavailable(kernel: string = release()): string | null {
  if ((globalThis as Record<symbol, unknown>)[WITHOUT_SUPERVISOR] === true) return 'switched off by the test harness';
  const m = /^(\d+)\.(\d+)/.exec(kernel);
  if (!m || Number(m[1]) * 1000 + Number(m[2]) < 5019) return `Linux ${kernel} is older than 5.19`;
  try {
    const scope = Number(readFileSync('/proc/sys/kernel/yama/ptrace_scope', 'utf8').trim());
    if (scope >= 2) return `kernel.yama.ptrace_scope is ${scope}`;
  } catch { /* no Yama */ }
  return null;
}
