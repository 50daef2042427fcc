// Linux dependency checks: bubblewrap present and actually usable. Failures carry a precise,
// actionable message (SPEC §4 "diagnose, don't guess"); the caller exits 125.

import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export class DependencyError extends Error {}

/** First executable `name` on PATH, or null (for the user's command, never for srt's own tools). */
export function findOnPath(name: string, pathEnv = process.env.PATH ?? ''): string | null {
  for (const dir of pathEnv.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch { /* next */ }
  }
  return null;
}

// srt's own tools run OUTSIDE the sandbox, so they come only from root-owned system directories:
// a PATH that starts with a project directory (`npm run` puts node_modules/.bin first) must not be
// able to substitute a fake bwrap or rg and get the command run unsandboxed.
const SYSTEM_DIRS = ['/usr/local/bin', '/usr/bin', '/bin', '/usr/local/sbin', '/usr/sbin', '/sbin'];

export function findSystemTool(name: string): string | null {
  return findOnPath(name, SYSTEM_DIRS.join(delimiter));
}

export function sysctl(name: string): string | null {
  try {
    return readFileSync(`/proc/sys/${name.replace(/\./g, '/')}`, 'utf8').trim();
  } catch {
    return null;
  }
}

export function hasCapSetfcap(): boolean {
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? (BigInt('0x' + m[1]) & (1n << 31n)) !== 0n : false;
  } catch {
    return false;
  }
}

/** Why bubblewrap cannot start a sandbox here, from the sysctls, privileges and bwrap's own error. */
export function diagnose(bwrapError: string, opts: { weakerNested: boolean }): string {
  const isRoot = process.geteuid?.() === 0;
  const detail = bwrapError.trim().split('\n').filter(Boolean).slice(-1)[0] ?? '';
  const said = detail ? ` (bwrap: ${detail.replace(/^bwrap:\s*/, '')})` : '';
  if (sysctl('user.max_user_namespaces') === '0') {
    return `user namespaces are disabled (user.max_user_namespaces=0)${said}; enable them: sudo sysctl -w user.max_user_namespaces=15000`;
  }
  if (!isRoot && sysctl('kernel.unprivileged_userns_clone') === '0') {
    return `unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)${said}; enable them: sudo sysctl -w kernel.unprivileged_userns_clone=1`;
  }
  if (!isRoot && sysctl('kernel.apparmor_restrict_unprivileged_userns') === '1') {
    return `AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)${said}; ` +
      `allow bubblewrap with a profile: write /etc/apparmor.d/bwrap containing ` +
      `'abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }' ` +
      `and run sudo apparmor_parser -r /etc/apparmor.d/bwrap`;
  }
  if (isRoot && !hasCapSetfcap()) {
    return `running as root without CAP_SETFCAP${said}: bubblewrap cannot map uid 0 into its user namespace; ` +
      `run srt as an unprivileged user, or give the container CAP_SETFCAP`;
  }
  if (/proc/i.test(detail) && !opts.weakerNested) {
    return `bubblewrap cannot mount a fresh /proc${said}; inside an unprivileged container set "enableWeakerNestedSandbox": true (weaker isolation)`;
  }
  return `bubblewrap cannot create a sandbox here${said}`;
}

/** The bwrap binary, or a DependencyError saying how to install it. */
export function findBubblewrap(): string {
  const bwrap = findSystemTool('bwrap');
  if (!bwrap) {
    throw new DependencyError('bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap, Fedora: dnf install bubblewrap)');
  }
  return bwrap;
}

/**
 * Why bubblewrap cannot start a sandbox here, found by starting one minimal sandbox with the
 * namespaces srt needs; null when that works. Run only after a launch failed, so a healthy run
 * does not pay for a second sandbox.
 */
export async function diagnoseBubblewrap(bwrap: string, opts: { weakerNested: boolean }): Promise<string | null> {
  const args = [
    '--unshare-user', '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
    '--die-with-parent', '--cap-drop', 'ALL', '--ro-bind', '/', '/',
    ...(opts.weakerNested ? ['--bind', '/proc', '/proc'] : ['--proc', '/proc']),
    '--', 'true',
  ];
  const stderr = await new Promise<string | null>((resolve) => {
    execFile(bwrap, args, { timeout: 10_000 }, (err, _out, errText) => resolve(err ? (errText || String(err.message)) : null));
  });
  return stderr === null ? null : diagnose(stderr, opts);
}
